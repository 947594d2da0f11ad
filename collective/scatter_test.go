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

var scatterAlgorithms = []Algorithm{Auto, Tree, Linear}

func TestScatter(t *testing.T) {
	for _, algo := range scatterAlgorithms {
		t.Run(algo.String(), func(t *testing.T) {
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					cs := job(t, n)
					rootedCase(t, n, func(t *testing.T, root int, full bool) {
						checkScatter[float32](t, cs, algo, root, countsFor(n, full))
						checkScatter[float64](t, cs, algo, root, countsFor(n, false))
						checkScatter[int32](t, cs, algo, root, countsFor(n, false))
						checkScatter[uint8](t, cs, algo, root, countsFor(n, false))
						checkScatter[codec.BFloat16](t, cs, algo, root, countsFor(n, false))
					})
				})
			}
		})
	}
}

// checkScatter scatters the concatenation of every rank's input from
// root and checks that each rank receives its own input. Non-root ranks
// pass nil or a send of the wrong size, which Scatter must ignore; root's
// send must stay as it was.
// Every rank passes opts after the algorithm.
func checkScatter[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, root int, sizes []int, opts ...Option) {
	t.Helper()
	n := len(cs)
	for _, count := range sizes {
		t.Run(fmt.Sprintf("%s/count=%d", kernel.DTypeOf[T](), count), func(t *testing.T) {
			inputs := make([][]T, n)
			for r := range n {
				inputs[r] = input[T](r, count, count+root)
			}
			all := slices.Concat(inputs...)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				var send []T
				switch {
				case me == root:
					send = place(t, me, slices.Clone(all))
				case me%2 == 1:
					send = input[T](me, 3, 1)
				}
				recv := place(t, me, input[T](me+1, count, 7))
				if err := Scatter(ctx, c, send, recv, root, append([]Option{WithAlgorithm(algo)}, opts...)...); err != nil {
					return err
				}
				if me == root {
					if err := equalBits(send, all); err != nil {
						return fmt.Errorf("send changed at root: %w", err)
					}
				}
				return equalBits(recv, inputs[me])
			})
		})
	}
}

func TestScatterv(t *testing.T) {
	for _, n := range rankCounts {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n)
			rootedCase(t, n, func(t *testing.T, root int, full bool) {
				checkScatterv[float32](t, cs, Linear, root, countsFor(n, full))
				checkScatterv[float64](t, cs, Linear, root, countsFor(n, false))
				checkScatterv[int32](t, cs, Linear, root, countsFor(n, false))
				checkScatterv[uint8](t, cs, Linear, root, countsFor(n, false))
				checkScatterv[codec.BFloat16](t, cs, Linear, root, countsFor(n, false))
			})
		})
	}
}

// checkScatterv scatters vCounts elements to each rank from a root send
// that holds more than the counts' sum.
func checkScatterv[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, root int, sizes []int) {
	t.Helper()
	n := len(cs)
	for _, count := range sizes {
		t.Run(fmt.Sprintf("%s/count=%d", kernel.DTypeOf[T](), count), func(t *testing.T) {
			counts := vCounts(n, count)
			inputs := make([][]T, n)
			for r := range n {
				inputs[r] = input[T](r, counts[r], count+root)
			}
			send := slices.Concat(append(slices.Clone(inputs), input[T](n, 5, 3))...)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				recv := make([]T, counts[me])
				var mine []T
				if me == root {
					mine = send
				}
				if err := Scatterv(ctx, c, mine, counts, recv, root, WithAlgorithm(algo)); err != nil {
					return err
				}
				return equalBits(recv, inputs[me])
			})
		})
	}
}

