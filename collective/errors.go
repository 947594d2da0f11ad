package collective

import (
	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// ErrMismatch is wrapped by a *MismatchError: two ranks made different
// collective calls where the same call was required.
var ErrMismatch = comm.ErrMismatch

// Call is what one rank called (collective, count, element type, op,
// root, algorithm), as its frames carry it.
type Call = codec.Call

// MismatchError reports that this rank and a peer called different
// collectives, or the same one with different counts, element types, ops,
// roots or algorithms. comm finds most mismatches as frames arrive; the
// collectives find the rest (a message of the wrong length, say). The
// rank that sees one aborts the job with it, so that every rank fails
// with this description instead of waiting.
type MismatchError = comm.MismatchError
