package core

import (
	"fmt"

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
// none) and busyContended once another call tried to enter meanwhile.
const busyContended = 1 << 8

// EnterCall marks the start of a blocking collective of kind kind on c. It
// fails, wrapping ErrInvalid, while another blocking collective runs on c;
// that one then fails too, at LeaveCall, since its partners on the other
// ranks may be this goroutine's.
func (c *Comm) EnterCall(kind wire.Kind) error {
	var state uint32
	for {
		if c.busy.CompareAndSwap(0, uint32(kind)) {
			return nil
		}
		// Mark the running call, unless it ended meanwhile.
		if state = c.busy.Load(); state != 0 && c.busy.CompareAndSwap(state, state|busyContended) {
			break
		}
	}
	running := wire.Kind(state & 0xff)
	return fmt.Errorf("%w: %s called while %s runs on this communicator in another goroutine: "+
		"blocking collectives of one communicator must not overlap (use AllreduceAsync, or Split a communicator per goroutine)",
		ErrInvalid, kind, running)
}

// LeaveCall marks the end of the blocking collective that EnterCall
// started. It returns an error, wrapping ErrInvalid, when another
// collective tried to start meanwhile.
func (c *Comm) LeaveCall() error {
	if state := c.busy.Swap(0); state&busyContended != 0 {
		return fmt.Errorf("%w: another collective was called on this communicator in another goroutine while %s ran: "+
			"the ranks may have matched the wrong calls (use AllreduceAsync, or Split a communicator per goroutine)",
			ErrInvalid, wire.Kind(state&0xff))
	}
	return nil
}
