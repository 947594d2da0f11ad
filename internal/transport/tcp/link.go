package tcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/internal/handshake"
	"github.com/gocoll/gocoll/internal/transport/internal/linkerr"
	"github.com/gocoll/gocoll/internal/transport/internal/writelock"
	"github.com/gocoll/gocoll/internal/wire"
)

// link is a transport.Link over one TCP connection: a plain one, taken
// out of the netpoller (sock), or one read and written through conn (TLS,
// and plain TCP where links are not polled: see newPollLink).
type link struct {
	conn          net.Conn // a *tls.Conn over a *net.TCPConn, or a *net.TCPConn; nil when polled
	sock          *socket  // polled plain TCP
	local, remote net.Addr
	peer          int

	done      chan struct{} // closed by Close
	closeOnce sync.Once

	// Write side, owned by the holder of wsem.
	wsem      writelock.Lock
	hdr       [wire.HeaderSize]byte
	iov       [3][]byte   // TLS: header, head and body
	bufs      net.Buffers // TLS: slice of iov, consumed by WriteTo
	interrupt func()      // the method value l.interruptWrite, made once
	stopped   chan struct{}
	sockw     *sockWriter // plain TCP
	// Over plain TCP a write watches its context only once it parks
	// (writeBlocked): writeCtx is the context of the write in progress,
	// when it can end, and stopWatch ends the watch once it began.
	// Watching every write would cost each an allocation and a place in
	// the context's list of children, though nearly all never park.
	writeCtx     context.Context
	stopWatch    func() bool
	onWriteBlock func() // see OnWriteBlock

	// Read side, owned by whoever reads: one of the two.
	sockr  *sockReader   // plain TCP
	stream *streamReader // TLS
	wait   func() error  // the method value l.waitMore, made once
	spin   time.Duration // how long waitMore looks before it parks
	yield  bool          // waitMore hands the CPU over between looks
}

var _ transport.Link = (*link)(nil)

// newLink makes the link over c: over plain TCP on Linux a pollLink,
// which takes c's socket out of the netpoller and reads it itself; else
// one that reads through c. c belongs to the link, also when newLink
// fails.
func newLink(c net.Conn, peer, readBuf int) (transport.Link, error) {
	l := &link{
		local:   c.LocalAddr(),
		remote:  c.RemoteAddr(),
		peer:    peer,
		done:    make(chan struct{}),
		wsem:    writelock.New(),
		stopped: make(chan struct{}, 1),
	}
	l.interrupt = l.interruptWrite
	if tc, ok := c.(*net.TCPConn); ok {
		return newPollLink(l, tc, readBuf)
	}
	return l.overStream(c, readBuf), nil
}

// overStream makes l read and write through c.
func (l *link) overStream(c net.Conn, readBuf int) *link {
	l.conn = c
	l.stream = &streamReader{r: bufio.NewReaderSize(c, readBuf)}
	return l
}

// Peer returns the rank at the other end, as proven by the handshake.
func (l *link) Peer() int { return l.peer }

func (l *link) String() string {
	return fmt.Sprintf("tcp link %s->%s (rank %d)", l.local, l.remote, l.peer)
}

// WriteMessage sends h and payload as one message with a single system
// call (sendmsg over plain TCP, a write of net.Buffers over TLS) for
// every MiB. It does not retain h or payload. len(payload) must equal
// h.Length and h must be valid (wire.Header.Validate); otherwise nothing
// is sent, the link stays usable and the error says why.
//
// If ctx is done before the message starts to go out, WriteMessage
// returns ctx.Err() and the link stays usable. If ctx ends while the
// message is partly written, the link is closed and the error wraps both
// ctx.Err() and net.ErrClosed. Any other write error closes the link too
// (the stream can no longer be trusted to be at a message boundary).
//
// Over plain TCP, WriteMessage does not allocate unless the socket is
// full and it must wait for room with a context that can end; over TLS,
// it does not allocate with a context that can never be done
// (ctx.Done() == nil, as for context.Background()).
func (l *link) WriteMessage(ctx context.Context, h wire.Header, payload []byte) error {
	return l.WriteParts(ctx, h, nil, payload)
}

// WriteParts is WriteMessage of the payload head followed by body, which
// go out together, in the same system calls as a whole payload would;
// len(head)+len(body) must equal h.Length. It does not retain head or
// body, and does not allocate where WriteMessage does not.
func (l *link) WriteParts(ctx context.Context, h wire.Header, head, body []byte) error {
	ctxDone, err := l.wsem.Acquire(ctx, "tcp", &h, len(head)+len(body), l.done, nil)
	if err != nil {
		if err == writelock.ErrClosed {
			return l.closedErr("write")
		}
		return err
	}
	err = l.write(ctx, ctxDone != nil, &h, head, body)
	l.wsem.Release()
	return err
}

