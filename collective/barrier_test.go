package collective

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
)

func TestBarrier(t *testing.T) {
	for _, n := range rankCounts {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			checkBarrier(t, job(t, n))
		})
	}
}

// checkBarrier runs rounds of barriers in which one rank, a different one
// each round, arrives late: no rank may leave a barrier before every rank
// has entered it.
func checkBarrier(t *testing.T, cs []*comm.Comm) {
	t.Helper()
	n := len(cs)
	const rounds = 20
	var entered [rounds]atomic.Int32
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		me := c.Rank()
		for r := range rounds {
			if me == r%n {
				time.Sleep(time.Millisecond)
			}
			entered[r].Add(1)
			if err := Barrier(ctx, c); err != nil {
				return err
			}
			if got := entered[r].Load(); got != int32(n) {
				return fmt.Errorf("rank %d left barrier %d when %d of %d ranks had entered", me, r, got, n)
			}
		}
		return nil
	})
}

func TestBarrierOverTCP(t *testing.T) {
	for _, n := range []int{3, 4} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			checkBarrier(t, job(t, n, comm.WithTransport("tcp")))
		})
	}
}

// TestBarrierMismatch: a rank that calls Barrier while the others call
// a collective whose first step has the same peers (a ring allgather)
// makes every rank fail instead of hanging. (Calls whose messages never
// meet are only caught by the timeout.)
func TestBarrierMismatch(t *testing.T) {
	requireMismatch(t, 3, func(ctx context.Context, c *comm.Comm) error {
		if c.Rank() == 1 {
			return Barrier(ctx, c)
		}
		return Allgather(ctx, c, make([]uint8, 0), make([]uint8, 0), WithAlgorithm(Ring))
	}, []string{"Barrier(0 × uint8)", "Allgather(0 × uint8)"})
}

// TestBarrierContext: a barrier that a rank never joins ends with the
// context's error on the ranks that wait.
func TestBarrierContext(t *testing.T) {
	cs := job(t, 3)
	for r, err := range onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
		if c.Rank() == 2 {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		return Barrier(ctx, c)
	}) {
		if r == 2 {
			continue
		}
		require.ErrorIs(t, err, context.DeadlineExceeded, "rank %d", r)
	}
}
