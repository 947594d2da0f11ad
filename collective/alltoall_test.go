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

var alltoallAlgorithms = []Algorithm{Auto, Pairwise}

func TestAlltoall(t *testing.T) {
	for _, algo := range alltoallAlgorithms {
		t.Run(algo.String(), func(t *testing.T) {
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					cs := job(t, n)
					checkAlltoall[float32](t, cs, algo, countsFor(n, true))
					checkAlltoall[float64](t, cs, algo, countsFor(n, false))
					checkAlltoall[int32](t, cs, algo, countsFor(n, false))
					checkAlltoall[uint8](t, cs, algo, countsFor(n, false))
					checkAlltoall[codec.BFloat16](t, cs, algo, countsFor(n, false))
				})
			}
		})
	}
}

// checkAlltoall runs Alltoall with b elements per block for each b of
// sizes: rank j's recv must hold block j of every rank's send, in rank
// order, and send must be left as it was.
func checkAlltoall[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, sizes []int) {
	t.Helper()
	n := len(cs)
	for _, b := range sizes {
		t.Run(fmt.Sprintf("%s/block=%d", kernel.DTypeOf[T](), b), func(t *testing.T) {
			inputs := make([][]T, n)
			for r := range n {
				inputs[r] = input[T](r, n*b, b)
			}
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				send := place(t, me, slices.Clone(inputs[me]))
				recv := place(t, me, poisoned[T](n*b))
				if err := Alltoall(ctx, c, send, recv, WithAlgorithm(algo)); err != nil {
					return err
				}
				if err := equalBits(send, inputs[me]); err != nil {
					return fmt.Errorf("send changed: %w", err)
				}
				want := make([]T, 0, n*b)
				for r := range n {
					want = append(want, inputs[r][me*b:(me+1)*b]...)
				}
				return equalBits(recv, want)
			})
		})
	}
}

func TestAlltoallOverTCP(t *testing.T) {
	for _, n := range []int{3, 4} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n, comm.WithTransport("tcp"))
			checkAlltoall[float32](t, cs, Pairwise, []int{0, 5, 10000})
		})
	}
}

func TestAlltoallRefusesBadArguments(t *testing.T) {
	t.Run("not a multiple of the ranks", func(t *testing.T) {
		requireRefused(t, 3, []int{0, 1, 2}, func(ctx context.Context, c *comm.Comm) error {
			return Alltoall(ctx, c, make([]float32, 7), make([]float32, 7))
		}, "Alltoall(7 × float32)", "send has 7 elements and recv 7; both need the same multiple of Size() = 3")
	})
	t.Run("recv length", func(t *testing.T) {
		requireRefused(t, 3, []int{2}, func(ctx context.Context, c *comm.Comm) error {
			return Alltoall(ctx, c, make([]float32, 6), make([]float32, 6+c.Rank()/2*3))
		}, "send has 6 elements and recv 9")
	})
	t.Run("algorithm", func(t *testing.T) {
		requireRefused(t, 2, []int{0, 1}, func(ctx context.Context, c *comm.Comm) error {
			return Alltoall(ctx, c, make([]float32, 4), make([]float32, 4), WithAlgorithm(Ring))
		}, "Alltoall has no ring algorithm")
	})
	t.Run("mismatched count", func(t *testing.T) {
		requireMismatch(t, 4, func(ctx context.Context, c *comm.Comm) error {
			b := 3 + c.Rank()%2
			return Alltoall(ctx, c, make([]uint8, 4*b), make([]uint8, 4*b))
		}, nil)
	})
	// Through a segment: the fast lines, the slots, registered buffers.
	for _, tc := range []struct {
		name       string
		b          int
		registered bool
	}{{"shm/fast line", 3, false}, {"shm/slots", 100000, false}, {"shm/registered", 100000, true}} {
		t.Run("mismatched count/"+tc.name, func(t *testing.T) {
			if tc.registered {
				useRegistered(t, func(int) bool { return true })
			}
			requireMismatch(t, 4, func(ctx context.Context, c *comm.Comm) error {
				b, me := tc.b+c.Rank()%2, c.Rank()
				return Alltoall(ctx, c, place(t, me, make([]uint8, 4*b)), place(t, me, make([]uint8, 4*b)))
			}, nil, comm.WithTransport("auto"))
		})
	}
}
