package tcp

import (
	"bufio"
	"context"
	"crypto/tls"
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

// link is a transport.Link over one TCP connection.
type link struct {
	conn net.Conn // a *net.TCPConn, or a *tls.Conn over one
	peer int

	done      chan struct{} // closed by Close
	closeOnce sync.Once

	// Write side, owned by the holder of wsem.
	wsem      writelock.Lock
	hdr       [wire.HeaderSize]byte
	iov       [2][]byte   // header and payload
	bufs      net.Buffers // slice of iov, consumed by WriteTo
	interrupt func()      // the method value l.interruptWrite, made once
	stopped   chan struct{}

	// Read side, owned by the reading goroutine.
	r         *bufio.Reader
	rhdr      [wire.HeaderSize]byte
	remaining uint64 // unread payload bytes of the current message
}

var _ transport.Link = (*link)(nil)

func newLink(c net.Conn, peer, readBuf int) *link {
	l := &link{
		conn:    c,
		peer:    peer,
		done:    make(chan struct{}),
		wsem:    writelock.New(),
		stopped: make(chan struct{}, 1),
		r:       bufio.NewReaderSize(c, readBuf),
	}
	l.interrupt = l.interruptWrite
	return l
}

// Peer returns the rank at the other end, as proven by the handshake.
func (l *link) Peer() int { return l.peer }

func (l *link) String() string {
	return fmt.Sprintf("tcp link %s->%s (rank %d)", l.conn.LocalAddr(), l.conn.RemoteAddr(), l.peer)
}

// WriteMessage sends h and payload as one message with a single writev
// system call. It does not retain h or payload. len(payload) must equal
// h.Length and h must be valid (wire.Header.Validate); otherwise nothing
// is sent, the link stays usable and the error says why.
//
// If ctx is done before the message starts to go out, WriteMessage
// returns ctx.Err() and the link stays usable. If ctx ends while the
// message is partly written, the link is closed and the error wraps both
// ctx.Err() and net.ErrClosed. Any other write error closes the link too
// (the stream can no longer be trusted to be at a message boundary).
//
// With a context that can never be done (ctx.Done() == nil, as for
// context.Background()), WriteMessage does not allocate.
func (l *link) WriteMessage(ctx context.Context, h wire.Header, payload []byte) error {
	ctxDone, err := l.wsem.Acquire(ctx, "tcp", &h, payload, l.done, nil)
	if err != nil {
		if err == writelock.ErrClosed {
			return l.closedErr("write")
		}
		return err
	}
	err = l.write(ctx, ctxDone != nil, &h, payload)
	l.wsem.Release()
	return err
}

// write sends one message; the caller holds wsem.
func (l *link) write(ctx context.Context, watch bool, h *wire.Header, payload []byte) error {
	select {
	case <-l.done:
		return l.closedErr("write")
	default:
	}
	h.MarshalTo(&l.hdr)
	l.iov[0] = l.hdr[:]
	l.iov[1] = payload
	l.bufs = l.iov[:]
	var stop func() bool
	if watch {
		stop = context.AfterFunc(ctx, l.interrupt)
	}
	n, err := l.bufs.WriteTo(l.conn)
	l.iov[1] = nil // do not retain payload
	l.bufs = nil
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
		return &linkerr.Interrupted{Net: "tcp", Cause: ctx.Err(), Sent: n, Total: int64(wire.HeaderSize + len(payload))}
	}
	if err != nil {
		l.Close()
		return err
	}
	return nil
}

// interruptWrite runs when the context of a write in progress ends.
func (l *link) interruptWrite() {
	l.conn.SetWriteDeadline(handshake.Past)
	l.stopped <- struct{}{}
}

func (l *link) resetWriteDeadline() error {
	if err := l.conn.SetWriteDeadline(time.Time{}); err != nil {
		l.Close()
		return err
	}
	return nil
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
	for l.remaining > 0 {
		// In steps that fit an int on every platform.
		n, err := l.r.Discard(int(min(l.remaining, 1<<30)))
		l.remaining -= uint64(n)
		if err != nil {
			return l.midMessage(err)
		}
	}
	if _, err := io.ReadFull(l.r, l.rhdr[:]); err != nil {
		return err
	}
	if err := h.Unmarshal(&l.rhdr); err != nil {
		l.Close()
		return fmt.Errorf("tcp: link from rank %d (%s): %w; link closed", l.peer, l.conn.RemoteAddr(), err)
	}
	l.remaining = h.Length
	return nil
}

// ReadPayload reads exactly len(p) bytes of the current message's payload
// into p; it does not retain p. Asking for more bytes than remain in the
// message is an error, and then nothing is read. A payload larger than
// the read buffer is read straight from the socket into p. It returns
// io.ErrUnexpectedEOF if the stream ends before p is full and an error
// wrapping net.ErrClosed after Close; on error, how much of p was filled
// is unspecified.
func (l *link) ReadPayload(p []byte) error {
	if err := l.checkOpen(); err != nil {
		return err
	}
	if uint64(len(p)) > l.remaining {
		return linkerr.Overrun("tcp", len(p), l.remaining)
	}
	if len(p) == 0 {
		return nil
	}
	n, err := io.ReadFull(l.r, p)
	l.remaining -= uint64(n)
	if err != nil {
		return l.midMessage(err)
	}
	return nil
}

// Close closes the connection; it unblocks pending reads and writes on
// both ends. Bytes already written are delivered before the peer reads
// io.EOF. Close is idempotent and returns nil after the first call.
func (l *link) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.conn.Close()
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
	return &net.OpError{Op: op, Net: "tcp", Source: l.conn.LocalAddr(), Addr: l.conn.RemoteAddr(), Err: net.ErrClosed}
}

// midMessage turns the end of the stream inside a message into
// io.ErrUnexpectedEOF. Over TLS, a record cut short by a writer that was
// interrupted or died ends the stream too, but reads as a bad record.
func (l *link) midMessage(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	if _, isTLS := l.conn.(*tls.Conn); isTLS && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: %w", io.ErrUnexpectedEOF, err)
	}
	return err
}
