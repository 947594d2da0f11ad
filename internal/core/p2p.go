package core

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// Status is comm.Status.
type Status struct {
	Source int
	Tag    int
	Bytes  int
}

// checkRecv validates the source and tag of a receive or probe, which
// may be AnySource and AnyTag.
func (c *Comm) checkRecv(op string, src, tag int) error {
	switch {
	case c.closed.Load():
		return c.opError(op, src, int64(tag), ErrClosed)
	case src != AnySource && (src < 0 || src >= len(c.group)):
		return c.opError(op, -1, int64(tag), invalidf("rank %d is outside the communicator of %d ranks (AnySource is %d)", src, len(c.group), AnySource))
	case tag < 0 && tag != AnyTag:
		return c.opError(op, src, int64(tag), invalidf("tag %d is negative; negative tags are reserved for collectives (AnyTag is %d)", tag, AnyTag))
	}
	return nil
}

// post starts a receive from rank src of c (or AnySource) with tag (or
// AnyTag).
func (c *Comm) post(src int, tag int64, b []byte, place Placer) *Request {
	if src == AnySource || tag == AnyTag {
		world := AnySource
		if src != AnySource {
			world = c.group[src]
		}
		return c.ep.postWild(c, world, src, tag, b, place)
	}
	return c.ep.post(c, c.group[src], src, matchKey{comm: c.id, tag: tag}, b, false, place)
}

// Iprobe reports the status of the message that a receive from src with
// tag would take now, without receiving it, and whether there is one.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	if err := c.checkRecv("probe", src, tag); err != nil {
		return Status{}, false, err
	}
	if err := c.ep.err(); err != nil {
		return Status{}, false, c.opError("probe", src, int64(tag), err)
	}
	st, ok := c.look(src, int64(tag))
	return st, ok, nil
}

// look is Iprobe's look at the early messages.
func (c *Comm) look(src int, tag int64) (Status, bool) {
	world := AnySource
	if src != AnySource {
		world = c.group[src]
	}
	locked := c.ep.lockSources(c, world)
	defer c.ep.unlockSources(world, locked)
	m, from := c.ep.earliest(c, world, tag, locked)
	if m == nil {
		return Status{}, false
	}
	return Status{Source: int(c.memberList().rankOf[from]), Tag: int(m.hdr.Tag), Bytes: int(m.hdr.Length)}, true
}

// Probe waits until a receive from src with tag would take a message and
// reports its status, without receiving it. It honours ctx and the
// communicator's timeout as a receive does.
func (c *Comm) Probe(ctx context.Context, src, tag int) (Status, error) {
	if err := c.checkRecv("probe", src, tag); err != nil {
		return Status{}, err
	}
	ep := c.ep
	var timer *time.Timer
	var fired <-chan time.Time
	if ep.opts.timeout > 0 {
		timer = getTimer(ep.opts.timeout)
		defer putTimer(timer)
		fired = timer.C
	}
	ep.parked.Add(1)
	defer ep.parked.Add(-1)
	ep.watchAll()
	ep.wild.probers.Add(1)
	defer ep.wild.probers.Add(-1)
	wake := ep.wild.waiter()
	defer ep.wild.doneWaiting(wake)
	for {
		// Ask to be woken before looking: a message that arrives after
		// the look wakes this probe.
		ep.wild.await(wake)
		if err := ep.err(); err != nil {
			return Status{}, c.opError("probe", src, int64(tag), err)
		}
		if st, ok := c.look(src, int64(tag)); ok {
			return st, nil
		}
		var err error
		select {
		case <-wake:
			continue
		case <-ctx.Done():
			err = context.Cause(ctx)
		case <-ep.failed:
			err = ep.failErr
		case <-fired:
			if src == AnySource {
				err = anyTimeout("a probe", ep.opts.timeout)
			} else {
				err = ep.silent(c.group[src], fmt.Sprintf("no message from rank %d for %v", c.group[src], ep.opts.timeout))
			}
		}
		return Status{}, c.opError("probe", src, int64(tag), err)
	}
}

