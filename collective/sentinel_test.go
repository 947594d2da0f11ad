package collective

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/errtest"
)

// TestEveryErrorWrapsASentinel: every rank's error of a failed collective,
// whatever failed, wraps the sentinel that says what kind of failure it is.
func TestEveryErrorWrapsASentinel(t *testing.T) {
	type unencodable struct{ C chan int }
	tests := []struct {
		name string
		want error // on the ranks that fail first; the others fail with it too
		call func(ctx context.Context, c *comm.Comm) error
	}{
		{"a value gob cannot encode", comm.ErrInvalid, func(ctx context.Context, c *comm.Comm) error {
			_, err := AllgatherObject(ctx, c, unencodable{})
			return err
		}},
		{"ranks gathering different types", comm.ErrMismatch, func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 0 {
				_, err := AllgatherObject(ctx, c, "text")
				return err
			}
			_, err := AllgatherObject(ctx, c, struct{ X, Y float64 }{1, 2})
			return err
		}},
		{"a buffer of the wrong length", comm.ErrInvalid, func(ctx context.Context, c *comm.Comm) error {
			return Allgather(ctx, c, make([]float32, 2), make([]float32, 5))
		}},
		{"ranks disagreeing on the count", comm.ErrMismatch, func(ctx context.Context, c *comm.Comm) error {
			return Allreduce(ctx, c, make([]float32, 4+c.Rank()), codec.Sum)
		}},
		{"a rank that aborts", comm.ErrAborted, func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 1 {
				c.Abort(errors.New("loss is NaN"))
			}
			return Barrier(ctx, c)
		}},
		{"a cancelled context", context.Canceled, func(ctx context.Context, c *comm.Comm) error {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			return Bcast(ctx, c, make([]int32, 8), 0)
		}},
	}
	for _, tt := range tests {
		for _, tr := range []string{"mem", "tcp"} {
			t.Run(tt.name+"/"+tr, func(t *testing.T) {
				cs := job(t, 3, comm.WithTransport(tr))
				errs := onEveryRank(t, cs, tt.call)
				hit := false
				for r, err := range errs {
					errtest.RequireSentinel(t, err, fmt.Sprintf("rank %d", r))
					hit = hit || errors.Is(err, tt.want)
				}
				require.True(t, hit, "no rank's error wraps %v: %v", tt.want, errs)
			})
		}
	}
}
