package collective

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
)

var gatherAlgorithms = []Algorithm{Auto, Tree, Linear}

func TestGather(t *testing.T) {
	for _, algo := range gatherAlgorithms {
		t.Run(algo.String(), func(t *testing.T) {
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					cs := job(t, n)
					rootedCase(t, n, func(t *testing.T, root int, full bool) {
						checkGather[float32](t, cs, algo, root, countsFor(n, full))
						checkGather[float64](t, cs, algo, root, countsFor(n, false))
						checkGather[int32](t, cs, algo, root, countsFor(n, false))
						checkGather[uint8](t, cs, algo, root, countsFor(n, false))
						checkGather[codec.BFloat16](t, cs, algo, root, countsFor(n, false))
					})
				})
			}
		})
	}
}

// checkGather gathers each rank's input with each count and checks
// root's recv against their concatenation in rank order. Non-root ranks
// pass nil or a recv of the wrong size, which Gather must ignore and
// leave alone, and every rank's send must stay as it was.
// Every rank passes opts after the algorithm.
func checkGather[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, root int, sizes []int, opts ...Option) {
	t.Helper()
	n := len(cs)
	for _, count := range sizes {
		t.Run(fmt.Sprintf("%s/count=%d", kernel.DTypeOf[T](), count), func(t *testing.T) {
			inputs := make([][]T, n)
			for r := range n {
				inputs[r] = input[T](r, count, count+root)
			}
			want := slices.Concat(inputs...)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				send := place(t, me, slices.Clone(inputs[me]))
				var recv []T
				switch {
				case me == root:
					recv = place(t, me, make([]T, n*count))
				case me%2 == 1:
					recv = input[T](me, 3, 1)
				}
				other := slices.Clone(recv)
				if err := Gather(ctx, c, send, recv, root, append([]Option{WithAlgorithm(algo)}, opts...)...); err != nil {
					return err
				}
				if err := equalBits(send, inputs[me]); err != nil {
					return fmt.Errorf("send changed: %w", err)
				}
				if me == root {
					return equalBits(recv, want)
				}
				if err := equalBits(recv, other); err != nil {
					return fmt.Errorf("recv of non-root rank %d changed: %w", me, err)
				}
				return nil
			})
		})
	}
}

func TestGatherv(t *testing.T) {
	for _, n := range rankCounts {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n)
			rootedCase(t, n, func(t *testing.T, root int, full bool) {
				checkGatherv[float32](t, cs, Linear, root, countsFor(n, full))
				checkGatherv[float64](t, cs, Linear, root, countsFor(n, false))
				checkGatherv[int32](t, cs, Linear, root, countsFor(n, false))
				checkGatherv[uint8](t, cs, Linear, root, countsFor(n, false))
				checkGatherv[codec.BFloat16](t, cs, Linear, root, countsFor(n, false))
			})
		})
	}
}

// vCounts are the per-rank counts of a v-collective built from count:
// they differ from rank to rank and include zeros.
func vCounts(n, count int) []int {
	cs := make([]int, n)
	for r := range cs {
		cs[r] = max(0, count-r*(count/n+1)+r%2)
	}
	return cs
}

// checkGatherv gathers vCounts elements from each rank into a root recv
// with room to spare, which must stay untouched past the counts' sum.
func checkGatherv[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, root int, sizes []int) {
	t.Helper()
	n := len(cs)
	for _, count := range sizes {
		t.Run(fmt.Sprintf("%s/count=%d", kernel.DTypeOf[T](), count), func(t *testing.T) {
			counts := vCounts(n, count)
			inputs := make([][]T, n)
			for r := range n {
				inputs[r] = input[T](r, counts[r], count+root)
			}
			spare := input[T](n, 3, 2)
			want := slices.Concat(append(inputs, spare)...)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				var recv []T
				if me == root {
					recv = slices.Concat(make([]T, len(want)-len(spare)), spare)
				}
				if err := Gatherv(ctx, c, inputs[me], recv, counts, root, WithAlgorithm(algo)); err != nil {
					return err
				}
				if me == root {
					return equalBits(recv, want)
				}
				return nil
			})
		})
	}
}

