package collective

import (
	"errors"
	"fmt"

	"github.com/gocoll/gocoll/codec"
)

// ErrMismatch is wrapped by a *MismatchError: two ranks made different
// collective calls where the same call was required.
var ErrMismatch = errors.New("collective mismatch")

// Call is what one rank called, as its frames carry it.
type Call struct {
	Kind  codec.Kind
	DType codec.DType
	Op    codec.OpID
	Count int // elements of the whole operation
	Root  int // -1 for collectives without a root
}

func (c Call) String() string {
	s := fmt.Sprintf("%s(%d × %s", c.Kind, c.Count, c.DType)
	if c.Op != codec.OpNone {
		s += ", " + c.Op.String()
	}
	if c.Root >= 0 {
		s += fmt.Sprintf(", root %d", c.Root)
	}
	return s + ")"
}

func callOf(h *codec.Header) Call {
	return Call{Kind: h.Kind, DType: h.DType, Op: h.Op, Count: int(h.Count), Root: int(h.Root)}
}

// MismatchError reports that this rank and a peer called different
// collectives, or the same one with different counts, element types, ops
// or roots. The rank that sees it aborts the job with it, so that every
// rank fails with this description instead of waiting.
type MismatchError struct {
	Rank, Peer    int  // ranks in the communicator
	Local, Remote Call // what each called
	Detail        string
}

func (e *MismatchError) Error() string {
	s := fmt.Sprintf("rank %d called %s but rank %d called %s", e.Rank, e.Local, e.Peer, e.Remote)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *MismatchError) Unwrap() error { return ErrMismatch }
