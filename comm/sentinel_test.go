package comm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/errtest"
)

func requireSentinel(t *testing.T, err error) {
	t.Helper()
	errtest.RequireSentinel(t, err, "comm")
}

// TestEveryErrorWrapsASentinel: whatever goes wrong, the error names it
// in words and wraps the sentinel that says what kind of failure it is.
func TestEveryErrorWrapsASentinel(t *testing.T) {
	bg := context.Background()
	tests := []struct {
		name string
		want error
		call func(t *testing.T) error
	}{
		{"init of a job larger than allowed", comm.ErrInvalid, func(t *testing.T) error {
			t.Setenv("GOCOLL_RANK", "0")
			t.Setenv("GOCOLL_SIZE", "99999999999")
			t.Setenv("GOCOLL_ADDR", "127.0.0.1:1")
			_, err := comm.Init(bg)
			return err
		}},
		{"init with a heartbeat too short", comm.ErrInvalid, func(t *testing.T) error {
			_, err := comm.NewLocal(2, comm.WithHeartbeat(time.Millisecond))
			return err
		}},
		{"a tuning table that does not exist", comm.ErrInvalid, func(t *testing.T) error {
			_, err := comm.NewLocal(2, comm.WithTuning("/nonexistent/tuning.json"))
			return err
		}},
		{"a job of no ranks", comm.ErrInvalid, func(t *testing.T) error {
			_, err := comm.NewLocal(0)
			return err
		}},
		{"a send outside the communicator", comm.ErrInvalid, func(t *testing.T) error {
			return newJob(t, 2)[0].Send(bg, 2, 0, nil)
		}},
		{"a receive too small", comm.ErrTruncated, func(t *testing.T) error {
			cs := newJob(t, 2)
			require.NoError(t, cs[0].Send(bg, 1, 0, []byte("four")))
			_, err := cs[1].Recv(bg, 0, 0, make([]byte, 2))
			return err
		}},
		{"a call after Close", comm.ErrClosed, func(t *testing.T) error {
			c := newJob(t, 2)[0]
			require.NoError(t, c.Close())
			return c.Send(bg, 1, 0, nil)
		}},
		{"a cancelled context", context.Canceled, func(t *testing.T) error {
			ctx, cancel := context.WithCancel(bg)
			cancel()
			_, err := newJob(t, 2)[0].Recv(ctx, 1, 0, nil)
			return err
		}},
		{"the communicator's timeout", comm.ErrTimeout, func(t *testing.T) error {
			_, err := newJob(t, 2, comm.WithTimeout(100*time.Millisecond))[0].Recv(bg, 1, 0, nil)
			return err
		}},
		{"a receive from a rank that closed", comm.ErrPeerClosed, func(t *testing.T) error {
			cs := newJob(t, 2, comm.WithTransport("tcp"))
			require.NoError(t, cs[1].Send(bg, 0, 0, nil))
			_, err := cs[0].Recv(bg, 1, 0, nil)
			require.NoError(t, err)
			require.NoError(t, cs[1].Close())
			_, err = cs[0].Recv(bg, 1, 0, nil)
			return err
		}},
		{"a rank that aborted", comm.ErrAborted, func(t *testing.T) error {
			cs := newJob(t, 2)
			cs[1].Abort(errors.New("loss is NaN"))
			_, err := cs[0].Recv(bg, 1, 0, nil)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(t)
			requireSentinel(t, err)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

// TestLinkToAnAbortingRank: ranks that open their first link to a rank
// while it aborts and exits fail with the abort, or with its loss, never
// with a bare dial or handshake error.
func TestLinkToAnAbortingRank(t *testing.T) {
	for trial := range 10 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			cs := newJob(t, 4, comm.WithTransport("tcp"))
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for r := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Sleep a little longer each trial, to meet the abort
					// at different moments of the dial.
					time.Sleep(time.Duration(trial*r) * 100 * time.Microsecond)
					errs[r] = cs[r].Send(context.Background(), 3, 0, make([]byte, 64))
				}()
			}
			// As a rank that aborts and exits does.
			cs[3].Abort(errors.New("loss is NaN"))
			cs[3].Close()
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					requireSentinel(t, err)
				}
			}
		})
	}
}
