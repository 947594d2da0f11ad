package core

import (
	"fmt"
	"sync/atomic"
	"time"
)

// A send whose write stays blocked for the communicator's timeout fails
// the communicator, blaming the peer that took nothing in all that time:
// a receiver that stopped reading fills the link, and its sender would
// otherwise wait for ever. A timer armed for every send cost 0.13 µs of
// an 8-byte message's 5.3 µs over tcp (a reset and a stop, each taking
// the timer heap's lock). Instead each peer counts the sends to it that
// started and those that finished, two uncontended atomic adds a send,
// and one watchdog per endpoint looks at the counts sendLooks times per
// timeout. A peer whose sends have been in flight with none finished for
// more than sendLooks looks in a row is cut: a stalled send fails between
// the timeout and two looks (an eighth of it) later.

// sendLooks is how many times per timeout the watchdog looks.
const sendLooks = 16

// sendWatch is what the watchdog knows of the sends to one peer.
type sendWatch struct {
	started  atomic.Uint64
	finished atomic.Uint64
	stalled  atomic.Bool // set before the watchdog cuts the link

	// The watchdog's own: finished at its last look, and how many looks
	// in a row found sends in flight and none finished.
	seen  uint64
	still int
}

// begin counts a send as started, end as finished: the sends between
// are in flight.
func (w *sendWatch) begin() { w.started.Add(1) }
func (w *sendWatch) end()   { w.finished.Add(1) }

// watchSends is the watchdog: it runs until the communicator fails or
// closes (which fails it with ErrClosed).
func (ep *endpoint) watchSends() {
	defer ep.wg.Done()
	look := time.NewTicker(ep.opts.timeout / sendLooks)
	defer look.Stop()
	for {
		select {
		case <-ep.failed:
			return
		case <-look.C:
		}
		for dst := range ep.peers {
			w := &ep.peers[dst].sends
			// finished first: a send counted there was counted in
			// started before, so none is taken for in flight that is not.
			finished := w.finished.Load()
			if w.started.Load() == finished || finished != w.seen {
				w.seen, w.still = finished, 0
				continue
			}
			if w.still++; w.still > sendLooks {
				ep.cutStalled(dst)
				return // the communicator has failed
			}
		}
	}
}

// cutStalled fails the communicator for a send to dst that stayed blocked
// for the timeout.
func (ep *endpoint) cutStalled(dst int) {
	p := &ep.peers[dst]
	p.sends.stalled.Store(true)
	// Cut the link first: the blocked writer holds it, and failing the
	// communicator may write to it.
	if o := p.link.Load(); o != nil {
		o.Close()
	}
	ep.silent(dst, fmt.Sprintf("rank %d took in nothing for %v: a send to it stayed blocked", dst, ep.opts.timeout))
}
