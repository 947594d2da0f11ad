// Package errtest holds, for the tests of comm and collective, the
// sentinels that every error of a communicator call or a collective
// wraps one of.
package errtest

import (
	"context"
	"errors"
	"testing"

	"github.com/gocoll/gocoll/internal/core"
)

// sentinels are comm's documented sentinels (which are core's) and the
// context's errors, which a call that ended with its context returns.
var sentinels = []error{
	core.ErrTimeout, core.ErrPeerLost, core.ErrPeerClosed, core.ErrAborted, core.ErrMismatch,
	core.ErrTruncated, core.ErrRefused, core.ErrInvalid, core.ErrClosed,
	context.Canceled, context.DeadlineExceeded,
}

// RequireSentinel fails the test unless err is an error that wraps one of
// the sentinels; what names the error in the failure message.
func RequireSentinel(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%s: %q wraps none of the sentinels", what, err)
}
