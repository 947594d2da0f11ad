package core

import (
	"fmt"
	"runtime"

	"github.com/gocoll/gocoll/internal/wire"
)

// Ranks match their collectives by the order in which each issues them.
// Two goroutines that issue blocking collectives on one communicator at
// once give that order to the scheduler, so one rank's first call may meet
// another rank's second, and both return someone else's data. EnterCall
// and LeaveCall bracket every blocking collective so that such overlap
// is an error instead. AllreduceAsync takes its place in the order when
// it is issued and does not enter.
//
// Comm.busy holds the kind of the running call in its low byte (0 for
// none, busyStats while Stats reads the counts), busyContended once
// another call tried to enter meanwhile, and from bit lastKindShift the
// kind of the last call that ran: the flight recorder's only trace of a
// call through a segment's fast lines that never waited long enough to
// be recorded (Segment.BeginLines).
const (
	busyContended = 1 << 8
	lastKindShift = 16
	// busyStats says that Stats holds the communicator: not a call's
	// kind, which is below wire.NumKinds.
	busyStats = 0xff
)

// EnterCall marks the start of a blocking collective of kind kind on c. It
// fails, wrapping ErrInvalid, while another blocking collective runs on c;
// that one then fails too, at LeaveCall, since its partners on the other
// ranks may be this goroutine's.
func (c *Comm) EnterCall(kind wire.Kind) error {
	var state uint32
	for {
		state = c.busy.Load()
		switch state & 0xff {
		case 0:
			if c.busy.CompareAndSwap(state, state|uint32(kind)) {
				return nil
			}
			continue
		case busyStats:
			runtime.Gosched() // Stats reads the counts for a moment
			continue
		}
		// Mark the running call, unless it ended meanwhile.
		if c.busy.CompareAndSwap(state, state|busyContended) {
			break
		}
	}
	running := wire.Kind(state & 0xff)
	return fmt.Errorf("%w: %s called while %s runs on this communicator in another goroutine: "+
		"blocking collectives of one communicator must not overlap (use AllreduceAsync, or Split a communicator per goroutine)",
		ErrInvalid, kind, running)
}

// holdForStats takes c for Stats while no blocking call runs, waiting
// for another Stats, and returns the word to restore when done (Stats
// then reads the rows' pending counts); false when a call runs.
func (c *Comm) holdForStats() (uint32, bool) {
	for {
		state := c.busy.Load()
		switch state & 0xff {
		case 0:
			if c.busy.CompareAndSwap(state, state|busyStats) {
				return state, true
			}
		case busyStats:
			runtime.Gosched()
		default:
			return 0, false // a call runs, and may run for long
		}
	}
}

// LeaveCall marks the end of the blocking collective of kind kind that
// EnterCall started. It returns an error, wrapping ErrInvalid, when
// another collective tried to start meanwhile.
func (c *Comm) LeaveCall(kind wire.Kind) error {
	if state := c.busy.Swap(uint32(kind) << lastKindShift); state&busyContended != 0 {
		return fmt.Errorf("%w: another collective was called on this communicator in another goroutine while %s ran: "+
			"the ranks may have matched the wrong calls (use AllreduceAsync, or Split a communicator per goroutine)",
			ErrInvalid, wire.Kind(state&0xff))
	}
	return nil
}
