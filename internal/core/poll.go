package core

import (
	"errors"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// Waiting for a message by parking costs a wake-up twice over: the
// netpoller wakes the link's reading goroutine, which then wakes the
// caller, and when the process had nothing else to do each wake-up is a
// parked thread to start again (about 16 context switches per small
// collective call over tcp, against Open MPI's 0.3). So a caller that
// waits for a message first spins for a short window (WithSpin), taking
// messages off the link it waits on itself, without parking, while the
// link's reading goroutine is idle. Only a wait that outlasts the window
// parks. Where the host's ranks outnumber its CPUs, the spinning caller
// hands its CPU to another process between looks (transport.YieldCPU).
//
// Whoever reads a polled link holds its mutex: the reading goroutine
// (pollLoop) while it takes messages, which it does only after the link
// said bytes arrived, or a spinning caller (poll), which tries the mutex
// and parks at once if the reading goroutine holds it. A caller takes only
// messages that have arrived whole, which it then reads without blocking.
// It leaves to the reading goroutine failure frames and early messages
// with no room yet, waking it, and messages that are still arriving and
// larger than the link buffers, whose arriving bytes wake it.

// A polled link is watched (its reading goroutine parked in WaitReadable,
// which arrivals wake) except while a caller spins on it and no caller of
// the endpoint is parked: once an arrival wakes the reading goroutine and
// it finds a caller spinning, it rests instead (rest), without touching
// the link, and arrivals wake nobody, as they should, since the caller
// takes them. Waking the reading goroutine for every message a caller
// takes costs a thread's wake-up on every message, and with it the
// caller's CPU or the peer's; and a reading goroutine that took the link
// would send the spinning caller to park. It stays at rest after the
// caller is done, so that back-to-back calls do not pay to wake it, until
// some goroutine of the endpoint waits for the links to be read
// (watchAll): a caller that parks, a writer that found a link full. A
// rest also ends after restMax, so that what arrives between calls (a
// failure, a goodbye, the end of a link) is seen without a call.

// restMax bounds a reading goroutine's rest. Tests that must see a rest
// end for its cause, not for its time, stretch it.
var restMax = 2 * time.Millisecond

// errStall is receive's answer, when it must not wait, for an early
// message it has no room for.
var errStall = errors.New("no room for an early message")

// polled is an inbound link that a waiting caller may read itself.
type polled struct {
	mu   sync.Mutex // the reading side
	link transport.Poller

	spinners atomic.Int32  // callers in poll
	resting  atomic.Bool   // the reading goroutine rests, or is about to
	watch    chan struct{} // ends a rest; buffered, 1

	// Guarded by mu.
	hdr        wire.Header // the header in hand
	calls      callCache
	pending    wire.Header // read and checked; its payload waits for room
	hasPending bool
	err        error // the link's failure, found by a caller
}

// pollLoop is readLoop for a polled link: it waits without holding the
// reading side, until bytes arrive or a caller wakes it, then takes every
// message that has begun to arrive, blocking for the rest of each.
func (ep *endpoint) pollLoop(src int, p *polled) {
	defer ep.wg.Done()
	pprof.SetGoroutineLabels(linkLabels)
	ib := &ep.inboxes[src]
	rest := time.NewTimer(restMax)
	defer rest.Stop()
	for {
		if ep.restful(p) {
			ep.rest(p, rest)
		}
		p.mu.Lock()
		err := p.err
		if err == nil {
			_, err = ep.drain(src, ib, p, true)
		}
		p.mu.Unlock()
		if err == nil && ep.restful(p) {
			continue
		}
		if err == nil {
			if err = p.link.WaitReadable(); err != nil {
				// A caller that found the link broken stored the cause.
				p.mu.Lock()
				if p.err != nil {
					err = p.err
				}
				p.mu.Unlock()
			}
		}
		if err != nil {
			ep.linkDown(src, ib, p.link, err)
			return
		}
	}
}

// restful reports whether p's reading goroutine may rest: a caller spins
// on p, and no caller is parked.
func (ep *endpoint) restful(p *polled) bool {
	return p.spinners.Load() > 0 && ep.parked.Load() == 0
}

// rest waits, not watching p's link, until watchAll asks for it, restMax
// passes or the endpoint fails (which closes the links). A caller that
// parks between the reading goroutine's two looks either finds resting
// set, and asks, or is seen parked by the second look.
func (ep *endpoint) rest(p *polled, timer *time.Timer) {
	p.resting.Store(true)
	if ep.restful(p) {
		timer.Reset(restMax)
		select {
		case <-p.watch:
		case <-timer.C:
		case <-ep.failed:
		}
		timer.Stop()
	}
	p.resting.Store(false)
}

// watchAll ends the rest of every polled link's reading goroutine: the
// caller is about to wait for what some link brings, and whatever arrives
// must be read while it waits (a writer that a full link holds up, a
// message whose sender waits to send another). A caller that parks counts
// itself in ep.parked first, so that no rest begins until it is done.
func (ep *endpoint) watchAll() {
	for i := range ep.inboxes {
		if p := ep.inboxes[i].polled.Load(); p != nil && p.resting.Load() {
			select {
			case p.watch <- struct{}{}:
			default:
			}
		}
	}
}

// A handOff says whether, and why, a caller left a message to the link's
// reading goroutine.
type handOff uint8

const (
	kept handOff = iota
	// arriving: a message larger than the link buffers, whose rest is in
	// the socket or on its way; its bytes wake the reading goroutine.
	arriving
	// buffered: a failure frame, or an early message without room, read
	// off the socket already; nothing more need arrive, so the caller
	// wakes the reading goroutine (Wake, which costs an allocation).
	buffered
)

// drain takes the messages of src's link that have arrived, the holder of
// p.mu reading. With block (the reading goroutine), it takes every message
// whose header has arrived and waits for the rest of its payload and for
// room. Without (a caller), it takes only whole messages and those
// streaming in (transport.Streaming), whose copies out then overlap the
// writer's copies in (two processes over shared memory, 64 KiB ping-pong
// 20.6-21.0 µs a round trip waiting for whole messages, 15.9-16.2 taking
// them as they stream in 16 KiB chunks, 2026-11-29), and says when it left
// one for the reading goroutine.
func (ep *endpoint) drain(src int, ib *inbox, p *polled, block bool) (handOff, error) {
	if p.hasPending {
		if err := ep.receive(src, ib, p.link, &p.pending, block); err != nil {
			if err == errStall {
				return buffered, nil
			}
			return kept, err
		}
		p.hasPending = false
	}
	h := &p.hdr
	for {
		arrival, err := p.link.Poll(h)
		if err != nil {
			return kept, err
		}
		switch {
		case arrival == transport.Nothing:
			return kept, nil
		case block:
		case arrival == transport.Partial:
			return kept, nil // a caller looks again
		case h.Flags&wire.FlagAbort != 0:
			// A failure frame leads to slow work (passing the failure
			// on) that is not the caller's.
			return buffered, nil
		case arrival == transport.Large:
			return arriving, nil
		}
		if err := p.link.ReadHeader(h); err != nil {
			return kept, err
		}
		if err := ep.handle(src, ib, p.link, h, &p.calls, block); err != nil {
			if err == errStall {
				p.pending, p.hasPending = *h, true
				return buffered, nil
			}
			return kept, err
		}
		if !block && !p.link.Holds() {
			// A caller looks at the socket again only on its next round,
			// once it has seen whether this message was the one it waits
			// for: the look would find nothing more nearly always, and a
			// system call on the way out of every receive is about half a
			// microsecond of its latency. Bytes that arrive meanwhile
			// wake the reading goroutine, or the caller's next round
			// takes them.
			return kept, nil
		}
	}
}

// A spinning caller (poll) reads the clock once every clockEvery looks
// and lets the process's other goroutines run (runtime.Gosched) at most
// once every yieldAfter. A look at a shared-memory link costs tens of
// nanoseconds and a clock read about as much; a Gosched, which takes the
// scheduler's lock and looks at its timers and queues, costs hundreds,
// and a message that arrives meanwhile waits for it to end. Yielding
// after every look, two processes' 8 B ping-pong over shared memory
// spent a third of its time in the scheduler (pprof) and took 2.06-2.08
// µs a round trip at the median; so, 1.81-1.82, the means 2.35-2.40 and
// 2.01-2.03 (a Zen 5 VM, three alternating runs, 2026-11-30). A look at
// a tcp socket is a system call, so there the clock is read every few
// microseconds, which bounds how far a wait overruns its spin window.
const (
	clockEvery = 8
	yieldAfter = time.Microsecond
)

// poll spins for up to the spin window waiting for r, taking the
// messages of r's source off its link while the link's reading goroutine
// is idle. It reports whether r completed.
func (ep *endpoint) poll(r *Request, p *polled) bool {
	p.spinners.Add(1)
	defer p.spinners.Add(-1)
	ib := &ep.inboxes[r.src]
	var until, yielded time.Time
	for looks := 1; ; looks++ {
		if !p.mu.TryLock() {
			return false // the reading goroutine is at work: let it run
		}
		left, err := ep.drain(r.src, ib, p, false)
		if err != nil && p.err == nil {
			p.err = err
		}
		p.mu.Unlock()
		if left == buffered || err != nil {
			p.link.Wake()
		}
		if r.completed() {
			return true
		}
		if left != kept || err != nil {
			return false
		}
		if ep.opts.yield {
			transport.YieldCPU()
		}
		if looks%clockEvery != 0 {
			continue
		}
		now := time.Now()
		if until.IsZero() {
			until, yielded = now.Add(ep.opts.spin), now
		} else if now.After(until) {
			return false
		}
		if now.Sub(yielded) < yieldAfter {
			continue
		}
		// Let the process's other goroutines run between looks: the
		// one that sends what this caller waits for may be among them
		// (ranks of one process, a program's own goroutines), and with
		// GOMAXPROCS=1 it would otherwise wait out the spin window.
		runtime.Gosched()
		yielded = now
	}
}
