package core

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// Matching follows MPI: a receive names (source, communicator, tag), and
// messages with the same triple are received in the order they were sent.
// Each source rank has an inbox holding the receives posted for it (in
// posting order) and the messages that arrived before any receive wanted
// them (in arrival order). A message that finds its receive posted is read
// straight into the receive's buffer; only the others are buffered.

// Request is a posted receive. Wait for it exactly once; it must not be
// used after Wait returns.
type Request struct {
	ep   *endpoint
	comm *Comm
	src  int // world rank
	peer int // rank in comm, for errors
	key  matchKey
	buf  []byte
	// place, when set, says where the rest of a split message goes
	// (split.go); body is the second part of a split send's payload.
	place Placer
	body  []byte
	// A typed receive (IrecvTyped) takes only whole elements of dt, of
	// size bytes (size 0: any bytes), and hands them to finish, when set.
	dt     kernel.DType
	size   int
	finish func([]byte)

	state reqState // guarded by the inbox's mutex
	n     int
	hdr   wire.Header
	err   error
	// signal says whether the request completed and whether its waiter
	// sleeps on done, which then receives one value when it completes.
	// A waiter that polls reads signal alone: a send and a receive on a
	// channel for every message cost about 40 ns of an 8-byte message's
	// turnaround.
	signal atomic.Uint32
	done   chan struct{}
	// stamped says to note in arrived when the message's header arrives
	// (IrecvHeader).
	stamped bool
	arrived int64

	// Wildcard matching (wild.go). order numbers the receive among
	// those posted while wildcard ones may wait; wild marks a wildcard
	// receive (AnySource or AnyTag), which waits in the endpoint's list
	// while inWild (guarded by wild.mu) rather than in an inbox.
	order     uint64
	wild      bool
	anySource bool
	inWild    bool

	// isSend marks a send started with Isend (p2p.go) to world rank src,
	// of buf, with header hdr.
	isSend bool
	// notify, when set, is where the request signals its completion
	// instead of done: the channel of a WaitAny that waits for it.
	notify chan struct{}
}

// The values of Request.signal.
const (
	sigPending  uint32 = iota
	sigDone            // completed; the waiter has not slept
	sigSleeping        // the waiter sleeps on done, or is about to
)

type reqState uint8

const (
	reqPosted    reqState = iota // waiting in inbox.posted
	reqReceiving                 // matched; the payload is being read into buf
	reqDone                      // completed; done has been signalled
)

type matchKey struct {
	comm uint64
	tag  int64
}

// message is a message that arrived before its receive. Its buffer comes
// from a size-class pool and goes back once the message is received.
type message struct {
	hdr     wire.Header
	buf     []byte // len == hdr.Length
	class   int
	arrived bool     // payload fully read
	claim   *Request // receive that matched the message while it was still arriving
	order   uint64   // when it arrived, among every early message (wild.go)
}

type inbox struct {
	mu         sync.Mutex
	posted     queues[*Request]
	unexpected queues[*message]
	// closed is set once no more messages can come from this source: the
	// peer said goodbye (ErrPeerClosed) or the endpoint failed.
	closed error
	// stalled is non-nil while the reader holds a header it has no room
	// for; posting a receive pokes it so the reader can retry.
	stalled chan struct{}
	// link is the link to this source, read here, once it is connected.
	link transport.Link
	// polled is set when the link is one that a waiting caller may read
	// itself (see poll).
	polled atomic.Pointer[polled]
	// failing is set once this source passed a failure on (a failure
	// frame): it is leaving, and its link's end is no loss.
	failing bool
}

var requestPool = sync.Pool{New: func() any { return &Request{done: make(chan struct{}, 1)} }}

// post registers r and completes it at once when a matching message has
// already arrived (or the source is closed).
func (ib *inbox) post(r *Request) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if m, ok := ib.unexpected.front(r.key); ok {
		if !r.fits(&m.hdr) {
			// Leave the message for a receive that can hold it.
			r.truncated(&m.hdr)
			return
		}
		ib.unexpected.pop(r.key)
		if m.arrived {
			r.ep.deliverBuffered(r, m)
		} else {
			r.state = reqReceiving
			m.claim = r
		}
		return
	}
	if ib.closed != nil {
		r.complete(0, nil, ib.closed)
		return
	}
	r.state = reqPosted
	r.ep.stampNamed(r)
	ib.posted.push(r.key, r)
	ib.poke()
}

// poke lets a reader that has no room for an early message look again
// for a receive. The caller holds ib.mu.
func (ib *inbox) poke() {
	if ib.stalled != nil {
		select {
		case ib.stalled <- struct{}{}:
		default:
		}
	}
}

func keyOf(h *wire.Header) matchKey { return matchKey{h.Comm, h.Tag} }

// withdraw removes r if it is still waiting for a message, and reports
// whether it did. A request that is receiving cannot be withdrawn: its
// buffer is being written.
func (ib *inbox) withdraw(r *Request) bool {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if r.state != reqPosted {
		return false
	}
	ib.posted.remove(r.key, r)
	r.state = reqDone
	return true
}

// close marks the source closed with err and fails every posted receive.
func (ib *inbox) close(err error) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ib.closed == nil {
		ib.closed = err
	}
	ib.posted.drain(func(r *Request) { r.complete(0, nil, ib.closed) })
}

// complete records the outcome and wakes the waiter. The caller holds the
// inbox's mutex or owns r exclusively.
func (r *Request) complete(n int, h *wire.Header, err error) {
	r.n, r.err = n, err
	if h != nil {
		r.hdr = *h
	}
	r.state = reqDone
	r.signalDone()
}

// signalDone marks r completed and wakes its waiter if it sleeps. What
// the request holds must be stored before.
func (r *Request) signalDone() {
	if r.signal.Swap(sigDone) == sigSleeping {
		if r.notify != nil {
			r.notify <- struct{}{}
			return
		}
		r.done <- struct{}{}
	}
}

// completed reports whether r has completed, for a waiter that has not
// slept.
func (r *Request) completed() bool { return r.signal.Load() == sigDone }

// sleep announces that the waiter is about to sleep on done; it reports
// false, and the waiter must not sleep, when r has completed already.
func (r *Request) sleep() bool { return r.signal.CompareAndSwap(sigPending, sigSleeping) }

// Message buffers are pooled by power-of-two size class, so steady traffic
// of any size mix stops allocating once each class has warmed up.
var messagePools [64]sync.Pool

func getMessage(h *wire.Header) *message {
	n := int(h.Length)
	class := 0
	if n > 1 {
		class = bits.Len(uint(n - 1))
	}
	m, _ := messagePools[class].Get().(*message)
	if m == nil {
		m = &message{class: class, buf: make([]byte, 0, 1<<class)}
	}
	m.hdr = *h
	m.buf = m.buf[:n]
	return m
}

func putMessage(m *message) {
	m.arrived, m.claim = false, nil
	messagePools[m.class].Put(m)
}
