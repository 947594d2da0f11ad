package comm

import "github.com/gocoll/gocoll/internal/core"

// Sentinel errors. Test for them with errors.Is; the errors that calls
// return wrap them with the operation, the ranks and the cause.
var (
	// ErrClosed is returned by calls on a communicator after Close.
	ErrClosed = core.ErrClosed
	// ErrPeerLost is wrapped by a *PeerError: a rank died or its link broke.
	ErrPeerLost = core.ErrPeerLost
	// ErrPeerClosed means the peer closed its communicator cleanly, so the
	// message waited for will never come.
	ErrPeerClosed = core.ErrPeerClosed
	// ErrAborted is wrapped by an *AbortError: some rank called Abort.
	ErrAborted = core.ErrAborted
	// ErrMismatch is wrapped by a *MismatchError: two ranks made different
	// calls for the same operation of a communicator.
	ErrMismatch = core.ErrMismatch
	// ErrTruncated is wrapped by a *TruncateError: a message is longer than
	// the buffer of the receive it matched.
	ErrTruncated = core.ErrTruncated
	// ErrInvalid marks a call with bad arguments (a rank out of range, a
	// reserved tag, a bad option): the caller's fault, not the job's. It
	// is codec.ErrInvalid, so one errors.Is check covers every layer.
	ErrInvalid = core.ErrInvalid
	// ErrRefused is wrapped when a handshake is refused: a wrong secret,
	// another job's peer, a rank that is already taken.
	ErrRefused = core.ErrRefused
	// ErrTimeout is wrapped when the communicator's timeout (WithTimeout)
	// passes. It matches context.DeadlineExceeded as well, so code that
	// handles context deadlines handles it too.
	ErrTimeout = core.ErrTimeout
)

// The error types are the engine's, under the names users know them by.

// OpError is the error type of every communicator call. It names the
// call (Op: "send", "recv", "split", "init", ...), the communicator
// (Comm, its id), this rank (Rank, -1 before it is known), the other rank
// (Peer, -1 if none) and the tag of a point-to-point call (Tag), like
// net.OpError names the operation and both addresses; Err is the cause.
// Its Timeout method reports whether a deadline passed.
type OpError = core.OpError

// PeerError reports ranks that died, froze or became unreachable. Rank is
// the first rank found lost; Ranks lists every rank found lost with it,
// Rank included, in increasing order: the ranks of a host that went down
// all fail within moments, and the error names them all (see LossSettle).
// Ranks are ranks in the job (the world communicator). Err is the cause
// as this rank saw it for Rank: io.EOF, a reset, a missed heartbeat.
type PeerError = core.PeerError

// AbortError reports that a rank aborted the job (Abort, or a mismatch or
// stuck write it found). Rank is the rank in the job (the world
// communicator), Reason the text it gave. Err is the cause on the rank
// that aborted; the others, which learn only the Reason, have ErrMismatch
// there for an abort because of a mismatch and nil otherwise.
type AbortError = core.AbortError

// MismatchError reports that two ranks of a communicator made different
// calls for the same operation (their n-th collective on it): different
// collectives, or the same one with different counts, element types, ops,
// roots or algorithms. Rank and Peer are ranks in the communicator (Rank
// usually the one that found it), Local and Remote what each called, and
// Detail says more. The rank that finds it aborts the job with it, so
// that every rank fails with this description instead of waiting.
type MismatchError = core.MismatchError

// TruncateError reports a message of Len payload bytes that is longer
// than the Cap bytes of the receive buffer it matched. The message is not
// consumed: a later receive with a buffer large enough gets it.
type TruncateError = core.TruncateError
