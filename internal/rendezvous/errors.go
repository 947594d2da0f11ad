package rendezvous

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocoll/gocoll/internal/transport"
)

// Sentinel errors. Test for them with errors.Is; the errors that calls
// return wrap them with the operation, the key or rank and the cause.
var (
	// ErrClosed is returned by calls on a Client after its Close, and by
	// Server methods after the server's Close.
	ErrClosed = errors.New("rendezvous closed")
	// ErrStoreGone means the store shut down cleanly (its Server was
	// closed). It is not a failure of any rank, but no call can proceed.
	ErrStoreGone = errors.New("rendezvous store closed")
	// ErrLost means the connection to the store (rank 0) broke without a
	// clean shutdown: rank 0 died, its host vanished or the network cut.
	ErrLost = errors.New("connection to the rendezvous store lost")
	// ErrProtocol is wrapped when a peer sent a frame that breaks the
	// protocol: a bad length, an unknown type, a malformed body. The
	// connection it came on is closed.
	ErrProtocol = errors.New("rendezvous protocol violation")
	// ErrInvalid marks a call with bad arguments (an empty or oversized
	// key, an oversized value, a rank outside the job): the caller's
	// fault, not the job's.
	ErrInvalid = errors.New("invalid input")
	// ErrRefused is wrapped when the store refuses a client: a wrong
	// secret, a rank that is taken or outside the job, a size mismatch.
	// It is transport.ErrRefused, so callers that handle refused links
	// handle this too.
	ErrRefused = transport.ErrRefused
)

func protocolf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func refusedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
}

// ctxErr is the error a call returns when its context ends: the cause the
// context was cancelled with, still matching ctx.Err() with errors.Is so
// that code checking for context.DeadlineExceeded keeps working when the
// cause is something else.
func ctxErr(ctx context.Context) error {
	cause := context.Cause(ctx)
	if err := ctx.Err(); err != nil && !errors.Is(cause, err) {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return cause
}