// write sends one message, whose payload is head and then body; the
// caller holds wsem.
func (l *link) write(ctx context.Context, watch bool, h *wire.Header, head, body []byte) error {
	select {
	case <-l.done:
		return l.closedErr("write")
	default:
	}
	h.MarshalTo(&l.hdr)
	var stop func() bool
	var n int64
	var err error
	if l.sockw != nil {
		if watch {
			l.writeCtx = ctx
		}
		n, err = l.sockw.write(l.hdr[:], head, body)
		stop = l.stopWatch
		l.writeCtx, l.stopWatch = nil, nil
	} else {
		l.iov = [3][]byte{l.hdr[:], head, body}
		l.bufs = l.iov[:]
		if watch {
			stop = context.AfterFunc(ctx, l.interrupt)
		}
		n, err = l.bufs.WriteTo(l.conn)
		l.iov = [3][]byte{} // do not retain head and body
		l.bufs = nil
	}
	if stop != nil && !stop() {
		// ctx ended during the write, and interruptWrite set a past
		// write deadline; wait until it has, so that the reset below
		// cannot be overtaken by it.
		<-l.stopped
		switch {
		case err == nil:
			// The whole message went out before the deadline hit.
			return l.resetWriteDeadline()
		case n == 0 && errors.Is(err, os.ErrDeadlineExceeded):
			// Nothing went out: the stream is still at a boundary.
			if rerr := l.resetWriteDeadline(); rerr != nil {
				return rerr
			}
			return ctx.Err()
		}
		l.Close()
		return &linkerr.Interrupted{Net: "tcp", Cause: ctx.Err(), Sent: n, Total: int64(wire.HeaderSize + len(head) + len(body))}
	}
	if err != nil {
		err = l.ifClosed("write", err)
		l.Close()
		return err
	}
	return nil
}

// interruptWrite runs when the context of a write in progress ends.
func (l *link) interruptWrite() {
	if l.sock != nil {
		l.sock.writable.interrupt()
	} else {
		l.conn.SetWriteDeadline(handshake.Past)
	}
	l.stopped <- struct{}{}
}

func (l *link) resetWriteDeadline() error {
	var err error
	if l.sock != nil {
		err = l.sock.writable.clear()
	} else {
		err = l.conn.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		err = l.ifClosed("write", err)
		l.Close()
		return err
	}
	return nil
}

// ifClosed returns the error of an operation on a closed link in place
// of err, which a closed socket or epoll set gave.
func (l *link) ifClosed(op string, err error) error {
	select {
	case <-l.done:
		return l.closedErr(op)
	default:
		return err
	}
}

// ReadHeader reads the next message's header into h, first skipping what
// is left of the previous message's payload. It returns io.EOF when the
// peer closed the link at a message boundary, io.ErrUnexpectedEOF when
// the stream ended inside a message, an error wrapping wire.ErrBadHeader
// for a header that does not decode (the link is then closed), and an
// error wrapping net.ErrClosed after Close. Other errors are the
// connection's (for example a reset).
func (l *link) ReadHeader(h *wire.Header) error {
	if err := l.checkOpen(); err != nil {
		return err
	}
	var err error
	if l.sockr != nil {
		err = l.sockr.readHeader(h, l.wait)
	} else {
		err = l.stream.readHeader(h)
	}
	return l.readFailed(err)
}

// ReadPayload reads exactly len(p) bytes of the current message's payload
// into p; it does not retain p. Asking for more bytes than remain in the
// message is an error, and then nothing is read. A large payload is read
// straight from the socket into p. It returns io.ErrUnexpectedEOF if the
// stream ends before p is full and an error wrapping net.ErrClosed after
// Close; on error, how much of p was filled is unspecified.
func (l *link) ReadPayload(p []byte) error {
	if err := l.checkOpen(); err != nil {
		return err
	}
	if l.sockr != nil {
		return l.sockr.readPayload(p, l.wait)
	}
	return l.stream.readPayload(p)
}

// readFailed closes the link after a header that does not decode, and
// names it.
func (l *link) readFailed(err error) error {
	if errors.Is(err, wire.ErrBadHeader) {
		l.Close()
		return fmt.Errorf("tcp: link from rank %d (%s): %w; link closed", l.peer, l.remote, err)
	}
	return err
}

// Close closes the connection; it unblocks pending reads and writes on
// both ends. Bytes already written are delivered before the peer reads
// io.EOF. Close is idempotent and returns nil after the first call.
func (l *link) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		switch tc, plain := l.conn.(*net.TCPConn); {
		case l.sock != nil:
			l.sockr.discardUnread()
			err = l.sock.close()
		case plain:
			discardUnread(tc)
			err = l.conn.Close()
		default:
			err = l.conn.Close()
		}
	})
	return err
}

func (l *link) checkOpen() error {
	select {
	case <-l.done:
		return l.closedErr("read")
	default:
		return nil
	}
}

func (l *link) closedErr(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Source: l.local, Addr: l.remote, Err: net.ErrClosed}
}

// midMessage turns the end of a TLS stream inside a message into
// io.ErrUnexpectedEOF. A record cut short by a writer that was
// interrupted or died ends the stream too, but reads as a bad record.
func midMessage(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	if !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: %w", io.ErrUnexpectedEOF, err)
	}
	return err
}
