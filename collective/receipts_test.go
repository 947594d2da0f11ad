package collective

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// TestWithoutReceipts: rooted collectives without receipts give the
// same results as with them, for every rank count, root and link
// algorithm, in memory and over sockets.
func TestWithoutReceipts(t *testing.T) {
	off := WithReceipts(false)
	run := func(t *testing.T, cs []*comm.Comm, roots []int, counts []int) {
		for _, root := range roots {
			t.Run(fmt.Sprint("root=", root), func(t *testing.T) {
				for _, algo := range []Algorithm{Tree, Linear, Chain, ScatterAllgather} {
					checkBcast[float32](t, cs, algo, root, counts, off)
				}
				for _, algo := range []Algorithm{Tree, Linear} {
					checkGather[int32](t, cs, algo, root, counts, off)
					checkScatter[float64](t, cs, algo, root, counts, off)
				}
				checkReduce[float32](t, cs, Tree, codec.Sum, root, counts, off)
				checkReduce[float64](t, cs, Tree, reduceMatMul, root, counts, off)
			})
		}
	}
	for _, n := range rankCounts {
		t.Run(fmt.Sprint("mem/n=", n), func(t *testing.T) {
			run(t, job(t, n), []int{0, n - 1}, []int{0, 5, 1000})
		})
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint("tcp/n=", n), func(t *testing.T) {
			run(t, job(t, n, comm.WithTransport("tcp")), []int{n - 1}, []int{5, 10000})
		})
	}
}

// TestWithoutReceiptsSenderReturnsFirst: without receipts, a rank that
// only sends returns before the rank it sends to has even called, as an
// MPI root may; with them it waits for that rank (its call ends with the
// context here, since the other rank only calls after it returned).
func TestWithoutReceiptsSenderReturnsFirst(t *testing.T) {
	const count = 8
	tests := []struct {
		name   string
		sender int // the rank that only sends; the other receives
		call   func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error
	}{
		{"Bcast/tree", 0, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Bcast(ctx, c, buf, 0, append(opts, WithAlgorithm(Tree))...)
		}},
		{"Bcast/chain", 0, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Bcast(ctx, c, buf, 0, append(opts, WithAlgorithm(Chain))...)
		}},
		{"Scatter", 0, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Scatter(ctx, c, buf, buf[:count/2], 0, opts...)
		}},
		{"Gather", 1, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Gather(ctx, c, buf[:count/2], buf, 0, opts...)
		}},
		{"Reduce", 1, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Reduce(ctx, c, buf, codec.Sum, 0, opts...)
		}},
	}
	for _, tt := range tests {
		for _, receipts := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/receipts=%v", tt.name, receipts), func(t *testing.T) {
				cs := job(t, 2, comm.WithTimeout(watchdog))
				opts := []Option{WithReceipts(receipts)}
				senderDone := make(chan error, 1)
				errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
					buf := make([]float32, count)
					for i := range buf {
						buf[i] = float32(c.Rank() + 1)
					}
					if c.Rank() == tt.sender {
						// A bound, not a measurement: with receipts the
						// call cannot end before the other rank calls.
						callCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
						defer cancel()
						err := tt.call(callCtx, c, buf, opts...)
						senderDone <- err
						return err
					}
					if err := <-senderDone; err != nil && !receipts {
						return fmt.Errorf("the sender failed: %w", err)
					}
					return tt.call(ctx, c, buf, opts...)
				})
				if receipts {
					require.ErrorIs(t, errs[tt.sender], context.DeadlineExceeded, "the sender returned before the receiver called")
					return
				}
				for r, err := range errs {
					require.NoError(t, err, "rank %d", r)
				}
			})
		}
	}
}

// TestReceiptsMismatch: ranks that disagree on receipts fail, whichever
// side has them. The rank whose call waits for the other fails inside
// it; a sender without receipts may return first and fails in its next
// call.
func TestReceiptsMismatch(t *testing.T) {
	for _, senderOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("root has receipts %v", senderOn), func(t *testing.T) {
			cs := job(t, 2, comm.WithTimeout(watchdog))
			inCall := make([]bool, 2)
			errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
				on := senderOn == (c.Rank() == 0)
				err := Bcast(ctx, c, make([]float32, 8), 0, WithReceipts(on))
				if err != nil {
					inCall[c.Rank()] = true
					return err
				}
				return Barrier(ctx, c)
			})
			for r, err := range errs {
				require.ErrorIs(t, err, comm.ErrMismatch, "rank %d", r)
				require.ErrorContains(t, err, "receipts", "rank %d", r)
			}
			require.True(t, inCall[1], "the receiver returned nil from the call: %v", errs[1])
			if senderOn {
				require.True(t, inCall[0], "the root with receipts returned nil from the call: %v", errs[0])
			}
		})
	}
}

// TestWithoutReceiptsTwoRoots: two ranks that each call Bcast as its
// root need hear nothing from each other in the call; without receipts
// either may return from it, holding its own buffer (as documented), and
// then fails in its next call: neither gets through both.
func TestWithoutReceiptsTwoRoots(t *testing.T) {
	cs := job(t, 2, comm.WithTimeout(watchdog))
	errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
		buf := []float32{float32(c.Rank())}
		if err := Bcast(ctx, c, buf, c.Rank(), WithReceipts(false)); err != nil {
			return err
		}
		if buf[0] != float32(c.Rank()) {
			return fmt.Errorf("the root's buffer changed to %v", buf)
		}
		return Barrier(ctx, c)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, comm.ErrMismatch, "rank %d", r)
		require.False(t, errors.Is(err, comm.ErrTimeout), "rank %d: %v", r, err)
		require.ErrorContains(t, err, "Bcast(1 × float32, root 0)", "rank %d", r)
		require.ErrorContains(t, err, "Bcast(1 × float32, root 1)", "rank %d", r)
	}
}