func TestGatherRefusesBadArguments(t *testing.T) {
	t.Run("recv too short at root", func(t *testing.T) {
		requireRefused(t, 3, []int{1}, func(ctx context.Context, c *comm.Comm) error {
			return Gather(ctx, c, make([]float32, 4), make([]float32, 11), 1)
		}, "Gather(12 × float32, root 1)", "recv has 11 elements at root 1; it needs 12 (3 ranks × 4 elements sent)")
	})
	t.Run("recv too long at root", func(t *testing.T) {
		requireRefused(t, 2, []int{0}, func(ctx context.Context, c *comm.Comm) error {
			return Gather(ctx, c, make([]int32, 4), make([]int32, 9), 0, WithAlgorithm(Linear))
		}, "recv has 9 elements at root 0; it needs 8")
	})
	t.Run("root out of range", func(t *testing.T) {
		requireRefused(t, 3, []int{0, 1, 2}, func(ctx context.Context, c *comm.Comm) error {
			return Gather(ctx, c, make([]float32, 4), make([]float32, 12), -2)
		}, "Gather", "root -2 is outside the communicator of 3 ranks")
	})
	t.Run("mismatched count", func(t *testing.T) {
		for _, algo := range gatherAlgorithms[1:] {
			t.Run(algo.String(), func(t *testing.T) {
				requireMismatch(t, 4, func(ctx context.Context, c *comm.Comm) error {
					m := 3
					if c.Rank() == 2 {
						m = 4
					}
					return Gather(ctx, c, make([]uint16, m), make([]uint16, 4*m), 0, WithAlgorithm(algo))
				}, nil)
			})
		}
	})
}

func TestGathervRefusesBadArguments(t *testing.T) {
	t.Run("counts of wrong length", func(t *testing.T) {
		requireRefused(t, 3, []int{0, 1, 2}, func(ctx context.Context, c *comm.Comm) error {
			return Gatherv(ctx, c, make([]float32, 2), make([]float32, 4), []int{2, 2}, 0)
		}, "Gatherv", "counts has 2 entries")
	})
	t.Run("negative count", func(t *testing.T) {
		requireRefused(t, 3, []int{0, 1, 2}, func(ctx context.Context, c *comm.Comm) error {
			counts := []int{2, -1, 2}
			return Gatherv(ctx, c, make([]float32, max(counts[c.Rank()], 0)), make([]float32, 4), counts, 0)
		}, "counts[1] is -1")
	})
	t.Run("count is not len(send)", func(t *testing.T) {
		requireRefused(t, 3, []int{2}, func(ctx context.Context, c *comm.Comm) error {
			return Gatherv(ctx, c, make([]float32, 2), make([]float32, 7), []int{2, 2, 3}, 0)
		}, "send has 2 elements on rank 2 but counts[2] is 3")
	})
	t.Run("recv too short at root", func(t *testing.T) {
		requireRefused(t, 3, []int{2}, func(ctx context.Context, c *comm.Comm) error {
			return Gatherv(ctx, c, make([]float32, 2), make([]float32, 5), []int{2, 2, 2}, 2)
		}, "Gatherv(float32, root 2)", "recv has 5 elements at root 2; the counts add up to 6")
	})
	t.Run("root out of range", func(t *testing.T) {
		requireRefused(t, 2, []int{0, 1}, func(ctx context.Context, c *comm.Comm) error {
			return Gatherv(ctx, c, make([]float32, 2), make([]float32, 4), []int{2, 2}, 2)
		}, "root 2 is outside the communicator of 2 ranks")
	})
	t.Run("counts differ between ranks", func(t *testing.T) {
		requireMismatch(t, 3, func(ctx context.Context, c *comm.Comm) error {
			counts := []int{2, 2, 2}
			if c.Rank() == 1 {
				counts = []int{1, 3, 2}
				return Gatherv(ctx, c, make([]float32, 3), nil, counts, 0)
			}
			return Gatherv(ctx, c, make([]float32, 2), make([]float32, 6), counts, 0)
		}, nil)
	})
	vMismatchOverShm(t, "Gatherv", func(ctx context.Context, c *comm.Comm, mine, m int, counts []int) error {
		var recv []float32
		if c.Rank() == 0 {
			recv = make([]float32, c.Size()*m)
		}
		return Gatherv(ctx, c, make([]float32, mine), recv, counts, 0, WithAlgorithm(Shm))
	})
}

// vMismatchOverShm runs a v-collective through a shared segment with one
// round and with several, where rank 1's part has m+1 elements but root
// 0's counts say m: both must fail inside the call (with two ranks,
// requireMismatch checks that), root naming rank 1's count and rank 1
// root's. call gets the rank's own count, m, and counts (nil but at root).
func vMismatchOverShm(t *testing.T, name string, call func(ctx context.Context, c *comm.Comm, mine, m int, counts []int) error) {
	for _, n := range []int{2, 3} {
		for _, m := range []int{2, 300000} {
			t.Run(fmt.Sprintf("%s over shm/n=%d/m=%d", name, n, m), func(t *testing.T) {
				requireMismatch(t, n, func(ctx context.Context, c *comm.Comm) error {
					var counts []int
					if c.Rank() == 0 {
						counts = slices.Repeat([]int{m}, n)
					}
					mine := m
					if c.Rank() == 1 {
						mine = m + 1
					}
					return call(ctx, c, mine, m, counts)
				}, []string{fmt.Sprintf("root 0's counts[1] is %d", m)}, comm.WithTransport("auto"))
			})
		}
	}
}
