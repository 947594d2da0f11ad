package core

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gocoll/gocoll/internal/wire"
)

// Wildcard receives (AnySource, AnyTag) and probes follow MPI's matching
// rules on top of the per-source inboxes:
//
//   - A message goes to the earliest posted receive that wants it, named
//     or wildcard. Named receives wait in their source's inbox, keyed by
//     (communicator, tag); wildcard receives wait in one list of the
//     endpoint's, in posting order. Every receive posted while a
//     wildcard one waits carries a number from one counter (order), and
//     an arriving message compares the first named receive of its key
//     with the first wildcard receive that wants it. A named receive
//     posted while no wildcard one waits keeps 0: it came before any
//     wildcard receive posted later.
//   - A wildcard receive takes the earliest matching message that has
//     arrived: every early message carries a number from one counter
//     (message.order), in the order its link delivered it, so messages
//     from one source keep their order (non-overtaking), and among
//     sources the one that arrived first wins.
//   - Wildcards match only user traffic of their own communicator: the
//     tag of every collective's message is negative, and the key holds
//     the communicator.
//
// A wildcard receive or probe that names no source looks at the inboxes
// of every member of its communicator at once, holding their mutexes in
// ascending world rank, and takes wild.mu after any inbox's mutex: an
// arrival holds its inbox's mutex and takes wild.mu only when a wildcard
// receive waits (wild.n, which changes only under every member's inbox
// mutex, so an arrival reads it right under its own).

// AnySource and AnyTag are comm.AnySource and comm.AnyTag.
const (
	AnySource = -1
	AnyTag    = -1
)

// wildcards holds an endpoint's posted wildcard receives and the state
// of its blocking probes.
type wildcards struct {
	mu     sync.Mutex
	posted []*Request // wildcard receives, in posting order
	// n is len(posted), and more while a wildcard receive is being
	// posted; it changes only under the mutexes of the inboxes the
	// receive could match from.
	n atomic.Int32
	// order numbers the receives posted while wildcard ones may wait.
	order atomic.Uint64
	// probers counts blocking probes; waiting holds the wake-up
	// channels of those between their looks, which an early message
	// that arrives meanwhile signals and takes out; spare holds the
	// channels of probes that ended, for the next ones, so that a
	// steady probe allocates nothing.
	probers atomic.Int32
	waiting []chan struct{}
	spare   []chan struct{}
}

// waiter is a wake-up channel for a blocking probe: buffered, 1, and
// empty.
func (w *wildcards) waiter() chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.spare); n > 0 {
		c := w.spare[n-1]
		w.spare[n-1] = nil
		w.spare = w.spare[:n-1]
		return c
	}
	return make(chan struct{}, 1)
}

// await has the next early message that arrives signal wake, unless one
// will already.
func (w *wildcards) await(wake chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.waiting, wake) {
		w.waiting = append(w.waiting, wake)
	}
}

// doneWaiting takes back wake, the channel of a probe that ended, for
// the next probe.
func (w *wildcards) doneWaiting(wake chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.Index(w.waiting, wake); i >= 0 {
		w.waiting = slices.Delete(w.waiting, i, i+1)
	}
	select {
	case <-wake: // an arrival signalled it after the probe's last look
	default:
	}
	w.spare = append(w.spare, wake)
}

// arrivals numbers early messages in the order they arrive.
var arrivals atomic.Uint64

// members is what wildcard matching needs to know of a communicator's
// ranks.
type members struct {
	ascending []int         // world ranks, ascending: the inbox lock order
	rankOf    map[int]int32 // world rank → rank in the communicator
}

// memberList returns c's members, computing them at the first wildcard
// receive or probe.
func (c *Comm) memberList() *members {
	if m := c.members.Load(); m != nil {
		return m
	}
	m := &members{ascending: slices.Clone(c.group), rankOf: make(map[int]int32, len(c.group))}
	slices.Sort(m.ascending)
	for r, w := range c.group {
		m.rankOf[w] = int32(r)
	}
	c.members.Store(m)
	return m
}

// wants reports whether the wildcard receive r matches a message from
// world rank src with header h.
func (r *Request) wants(src int, h *wire.Header) bool {
	return h.Comm == r.key.comm &&
		(r.key.tag == AnyTag && h.Tag >= 0 || h.Tag == r.key.tag) &&
		(r.anySource || r.src == src)
}

// takePosted removes and returns the receive that the message from world
// rank src with header h goes to, or nil. The caller holds ib.mu.
func (ep *endpoint) takePosted(ib *inbox, src int, h *wire.Header) *Request {
	k := keyOf(h)
	if ep.wild.n.Load() == 0 {
		r, _ := ib.posted.take(k)
		return r
	}
	named, ok := ib.posted.front(k)
	ep.wild.mu.Lock()
	for i, w := range ep.wild.posted {
		if !w.wants(src, h) {
			continue
		}
		if ok && named.order < w.order {
			break
		}
		ep.wild.remove(i)
		w.matched(src)
		ep.wild.mu.Unlock()
		return w
	}
	ep.wild.mu.Unlock()
	if ok {
		ib.posted.pop(k)
		return named
	}
	return nil
}

// remove takes the i'th posted wildcard receive out. The caller holds
// w.mu and the inbox mutex of every source it could match.
func (w *wildcards) remove(i int) {
	w.posted[i].inWild = false
	w.posted = slices.Delete(w.posted, i, i+1)
	w.n.Add(-1)
}

// matched records where the message of a receive from AnySource comes
// from. A receive that names its source knows it already, and its waiter
// reads it unlocked (polling that source's link).
func (r *Request) matched(src int) {
	if !r.anySource {
		return
	}
	r.src = src
	r.peer = int(r.comm.memberList().rankOf[src])
}