// Point-to-point sends that return at once (Isend) queue on their
// destination, where one goroutine, started by the destination's first
// Isend and ending when the endpoint fails or closes, sends them in
// order; it waits for more while the queue is empty. A blocking Send to
// a destination with queued sends queues behind them, so that no message
// overtakes one sent before it. The goroutine is kept rather than started
// for each busy spell: a go statement with arguments allocates their
// closure, and steady Isends allocate nothing.

// sendQueue is the queue of one destination's non-blocking sends.
type sendQueue struct {
	mu      sync.Mutex
	queue   []*Request // queued from head on; reused once empty
	head    int
	running bool          // the destination's sending goroutine runs
	work    chan struct{} // buffered, 1: the queue may have sends
	n       atomic.Int32  // queued, or being sent
}

// Isend starts a send of b to rank dst with tag and returns at once; b
// must not be touched until the request's Wait returns.
func (c *Comm) Isend(dst, tag int, b []byte) (*Request, error) {
	return c.IsendTyped(dst, tag, b, kernel.Uint8, len(b))
}

// IsendTyped is Isend of b, the bytes of count elements of type dt, which
// the message's header names (comm.Isend[T]).
func (c *Comm) IsendTyped(dst, tag int, b []byte, dt kernel.DType, count int) (*Request, error) {
	if err := c.check("send", dst, tag); err != nil {
		return nil, err
	}
	h := userHeader(c, tag, b, dt, count)
	return c.isend(dst, &h, b, nil), nil
}

// isend queues the message of header h and payload b, then body, to rank
// dst.
func (c *Comm) isend(dst int, h *wire.Header, b, body []byte) *Request {
	r := requestPool.Get().(*Request)
	r.ep, r.comm, r.src, r.peer, r.buf, r.body, r.isSend = c.ep, c, c.group[dst], dst, b, body, true
	r.key = matchKey{comm: c.id, tag: h.Tag}
	r.n, r.err = 0, nil
	r.hdr = *h
	r.state = reqPosted
	q := &c.ep.peers[r.src].isends
	q.mu.Lock()
	q.queue = append(q.queue, r)
	q.n.Add(1)
	start := !q.running
	if start {
		q.running = true
		if q.work == nil {
			q.work = make(chan struct{}, 1)
		}
	}
	q.mu.Unlock()
	if start {
		go c.ep.sendQueued(r.src, q)
	} else {
		select {
		case q.work <- struct{}{}:
		default: // the goroutine has a wake-up coming already
		}
	}
	return r
}

// userHeader is the header of a point-to-point message of c: payload b,
// count elements of type dt.
func userHeader(c *Comm, tag int, b []byte, dt kernel.DType, count int) wire.Header {
	return wire.Header{Kind: wire.KindSend, DType: dt, Comm: c.id, Tag: int64(tag),
		Count: uint64(count), Length: uint64(len(b)), Root: -1}
}

// sendQueued sends the queue of world rank dst, waiting for more while it
// is empty, until the endpoint fails and the queue is empty: the sends
// queued after a failure fail at once.
func (ep *endpoint) sendQueued(dst int, q *sendQueue) {
	for {
		q.mu.Lock()
		if q.head == len(q.queue) {
			q.queue, q.head = q.queue[:0], 0
			q.mu.Unlock()
			select {
			case <-q.work:
				continue
			case <-ep.failed:
			}
			q.mu.Lock()
			if q.head == len(q.queue) {
				q.running = false // a later Isend starts another
				q.mu.Unlock()
				return
			}
			q.mu.Unlock()
			continue
		}
		r := q.queue[q.head]
		q.queue[q.head] = nil
		q.head++
		r.state = reqReceiving // being sent: no longer withdrawn
		q.mu.Unlock()
		err := ep.send(context.Background(), dst, &r.hdr, r.buf, r.body)
		n := len(r.buf) + len(r.body)
		if err != nil {
			n = 0
		}
		q.mu.Lock()
		q.n.Add(-1)
		r.complete(n, nil, err)
		q.mu.Unlock()
	}
}