func TestScatterRefusesBadArguments(t *testing.T) {
	t.Run("send too short at root", func(t *testing.T) {
		requireRefused(t, 3, []int{2}, func(ctx context.Context, c *comm.Comm) error {
			return Scatter(ctx, c, make([]float64, 8), make([]float64, 3), 2)
		}, "Scatter(9 × float64, root 2)", "send has 8 elements at root 2; it needs 9 (3 ranks × 3 elements received)")
	})
	t.Run("root out of range", func(t *testing.T) {
		requireRefused(t, 2, []int{0, 1}, func(ctx context.Context, c *comm.Comm) error {
			return Scatter(ctx, c, make([]float64, 6), make([]float64, 3), 2)
		}, "Scatter", "root 2 is outside the communicator of 2 ranks")
	})
	t.Run("mismatched count", func(t *testing.T) {
		for _, algo := range scatterAlgorithms[1:] {
			t.Run(algo.String(), func(t *testing.T) {
				requireMismatch(t, 4, func(ctx context.Context, c *comm.Comm) error {
					m := 3
					if c.Rank() == 3 {
						m = 2
					}
					return Scatter(ctx, c, make([]int8, 4*m), make([]int8, m), 0, WithAlgorithm(algo))
				}, nil)
			})
		}
		// Through a segment: the fast lines, the slots, registered buffers.
		for _, tc := range []struct {
			name       string
			m          int
			registered bool
		}{{"shm/fast line", 3, false}, {"shm/slots", 100000, false}, {"shm/registered", 100000, true}} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.registered {
					useRegistered(t, func(int) bool { return true })
				}
				requireMismatch(t, 4, func(ctx context.Context, c *comm.Comm) error {
					m := tc.m
					if c.Rank() == 3 {
						m--
					}
					me := c.Rank()
					return Scatter(ctx, c, place(t, me, make([]int8, 4*m)), place(t, me, make([]int8, m)), 0)
				}, nil, comm.WithTransport("auto"))
			})
		}
	})
}

func TestScattervRefusesBadArguments(t *testing.T) {
	t.Run("counts of wrong length", func(t *testing.T) {
		requireRefused(t, 2, []int{0, 1}, func(ctx context.Context, c *comm.Comm) error {
			return Scatterv(ctx, c, make([]uint8, 6), []int{2, 2, 2}, make([]uint8, 2), 1)
		}, "Scatterv", "counts has 3 entries")
	})
	t.Run("negative count", func(t *testing.T) {
		requireRefused(t, 3, []int{0, 1, 2}, func(ctx context.Context, c *comm.Comm) error {
			counts := []int{2, 2, -5}
			return Scatterv(ctx, c, make([]uint8, 4), counts, make([]uint8, max(counts[c.Rank()], 0)), 1)
		}, "counts[2] is -5")
	})
	t.Run("count is not len(recv)", func(t *testing.T) {
		requireRefused(t, 3, []int{1}, func(ctx context.Context, c *comm.Comm) error {
			return Scatterv(ctx, c, make([]uint8, 6), []int{2, 2, 2}, make([]uint8, 2+c.Rank()%2), 0)
		}, "recv has 3 elements on rank 1 but counts[1] is 2")
	})
	vMismatchOverShm(t, "Scatterv", func(ctx context.Context, c *comm.Comm, mine, m int, counts []int) error {
		var send []float32
		if c.Rank() == 0 {
			send = make([]float32, c.Size()*m)
		}
		return Scatterv(ctx, c, send, counts, make([]float32, mine), 0, WithAlgorithm(Shm))
	})
	t.Run("send too short at root", func(t *testing.T) {
		requireRefused(t, 3, []int{0}, func(ctx context.Context, c *comm.Comm) error {
			return Scatterv(ctx, c, make([]uint8, 5), []int{2, 2, 2}, make([]uint8, 2), 0)
		}, "Scatterv(uint8, root 0)", "send has 5 elements at root 0; the counts add up to 6")
	})
	t.Run("root out of range", func(t *testing.T) {
		requireRefused(t, 3, []int{0, 1, 2}, func(ctx context.Context, c *comm.Comm) error {
			return Scatterv(ctx, c, make([]uint8, 6), []int{2, 2, 2}, make([]uint8, 2), 3)
		}, "root 3 is outside the communicator of 3 ranks")
	})
}
