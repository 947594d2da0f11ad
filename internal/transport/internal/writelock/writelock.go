// Package writelock is what every link's WriteMessage and WriteParts do
// before they write: check the message, and take the link's write lock,
// a mutex that a writer stops waiting for when its context ends or the
// link ends.
package writelock

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocoll/gocoll/internal/transport/internal/linkerr"
	"github.com/gocoll/gocoll/internal/wire"
)

// Lock serialises the writers of a link. A writer holds it while its
// token sits in the channel, so that waiting for it can be given up in a
// select.
type Lock chan struct{}

// New returns an unlocked Lock.
func New() Lock { return make(Lock, 1) }

// Errors of Acquire that the caller turns into its own, which name the
// link's addresses.
var (
	ErrClosed = errors.New("link closed") // done was closed
	ErrGone   = errors.New("peer gone")   // gone was closed
)

// Acquire checks that a payload of n bytes, whole or in parts, has the
// length h announces and that h is valid, and then takes the lock. It
// fails, without the lock, with the error of a message that cannot be
// sent (netw names the transport in it), with ctx's error if ctx is done
// before the lock is taken, and with ErrClosed or ErrGone when done or
// gone is closed first; either may be nil. On success the caller holds
// the lock and releases it with Release; ctxDone is ctx.Done(), which is
// nil for a context that can never be done.
//
// Acquire does not allocate unless it fails on a bad message.
func (w Lock) Acquire(ctx context.Context, netw string, h *wire.Header, n int, done, gone <-chan struct{}) (ctxDone <-chan struct{}, err error) {
	if uint64(n) != h.Length {
		return nil, linkerr.LengthMismatch(netw, n, h.Length)
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("%s: write: %w", netw, err)
	}
	ctxDone = ctx.Done()
	if ctxDone != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	// An uncontended lock is taken without the four-way select, which
	// costs more than the rest of Acquire together.
	select {
	case w <- struct{}{}:
		return ctxDone, nil
	default:
	}
	select {
	case w <- struct{}{}:
	case <-ctxDone:
		return nil, ctx.Err()
	case <-done:
		return nil, ErrClosed
	case <-gone:
		return nil, ErrGone
	}
	if ctxDone != nil {
		// The lock may have been taken although ctx was done too.
		if err := ctx.Err(); err != nil {
			<-w
			return nil, err
		}
	}
	return ctxDone, nil
}

// Release releases the lock.
func (w Lock) Release() { <-w }
