package mem

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/internal/linkerr"
	"github.com/gocoll/gocoll/internal/transport/internal/writelock"
	"github.com/gocoll/gocoll/internal/wire"
)

// message is what a writer hands to the reader: the header, and the
// writer's own slices of the payload, head and then body, which the
// reader copies from.
type message struct {
	h          wire.Header
	head, body []byte
}

// pipe is one direction of a link.
type pipe struct {
	msgs     chan message   // unbuffered: a send is a handover to the reader
	consumed chan struct{}  // cap 1: the reader is done with the payload
	wsem     writelock.Lock // serialises writers

	// mu guards the reader's use of the writer's payload: the reader
	// copies under mu, and whoever ends the pipe sets dead under mu, so
	// once a writer has seen the pipe end, the reader no longer touches
	// its slice.
	mu     sync.Mutex
	cur    []byte // unread payload of the current message, in its head or its body
	next   []byte // the body while cur is in the head; nil once cur is the body
	copied int    // payload bytes of the current message already read
	dead   bool   // no payload will move any more
	wgone  bool   // writerGone is closed
	rgone  bool   // readerGone is closed

	writerGone chan struct{} // the writing end closed or the link broke
	readerGone chan struct{} // the reading end closed or the link broke
}

func newPipe() *pipe {
	return &pipe{
		msgs:       make(chan message),
		consumed:   make(chan struct{}, 1),
		wsem:       writelock.New(),
		writerGone: make(chan struct{}),
		readerGone: make(chan struct{}),
	}
}

func (p *pipe) end(writer, reader bool) {
	p.mu.Lock()
	p.endLocked(writer, reader)
	p.mu.Unlock()
}

func (p *pipe) endLocked(writer, reader bool) {
	p.dead = true
	p.cur, p.next = nil, nil
	if writer && !p.wgone {
		p.wgone = true
		close(p.writerGone)
	}
	if reader && !p.rgone {
		p.rgone = true
		close(p.readerGone)
	}
}

// pair is a link: two ends and the pipes between them.
type pair struct {
	n        *Network
	listener string
	ranks    [2]int  // of the dialing and the accepting end
	ends     [2]*end // dialing, accepting

	mu     sync.Mutex
	closed int // ends closed
	broken bool
}

func newPair(n *Network, listener string, dialRank, acceptRank int, dialAddr, acceptAddr addr) *pair {
	ab, ba := newPipe(), newPipe()
	p := &pair{n: n, listener: listener, ranks: [2]int{dialRank, acceptRank}}
	p.ends[0] = &end{p: p, out: ab, in: ba, peer: acceptRank, local: dialAddr, remote: acceptAddr, done: make(chan struct{})}
	p.ends[1] = &end{p: p, out: ba, in: ab, peer: dialRank, local: acceptAddr, remote: dialAddr, done: make(chan struct{})}
	return p
}

// breakLink ends both pipes without closing either end.
func (p *pair) breakLink() {
	p.mu.Lock()
	if p.broken {
		p.mu.Unlock()
		return
	}
	p.broken = true
	p.mu.Unlock()
	for _, e := range p.ends {
		e.out.end(true, true)
	}
	p.n.forget(p)
}

func (p *pair) endClosed() {
	p.mu.Lock()
	p.closed++
	last := p.closed == 2
	p.mu.Unlock()
	if last {
		p.n.forget(p)
	}
}

// end is one end of a link; it implements transport.Link.
type end struct {
	p             *pair
	in, out       *pipe
	peer          int
	local, remote addr

	done      chan struct{} // closed by Close, after both pipes ended
	closeOnce sync.Once

	pending bool // reader: the current message has unread payload
}

var _ transport.Link = (*end)(nil)

// Peer returns the rank at the other end.
func (e *end) Peer() int { return e.peer }

func (e *end) String() string {
	return fmt.Sprintf("mem link %s->%s (rank %d)", e.local, e.remote, e.peer)
}

// WriteMessage hands h and payload to the reader and blocks until the
// reader has read or skipped the whole payload (or, for an empty
// payload, taken the header). The payload is copied once, straight into
// the reader's slice; WriteMessage does not retain h or payload after it
// returns. len(payload) must equal h.Length and h must be valid;
// otherwise nothing is sent and the link stays usable.
//
// If ctx is done before the reader takes the header, WriteMessage
// returns ctx.Err() and the link stays usable. If ctx ends after that but
// before the payload is consumed, the link is closed and the error wraps
// both ctx.Err() and net.ErrClosed. After Close the error wraps
// net.ErrClosed; if the peer closed or died, it wraps syscall.EPIPE.
// WriteMessage does not allocate.
func (e *end) WriteMessage(ctx context.Context, h wire.Header, payload []byte) error {
	return e.WriteParts(ctx, h, nil, payload)
}

// WriteParts is WriteMessage of the payload head followed by body: the
// reader copies from head and then from body, as from one slice;
// len(head)+len(body) must equal h.Length. It does not retain head or
// body.
func (e *end) WriteParts(ctx context.Context, h wire.Header, head, body []byte) error {
	p := e.out
	ctxDone, err := p.wsem.Acquire(ctx, "mem", &h, len(head)+len(body), e.done, p.readerGone)
	switch err {
	case nil:
	case writelock.ErrClosed:
		return e.closedErr("write")
	case writelock.ErrGone:
		return e.pipeErr()
	default:
		return err
	}
	err = e.write(ctx, ctxDone, &h, head, body)
	p.wsem.Release()
	return err
}

