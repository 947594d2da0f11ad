package rendezvous

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Heartbeats find ranks that stopped without closing their sockets: a
// frozen process (SIGSTOP, a debugger, swapping), a host that lost power,
// a network partition. A client that started its heartbeat sends a beat
// every period/beatsPerPeriod, and the store answers each with a pulse.
// Either side that hears nothing from the other for a whole period
// declares it lost: the store tells every other rank that the client is
// lost, the client that rank 0 is. Beats run on goroutines of their own,
// so a rank that computes for hours between calls keeps beating.
const (
	// MinHeartbeat and MaxHeartbeat bound the heartbeat period.
	MinHeartbeat = 100 * time.Millisecond
	MaxHeartbeat = time.Hour

	beatsPerPeriod = 4
)

// beatState is one session's heartbeat as the store sees it.
type beatState struct {
	period atomic.Int64 // nanoseconds; 0 until the client's first beat
	heard  atomic.Int64 // when the last frame arrived, in Unix nanoseconds
}

// heardNow records that a frame arrived and returns how long the
// connection may now stay silent: zero when the client does not beat.
func (b *beatState) heardNow(now time.Time) time.Duration {
	b.heard.Store(now.UnixNano())
	return time.Duration(b.period.Load())
}

// silentSince reports whether the client beats and was last heard before t.
func (b *beatState) silentSince(t time.Time) bool {
	p := b.period.Load()
	return p > 0 && b.heard.Load() < t.UnixNano()
}

// silence describes a peer that missed its heartbeat.
func silence(who string, period time.Duration) error {
	return fmt.Errorf("%s sent nothing for %v, its heartbeat period: frozen, overloaded or cut off by the network", who, period)
}

// StartHeartbeat makes the client beat every period/4 and end like a
// broken connection (a Lost event about rank 0, calls failing with
// ErrLost) when the store sends nothing for period. The store, for its
// part, reports this rank lost when its beats stop for period. The period
// must lie between MinHeartbeat and MaxHeartbeat. An in-process client
// has no heartbeat: its store is in the same process, and StartHeartbeat
// does nothing.
func (c *Client) StartHeartbeat(period time.Duration) error {
	if period < MinHeartbeat || period > MaxHeartbeat {
		return invalidf("a heartbeat period of %v (allowed %v to %v)", period, MinHeartbeat, MaxHeartbeat)
	}
	if c.wc == nil {
		return nil
	}
	if !c.period.CompareAndSwap(0, int64(period)) {
		return invalidf("rank %d: the heartbeat was started already", c.rank)
	}
	if err := c.wc.c.SetReadDeadline(time.Now().Add(period)); err != nil {
		return fmt.Errorf("rendezvous: rank %d: starting the heartbeat: %w", c.rank, err)
	}
	c.beats.Add(1)
	go c.beat(period)
	return nil
}

// beat sends the client's beats until the connection ends.
func (c *Client) beat(period time.Duration) {
	defer c.beats.Done()
	frame := encodeRequest(request{typ: tBeat, period: period})
	t := time.NewTicker(period / beatsPerPeriod)
	defer t.Stop()
	for c.wc.send(frame) {
		select {
		case <-t.C:
		case <-c.readerDone:
			return
		}
	}
}

// extendDeadline gives the store another heartbeat period to say
// something, once it has; it returns the period, zero without heartbeat.
func (c *Client) extendDeadline() time.Duration {
	p := time.Duration(c.period.Load())
	if p > 0 {
		_ = c.wc.c.SetReadDeadline(time.Now().Add(p))
	}
	return p
}
