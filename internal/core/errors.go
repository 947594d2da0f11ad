package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/failreport"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// Sentinel errors. Test for them with errors.Is; the errors that calls
// return wrap them with the operation, the ranks and the cause.
var (
	// ErrClosed is returned by calls on a communicator after Close.
	ErrClosed = errors.New("communicator closed")
	// ErrPeerLost is wrapped by a *PeerError: a rank died or its link broke.
	ErrPeerLost = errors.New("peer lost")
	// ErrPeerClosed means the peer closed its communicator cleanly, so the
	// message waited for will never come.
	ErrPeerClosed = errors.New("peer closed its communicator")
	// ErrAborted is wrapped by an *AbortError: some rank called Abort.
	ErrAborted = errors.New("job aborted")
	// ErrMismatch is wrapped by a *MismatchError: two ranks made different
	// calls for the same operation of a communicator.
	ErrMismatch = errors.New("collective mismatch")
	// ErrTruncated is wrapped by a *TruncateError: a message is longer than
	// the buffer of the receive it matched.
	ErrTruncated = errors.New("message truncated")
	// ErrInvalid marks a call with bad arguments (a rank out of range, a
	// reserved tag): the caller's fault, not the job's. It is
	// codec.ErrInvalid, so one errors.Is check covers every layer.
	ErrInvalid = codec.ErrInvalid
	// ErrRefused is wrapped when a handshake is refused: a wrong secret,
	// another job's peer, a rank that is already taken.
	ErrRefused = transport.ErrRefused
	// ErrTimeout is wrapped when the communicator's timeout (WithTimeout)
	// passes. It matches context.DeadlineExceeded as well, so code that
	// handles context deadlines handles it too.
	ErrTimeout error = timeoutError{}
)

type timeoutError struct{}

func (timeoutError) Error() string   { return "communicator timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
func (timeoutError) Is(target error) bool {
	return target == context.DeadlineExceeded
}

// OpError is the error type of every communicator call. It names the call,
// the communicator, this rank, the peer and the tag, like net.OpError names
// the operation and both addresses.
type OpError struct {
	Op   string // "send", "recv", "split", "init", ...
	Comm uint64 // communicator id
	Rank int    // this rank in the communicator, -1 before it is known
	Peer int    // the other rank in the communicator, -1 if none
	Tag  int64  // the tag of a point-to-point call
	Err  error
}

func (e *OpError) Error() string {
	s := "gocoll: " + e.Op
	if e.Peer >= 0 {
		switch e.Op {
		case "send":
			s += fmt.Sprintf(" to rank %d", e.Peer)
		case "recv":
			s += fmt.Sprintf(" from rank %d", e.Peer)
		default:
			s += fmt.Sprintf(" with rank %d", e.Peer)
		}
	}
	switch {
	case e.Op != "send" && e.Op != "recv":
	case e.Tag < 0 && seqOf(e.Tag) > 0:
		// A message of a collective or Split (sequence numbers start at
		// 1), whose tag means nothing to the user.
		s += fmt.Sprintf(" (step %d of operation #%d)", (-1-e.Tag)&MaxTagStep, seqOf(e.Tag))
	default:
		s += fmt.Sprintf(" tag %d", e.Tag)
	}
	if e.Rank >= 0 {
		s += fmt.Sprintf(" on rank %d", e.Rank)
	}
	if e.Comm != 0 {
		s += fmt.Sprintf(" of comm %#x", e.Comm)
	}
	return s + ": " + e.Err.Error()
}

func (e *OpError) Unwrap() error { return e.Err }

// Timeout reports whether the call failed because a deadline passed.
func (e *OpError) Timeout() bool {
	return errors.Is(e.Err, context.DeadlineExceeded)
}

// PeerError reports ranks that died, froze or became unreachable. Ranks
// are ranks in the job (the world communicator).
type PeerError struct {
	// Rank is the first rank found lost.
	Rank int
	// Ranks lists every rank found lost with it, Rank included, in
	// increasing order: the ranks of a host that went down all fail
	// within moments, and the error names them all (see LossSettle).
	Ranks []int
	Err   error // the cause as this rank saw it for Rank: io.EOF, a reset, a missed heartbeat...
}

func (e *PeerError) Error() string {
	if len(e.Ranks) > 1 {
		return fmt.Sprintf("ranks %s lost: %v", failreport.RankList(e.Ranks), e.Err)
	}
	return fmt.Sprintf("rank %d lost: %v", e.Rank, e.Err)
}

func (e *PeerError) Unwrap() []error { return []error{ErrPeerLost, e.Err} }

// AbortError reports that a rank aborted the job (Abort, or a mismatch
// or stuck write it found). Rank is the rank in the job (the world
// communicator).
type AbortError struct {
	Rank   int
	Reason string
	// Err is the cause, on the rank that aborted; on the others, which
	// learn only the Reason text, it is ErrMismatch for an abort because
	// of a mismatch and nil otherwise.
	Err error
}

func (e *AbortError) Error() string {
	return fmt.Sprintf("rank %d aborted the job: %s", e.Rank, e.Reason)
}

func (e *AbortError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrAborted}
	}
	return []error{ErrAborted, e.Err}
}

// MismatchError reports that two ranks of a communicator made different
// calls for the same operation (their n-th collective on it): different
// collectives, or the same one with different counts, element types, ops,
// roots or algorithms. The rank that finds it aborts the job with it, so
// that every rank fails with this description instead of waiting.
type MismatchError struct {
	Rank, Peer    int       // ranks in the communicator; Rank is usually the one that found it
	Local, Remote wire.Call // what each called
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

// TruncateError reports a message longer than the receive buffer it
// matched. The message is not consumed: a later receive with a buffer
// large enough gets it.
type TruncateError struct {
	Len int // payload bytes of the message
	Cap int // bytes of the receive buffer
}

func (e *TruncateError) Error() string {
	return fmt.Sprintf("message of %d bytes does not fit the receive buffer of %d bytes", e.Len, e.Cap)
}

func (e *TruncateError) Unwrap() error { return ErrTruncated }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