// write sends one message, whose payload is head and then body; the
// caller holds wsem.
func (e *end) write(ctx context.Context, ctxDone <-chan struct{}, h *wire.Header, head, body []byte) error {
	p := e.out
	select {
	case <-e.done:
		return e.closedErr("write")
	case <-p.readerGone:
		return e.pipeErr()
	default:
	}
	if ctxDone != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	select {
	case p.msgs <- message{h: *h, head: head, body: body}:
	case <-ctxDone:
		return ctx.Err()
	case <-e.done:
		return e.closedErr("write")
	case <-p.readerGone:
		return e.pipeErr()
	}
	if h.Length == 0 {
		return nil
	}
	select {
	case <-p.consumed:
		return nil
	case <-ctxDone:
		p.mu.Lock()
		select {
		case <-p.consumed:
			// The reader finished just now: the message is delivered.
			p.mu.Unlock()
			return nil
		default:
		}
		// End the pipe under the same lock, so that the reader
		// cannot finish in between and the message counts as lost.
		p.endLocked(true, false)
		sent := wire.HeaderSize + p.copied
		p.mu.Unlock()
		e.Close()
		return &linkerr.Interrupted{Net: "mem", Cause: ctx.Err(), Sent: int64(sent), Total: int64(wire.HeaderSize) + int64(h.Length)}
	case <-e.done:
	case <-p.readerGone:
	}
	// The pipe ended; the reader may have finished first.
	select {
	case <-p.consumed:
		return nil
	default:
	}
	if isClosed(e.done) {
		return e.closedErr("write")
	}
	return e.pipeErr()
}

// ReadHeader waits for the next message and stores its header in h,
// first skipping what is left of the previous message's payload (which
// releases its writer). It returns io.EOF when the peer closed the link
// or died at a message boundary, io.ErrUnexpectedEOF when it did so
// inside a message, and an error wrapping net.ErrClosed after Close.
// ReadHeader does not allocate.
func (e *end) ReadHeader(h *wire.Header) error {
	if isClosed(e.done) {
		return e.closedErr("read")
	}
	p := e.in
	if e.pending {
		e.pending = false
		p.mu.Lock()
		dead := p.dead
		if !dead {
			p.cur, p.next = nil, nil
			p.consumed <- struct{}{}
		}
		p.mu.Unlock()
		if dead {
			return e.deadErr()
		}
	}
	select {
	case m := <-p.msgs:
		if m.h.Length > 0 {
			p.mu.Lock()
			if p.dead {
				p.mu.Unlock()
				return e.deadErr()
			}
			p.cur, p.next = m.head, m.body
			p.copied = 0
			p.mu.Unlock()
			e.pending = true
		}
		*h = m.h
		return nil
	case <-e.done:
		return e.closedErr("read")
	case <-p.writerGone:
		if isClosed(e.done) {
			return e.closedErr("read")
		}
		return io.EOF
	}
}

// ReadPayload copies the next len(p) bytes of the current message's
// payload from the writer's slice into b; it does not retain b. Asking
// for more bytes than remain is an error, and then nothing is read. It
// returns io.ErrUnexpectedEOF if the writer closed or died inside the
// message and an error wrapping net.ErrClosed after Close; nothing is
// read then either.
func (e *end) ReadPayload(b []byte) error {
	if isClosed(e.done) {
		return e.closedErr("read")
	}
	if len(b) == 0 {
		return nil
	}
	if !e.pending {
		return linkerr.Overrun("mem", len(b), 0)
	}
	p := e.in
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return e.deadErr()
	}
	if remain := len(p.cur) + len(p.next); len(b) > remain {
		p.mu.Unlock()
		return linkerr.Overrun("mem", len(b), uint64(remain))
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	if len(p.cur) == 0 {
		// cur is used up: go on in the body, unless cur was the body.
		k := copy(b[n:], p.next)
		p.cur, p.next = p.next[k:], nil
		n += k
	}
	p.copied += n
	if len(p.cur) == 0 {
		p.cur = nil
		e.pending = false
		p.consumed <- struct{}{}
	}
	p.mu.Unlock()
	return nil
}

// Close closes this end. The peer's reads then return io.EOF (or
// io.ErrUnexpectedEOF inside a message) and its writes fail; pending
// calls on this end return errors wrapping net.ErrClosed. Every message
// whose WriteMessage returned nil has been read, since a mem write waits
// for its reader. Close is idempotent.
func (e *end) Close() error {
	e.closeOnce.Do(func() {
		// End the pipes before closing done: a writer that sees done
		// must be sure that the reader no longer copies from it.
		e.out.end(true, false)
		e.in.end(false, true)
		close(e.done)
		e.p.endClosed()
	})
	return nil
}

func (e *end) closedErr(op string) error {
	return &net.OpError{Op: op, Net: "mem", Source: e.local, Addr: e.remote, Err: net.ErrClosed}
}

// pipeErr is the error of a write whose reader is gone, like TCP's.
func (e *end) pipeErr() error {
	return &net.OpError{Op: "write", Net: "mem", Source: e.local, Addr: e.remote, Err: syscall.EPIPE}
}

// deadErr is the error of a read inside a message whose pipe ended.
func (e *end) deadErr() error {
	if isClosed(e.done) {
		return e.closedErr("read")
	}
	return io.ErrUnexpectedEOF
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
