package comm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/testutil"
)

// TestSegmentFallback: when one rank cannot map a communicator's shared
// memory, no rank uses it, the warning names the rank and its reason,
// and the ranks still talk over links. Rank 0 creates the segment, the
// others open it: both ways of failing are covered.
func TestSegmentFallback(t *testing.T) {
	const n = 3
	for _, bad := range []int{0, 2} {
		t.Run(fmt.Sprint("rank ", bad), func(t *testing.T) {
			var log testutil.SyncBuffer
			cs := newJob(t, n, comm.WithTransport("auto"),
				comm.WithLogger(slog.New(slog.NewTextHandler(&log, nil))),
				comm.WithSegmentFault(func(rank int) error {
					if rank == bad {
						return errors.New("no room in /dev/shm")
					}
					return nil
				}))
			for _, c := range cs {
				require.Nil(t, engine(c).Segment(), "rank %d has a segment", c.Rank())
			}
			require.Contains(t, log.String(), fmt.Sprintf("rank %d: no room in /dev/shm", bad))
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				next, prev := (c.Rank()+1)%n, (c.Rank()+n-1)%n
				got := make([]byte, 1)
				errc := make(chan error, 1)
				go func() { errc <- c.Send(ctx, next, 7, []byte{byte(c.Rank())}) }()
				if _, err := c.Recv(ctx, prev, 7, got); err != nil {
					return err
				}
				if got[0] != byte(prev) {
					return fmt.Errorf("rank %d got %d from rank %d", c.Rank(), got[0], prev)
				}
				return <-errc
			})
		})
	}
}

func TestWithSegmentSlot(t *testing.T) {
	for _, bytes := range []int{0, 4095, 4097, 6000, 1<<30 + 4096} {
		t.Run(fmt.Sprint(bytes), func(t *testing.T) {
			_, err := comm.NewLocal(2, comm.WithSegmentSlot(bytes))
			require.ErrorIs(t, err, comm.ErrInvalid)
			require.ErrorContains(t, err, fmt.Sprintf("segment slot of %d bytes", bytes))
		})
	}
	t.Run("set", func(t *testing.T) {
		cs := newJob(t, 3, comm.WithTransport("auto"), comm.WithSegmentSlot(8192))
		for _, c := range cs {
			require.Equal(t, 8192, engine(c).Segment().SlotBytes())
		}
	})
	t.Run("default", func(t *testing.T) {
		cs := newJob(t, 2, comm.WithTransport("auto"))
		require.Equal(t, core.DefaultSegmentSlot(2), engine(cs[0]).Segment().SlotBytes())
		for _, tt := range []struct{ ranks, want int }{{1, 1 << 20}, {8, 1 << 20}, {16, 512 << 10}, {24, 340 << 10}, {32, 256 << 10}, {1000, 256 << 10}} {
			require.Equal(t, tt.want, core.DefaultSegmentSlot(tt.ranks), "%d ranks", tt.ranks)
		}
	})
}
