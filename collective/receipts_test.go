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
// algorithm, in memory and over sockets, and through a shared segment.
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
	// In a segment, calls whose data fits a fast line skip the waits for
	// the lines they do not read; each call's rooted operations follow
	// one another and an Allreduce, which compares what they skipped.
	for _, n := range rankCounts {
		t.Run(fmt.Sprint("shm/n=", n), func(t *testing.T) {
			cs := shmJob(t, n)
			counts := []int{0, 1, 5, 1000}
			for _, root := range []int{0, n - 1} {
				t.Run(fmt.Sprint("root=", root), func(t *testing.T) {
					checkBcast[float32](t, cs, Shm, root, counts, off)
					checkGather[int32](t, cs, Shm, root, counts, off)
					checkScatter[float64](t, cs, Shm, root, counts, off)
					checkReduce[float32](t, cs, Shm, codec.Sum, root, counts, off)
					checkReduce[float64](t, cs, Shm, reduceMatMul, root, counts, off)
					checkAllreduce[float32](t, cs, Shm, codec.Sum, counts)
				})
			}
		})
	}
}

// receiptJobs are the jobs of two ranks that the tests of receipts run
// on: linked in memory, and sharing a segment, where a call whose data
// fits a fast line takes the algorithm Shm.
var receiptJobs = []struct {
	name string
	job  func(t testing.TB) []*comm.Comm
	algo []Option
}{
	{"mem", func(t testing.TB) []*comm.Comm { return job(t, 2, comm.WithTimeout(watchdog)) }, nil},
	{"shm", func(t testing.TB) []*comm.Comm { return shmJob(t, 2, comm.WithTimeout(watchdog)) }, []Option{WithAlgorithm(Shm)}},
}

// TestWithoutReceiptsSenderReturnsFirst: without receipts, a rank that
// only sends returns before the rank it sends to has even called, as an
// MPI root may, over links and through a segment's fast lines; with them
// it waits for that rank (its call ends with the context here, since the
// other rank only calls after it returned).
func TestWithoutReceiptsSenderReturnsFirst(t *testing.T) {
	const count = 8
	tests := []struct {
		name      string
		sender    int  // the rank that only sends; the other receives
		linksOnly bool // the call picks a link algorithm
		call      func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error
	}{
		{"Bcast/tree", 0, true, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Bcast(ctx, c, buf, 0, append(opts, WithAlgorithm(Tree))...)
		}},
		{"Bcast/chain", 0, true, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Bcast(ctx, c, buf, 0, append(opts, WithAlgorithm(Chain))...)
		}},
		{"Bcast", 0, false, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Bcast(ctx, c, buf, 0, opts...)
		}},
		{"Scatter", 0, false, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Scatter(ctx, c, buf, buf[:count/2], 0, opts...)
		}},
		{"Gather", 1, false, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Gather(ctx, c, buf[:count/2], buf, 0, opts...)
		}},
		{"Reduce", 1, false, func(ctx context.Context, c *comm.Comm, buf []float32, opts ...Option) error {
			return Reduce(ctx, c, buf, codec.Sum, 0, opts...)
		}},
	}
	for _, place := range receiptJobs {
		for _, tt := range tests {
			if tt.linksOnly && place.algo != nil {
				continue
			}
			for _, receipts := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/receipts=%v", place.name, tt.name, receipts), func(t *testing.T) {
					cs := place.job(t)
					opts := append([]Option{WithReceipts(receipts)}, place.algo...)
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
}

// TestReceiptsMismatch: ranks that disagree on receipts fail, whichever
// side has them. The rank whose call waits for the other fails inside
// it; a sender without receipts may return first and fails in its next
// call.
func TestReceiptsMismatch(t *testing.T) {
	for _, place := range receiptJobs {
		for _, senderOn := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/root has receipts %v", place.name, senderOn), func(t *testing.T) {
				inCall := make([]bool, 2)
				errs := onEveryRank(t, place.job(t), func(ctx context.Context, c *comm.Comm) error {
					on := senderOn == (c.Rank() == 0)
					err := Bcast(ctx, c, make([]float32, 8), 0, append([]Option{WithReceipts(on)}, place.algo...)...)
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
}

// TestWithoutReceiptsTwoRoots: two ranks that each call Bcast as its
// root need hear nothing from each other in the call; without receipts
// either may return from it, holding its own buffer (as documented), and
// then fails in its next call: neither gets through both.
func TestWithoutReceiptsTwoRoots(t *testing.T) {
	for _, place := range receiptJobs {
		t.Run(place.name, func(t *testing.T) {
			errs := onEveryRank(t, place.job(t), func(ctx context.Context, c *comm.Comm) error {
				buf := []float32{float32(c.Rank())}
				if err := Bcast(ctx, c, buf, c.Rank(), append([]Option{WithReceipts(false)}, place.algo...)...); err != nil {
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
		})
	}
}

// TestWithoutReceiptsBackToBack: rooted calls without receipts, one
// after another with nothing between them, each rank in turn the root,
// deliver every call's data. Their roots return without waiting for the
// others, so a fast line is written again while slower ranks may still
// be an operation behind: the next operation must wait for them first.
func TestWithoutReceiptsBackToBack(t *testing.T) {
	const calls = 300
	opts := []Option{WithReceipts(false), WithAlgorithm(Shm)}
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := shmJob(t, n, comm.WithTimeout(watchdog))
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				buf := make([]float32, 5)
				parts := make([]float32, 2*n)
				for i := range calls {
					root := i % n
					if i%3 == 2 {
						mine := []float32{float32(i), float32(me)}
						if err := Gather(ctx, c, mine, parts, root, opts...); err != nil {
							return err
						}
						for r := 0; me == root && r < n; r++ {
							if parts[2*r] != float32(i) || parts[2*r+1] != float32(r) {
								return fmt.Errorf("call %d: Gather at root %d holds %v", i, root, parts)
							}
						}
						continue
					}
					for j := range buf {
						buf[j] = float32(-1)
						if me == root {
							buf[j] = float32(i*10 + j)
						}
					}
					if err := Bcast(ctx, c, buf, root, opts...); err != nil {
						return err
					}
					for j, v := range buf {
						if v != float32(i*10+j) {
							return fmt.Errorf("call %d: Bcast from %d gave rank %d %v", i, root, me, buf)
						}
					}
				}
				return nil
			})
		})
	}
}

// TestWithoutReceiptsLineAndSlots: a root that returned from a call
// through its fast line without receipts fails in its next call, not on
// the timeout, when the other rank ran the call through the slots
// because its count differs: that rank wrote no line for the next call
// to wait for, and finds the difference itself, waiting for the root in
// the slots.
func TestWithoutReceiptsLineAndSlots(t *testing.T) {
	cs := shmJob(t, 2, comm.WithTimeout(watchdog))
	errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
		buf := make([]float32, 1+c.Rank()*100_000)
		if err := Bcast(ctx, c, buf, 0, WithReceipts(false), WithAlgorithm(Shm)); err != nil {
			return err
		}
		return Barrier(ctx, c)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, comm.ErrMismatch, "rank %d", r)
		require.False(t, errors.Is(err, comm.ErrTimeout), "rank %d: %v", r, err)
	}
}