// stampNamed numbers a named receive about to wait in its inbox, when
// wildcard receives may wait beside it. The caller holds the inbox's
// mutex.
func (ep *endpoint) stampNamed(r *Request) {
	r.order = 0
	if ep.wild.n.Load() != 0 {
		r.order = ep.wild.order.Add(1)
	}
}

// lockSources locks the inboxes a receive or probe from world rank src
// (or AnySource) of c looks at, and returns them for unlockSources.
func (ep *endpoint) lockSources(c *Comm, src int) []int {
	if src != AnySource {
		ep.inboxes[src].mu.Lock()
		return nil
	}
	m := c.memberList()
	for _, w := range m.ascending {
		ep.inboxes[w].mu.Lock()
	}
	return m.ascending
}

func (ep *endpoint) unlockSources(src int, locked []int) {
	if src != AnySource {
		ep.inboxes[src].mu.Unlock()
		return
	}
	for _, w := range slices.Backward(locked) {
		ep.inboxes[w].mu.Unlock()
	}
}

// earliest returns the earliest early message from world rank src (or
// any member of c) that a receive of (c, tag) would take, and its
// source. The caller holds the inboxes' mutexes (lockSources).
func (ep *endpoint) earliest(c *Comm, src int, tag int64, locked []int) (*message, int) {
	var best *message
	from := -1
	look := func(w int) {
		if m := firstMessage(&ep.inboxes[w].unexpected, c.id, tag); m != nil && (best == nil || m.order < best.order) {
			best, from = m, w
		}
	}
	if src != AnySource {
		look(src)
		return best, from
	}
	for _, w := range locked {
		look(w)
	}
	return best, from
}

// firstMessage returns the earliest message in qs of communicator comm
// with tag, or with any non-negative tag for AnyTag, or nil.
func firstMessage(qs *queues[*message], comm uint64, tag int64) *message {
	if tag != AnyTag {
		m, _ := qs.front(matchKey{comm, tag})
		return m
	}
	var best *message
	consider := func(k matchKey, s slot[*message]) {
		if k.comm == comm && k.tag >= 0 && (best == nil || s.first.order < best.order) {
			best = s.first
		}
	}
	if qs.hasLone {
		consider(qs.loneKey, qs.lone)
	}
	for k, s := range qs.byKey {
		consider(k, s)
	}
	return best
}

// postWild starts a wildcard receive: from world rank src of c, or from
// any member (AnySource), with tag or any non-negative tag (AnyTag).
func (ep *endpoint) postWild(c *Comm, src, peer int, tag int64, buf []byte, place Placer) *Request {
	r := requestPool.Get().(*Request)
	r.ep, r.comm, r.src, r.peer, r.key, r.buf, r.stamped = ep, c, src, peer, matchKey{comm: c.id, tag: tag}, buf, false
	r.place = place
	r.n, r.err, r.anySource, r.wild = 0, nil, src == AnySource, true
	if err := ep.err(); err != nil {
		r.state = reqDone
		r.err = err
		r.signalDone()
		return r
	}
	locked := ep.lockSources(c, src)
	defer ep.unlockSources(src, locked)
	if m, from := ep.earliest(c, src, tag, locked); m != nil {
		ib := &ep.inboxes[from]
		r.matched(from)
		if !r.fits(&m.hdr) {
			// Leave the message for a receive that can hold it.
			r.truncated(&m.hdr)
			return r
		}
		ib.unexpected.remove(keyOf(&m.hdr), m)
		if m.arrived {
			ep.deliverBuffered(r, m)
		} else {
			r.state = reqReceiving
			m.claim = r
		}
		return r
	}
	if src != AnySource {
		if closed := ep.inboxes[src].closed; closed != nil {
			r.complete(0, nil, closed)
			return r
		}
	}
	ep.wild.mu.Lock()
	r.order = ep.wild.order.Add(1)
	r.state = reqPosted
	r.inWild = true
	ep.wild.posted = append(ep.wild.posted, r)
	ep.wild.n.Add(1)
	ep.wild.mu.Unlock()
	if src != AnySource {
		ep.inboxes[src].poke()
	} else {
		for _, w := range locked {
			ep.inboxes[w].poke()
		}
	}
	return r
}

// withdrawWild removes the wildcard receive r if it still waits, and
// reports whether it did.
func (ep *endpoint) withdrawWild(r *Request) bool {
	ep.wild.mu.Lock()
	defer ep.wild.mu.Unlock()
	if !r.inWild {
		return false
	}
	i := slices.Index(ep.wild.posted, r)
	ep.wild.remove(i)
	r.state = reqDone
	return true
}

// closeWild fails the wildcard receives waiting for world rank src
// alone, which will send nothing more. The caller holds src's inbox
// mutex.
func (ep *endpoint) closeWild(src int, err error) {
	if ep.wild.n.Load() == 0 {
		return
	}
	ep.wild.mu.Lock()
	defer ep.wild.mu.Unlock()
	for i := 0; i < len(ep.wild.posted); {
		r := ep.wild.posted[i]
		if r.anySource || r.src != src {
			i++
			continue
		}
		ep.wild.remove(i)
		r.complete(0, nil, err)
	}
}

// noteArrival wakes the blocking probes, if any wait, for an early
// message that has just arrived. The caller holds the message's inbox
// mutex.
func (ep *endpoint) noteArrival(m *message) {
	m.order = arrivals.Add(1)
	if ep.wild.probers.Load() == 0 {
		return
	}
	ep.wild.mu.Lock()
	for i, wake := range ep.wild.waiting {
		select {
		case wake <- struct{}{}:
		default: // signalled already
		}
		ep.wild.waiting[i] = nil
	}
	ep.wild.waiting = ep.wild.waiting[:0]
	ep.wild.mu.Unlock()
}