// unqueue takes r out of q if it has not begun to be sent, and reports
// whether it did.
func (q *sendQueue) unqueue(r *Request) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.state != reqPosted {
		return false
	}
	for i := q.head; i < len(q.queue); i++ {
		if q.queue[i] == r {
			q.queue = slices.Delete(q.queue, i, i+1)
			q.n.Add(-1)
			r.state = reqDone
			return true
		}
	}
	return false
}

// waitSend is wait for a send started with Isend: until it is sent, ctx
// ends or the endpoint fails. A send that has begun is seen through,
// since its buffer is being read; the send watchdog bounds it.
func (ep *endpoint) waitSend(ctx context.Context, r *Request) (int, error) {
	if r.completed() || !r.sleep() {
		return r.n, r.err
	}
	var cause error
	select {
	case <-r.done:
		return r.n, r.err
	case <-ctx.Done():
		cause = context.Cause(ctx)
	case <-ep.failed:
		cause = ep.failErr
	}
	if ep.peers[r.src].isends.unqueue(r) {
		return 0, cause
	}
	<-r.done
	return r.n, r.err
}

// WaitAny waits until one of reqs completes, finishes it as its Wait
// would and returns its index. Requests that are nil are skipped. When
// ctx ends or the timeout passes first, every request stays pending.
func WaitAny(ctx context.Context, reqs []*Request) (int, Status, error) {
	i, ep := firstDone(reqs)
	if i < 0 && ep != nil {
		i = ep.awaitAny(ctx, reqs)
	}
	if i < 0 {
		if ep == nil {
			return -1, Status{}, invalidf("WaitAny of no requests")
		}
		return -1, Status{}, &OpError{Op: "wait", Peer: -1, Err: ep.anyCause(ctx)}
	}
	st, err := reqs[i].Wait(ctx)
	reqs[i] = nil
	return i, st, err
}

// firstDone returns the index of a completed request of reqs, or -1, and
// the endpoint of the requests.
func firstDone(reqs []*Request) (int, *endpoint) {
	var ep *endpoint
	for i, r := range reqs {
		if r == nil {
			continue
		}
		ep = r.ep
		if r.completed() {
			return i, ep
		}
	}
	return -1, ep
}

// anyCause is why awaitAny gave up: ctx's end, the endpoint's failure,
// or the timeout, which names no rank and so fails only the call.
func (ep *endpoint) anyCause(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if err := ep.err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: none of the requests waited for completed in %v", ErrTimeout, ep.opts.timeout)
}

// awaitAny sleeps until one of reqs completes, and returns its index, or
// -1 when ctx ends, the endpoint fails or the timeout passes. Each
// request completes by sending on one channel they share (notify) once
// the waiter has announced itself; the waiter takes back its
// announcements before it returns, and with them every send still due,
// so that no request signals it later.
func (ep *endpoint) awaitAny(ctx context.Context, reqs []*Request) int {
	notify := make(chan struct{}, len(reqs))
	ep.parked.Add(1)
	defer ep.parked.Add(-1)
	ep.watchAll()
	found := -1
	announced := 0
	for i, r := range reqs {
		if r == nil {
			continue
		}
		r.notify = notify
		if !r.sleep() {
			r.notify = nil
			found = i
			break
		}
		announced = i + 1
	}
	if found < 0 {
		var fired <-chan time.Time
		if ep.opts.timeout > 0 {
			timer := getTimer(ep.opts.timeout)
			defer putTimer(timer)
			fired = timer.C
		}
		select {
		case <-notify:
			notify <- struct{}{} // counted again below
		case <-ctx.Done():
		case <-ep.failed:
		case <-fired:
		}
	}
	due := 0
	for _, r := range reqs[:announced] {
		if r == nil {
			continue
		}
		if !r.signal.CompareAndSwap(sigSleeping, sigPending) {
			due++ // completed: it sends, or has sent, on notify
		}
	}
	for range due {
		<-notify
	}
	for i, r := range reqs[:announced] {
		if r == nil {
			continue
		}
		r.notify = nil
		if found < 0 && r.completed() {
			found = i
		}
	}
	return found
}
