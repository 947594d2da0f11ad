package comm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
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
				require.Nil(t, c.Segment(), "rank %d has a segment", c.Rank())
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
