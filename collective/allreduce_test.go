package collective

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
)

var allreduceAlgorithms = []Algorithm{
	Auto, RecursiveDoubling, Ring, RingChunked,
	Rabenseifner, Tree,
}

func TestAllreduce(t *testing.T) {
	for _, algo := range allreduceAlgorithms {
		t.Run(algo.String(), func(t *testing.T) {
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					cs := job(t, n)
					checkAllreduce[float32](t, cs, algo, codec.Sum, countsFor(len(cs), true))
					checkAllreduce[float64](t, cs, algo, codec.Avg, countsFor(len(cs), false))
					checkAllreduce[int32](t, cs, algo, codec.Max, countsFor(len(cs), false))
					checkAllreduce[uint8](t, cs, algo, codec.Xor, countsFor(len(cs), false))
					checkAllreduce[codec.BFloat16](t, cs, algo, codec.Sum, countsFor(len(cs), false))
				})
			}
		})
	}
}

// checkAllreduce runs Allreduce with each of counts and compares each
// rank's result with the sequential reference, bit for bit. A small chunk
// size makes RingChunked pipeline even the mid-size counts.
func checkAllreduce[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, op codec.Op, counts []int) {
	t.Helper()
	n := len(cs)
	for _, count := range counts {
		inputs := make([][]T, n)
		for r := range n {
			inputs[r] = input[T](r, count, count)
		}
		want := reference(op, inputs)
		allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
			buf := place(t, c.Rank(), slices.Clone(inputs[c.Rank()]))
			err := Allreduce(ctx, c, buf, op, WithAlgorithm(algo), WithChunkSize(4096))
			if err != nil {
				return err
			}
			if err := equalBits(buf, want); err != nil {
				return fmt.Errorf("%s %s count %d: %w", kernel.DTypeOf[T](), op, count, err)
			}
			return nil
		})
	}
}

// TestAllreduceNaN: Min and Max propagate a NaN from any one rank to
// every rank, bit for bit, and order -0 below +0, on every algorithm
// (README, "NaN").
func TestAllreduceNaN(t *testing.T) {
	nan := math.Float32frombits(0x7fc00123) // a quiet NaN with a payload
	negZero := float32(math.Copysign(0, -1))
	for _, algo := range allreduceAlgorithms {
		for _, n := range []int{2, 3, 5} {
			t.Run(fmt.Sprintf("%s/n=%d", algo, n), func(t *testing.T) {
				cs := job(t, n)
				// Element 0 is NaN on the last rank only; element 1 is -0
				// on rank 0 and +0 elsewhere; element 2 is ordinary.
				inputs := make([][]float32, n)
				for r := range n {
					inputs[r] = []float32{float32(r), 0, float32(r)}
				}
				inputs[n-1][0] = nan
				inputs[0][1] = negZero
				for _, tc := range []struct {
					op   codec.Op
					want []float32
				}{
					{codec.Min, []float32{nan, negZero, 0}},
					{codec.Max, []float32{nan, 0, float32(n - 1)}},
				} {
					allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
						buf := slices.Clone(inputs[c.Rank()])
						if err := Allreduce(ctx, c, buf, tc.op, WithAlgorithm(algo)); err != nil {
							return err
						}
						if err := equalBits(buf, tc.want); err != nil {
							return fmt.Errorf("%s: %w", tc.op, err)
						}
						return nil
					})
				}
			})
		}
	}
}

// TestAllreduceNonCommutative: every algorithm that accepts a
// non-commutative op applies it in rank order. The op multiplies 2×2
// matrices packed element-wise (packedMatMul), and the test
// first checks that its inputs would expose any other order.
func TestAllreduceNonCommutative(t *testing.T) {
	for _, algo := range []Algorithm{Auto, RecursiveDoubling, Rabenseifner, Tree} {
		for _, n := range rankCounts {
			t.Run(fmt.Sprintf("%s/n=%d", algo, n), func(t *testing.T) {
				checkNonCommutative(t, job(t, n), algo)
			})
		}
	}
}

func checkNonCommutative(t *testing.T, cs []*comm.Comm, algo Algorithm) {
	t.Helper()
	op, n := packedMatMul, len(cs)
	for _, m := range []int{0, 1, 3, n + 1, 300, 70000} {
		inputs := make([][]uint64, n)
		for r := range n {
			inputs[r] = packedMatrices(r, m, m)
		}
		want := reference(op, inputs)
		if n > 1 && m > 0 {
			reversed := slices.Clone(inputs)
			slices.Reverse(reversed)
			require.Error(t, equalBits(reference(op, reversed), want), "inputs that do not expose the order test nothing")
		}
		allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
			buf := place(t, c.Rank(), slices.Clone(inputs[c.Rank()]))
			if err := Allreduce(ctx, c, buf, op, WithAlgorithm(algo)); err != nil {
				return err
			}
			if err := equalBits(buf, want); err != nil {
				return fmt.Errorf("%d matrices: %w", m, err)
			}
			return nil
		})
	}
}

func TestAllreduceRefusesReorderingNonCommutative(t *testing.T) {
	for _, algo := range []Algorithm{Ring, RingChunked} {
		t.Run(algo.String(), func(t *testing.T) {
			cs := job(t, 3)
			for r, err := range onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
				return Allreduce(ctx, c, packedMatrices(c.Rank(), 2, 0), packedMatMul, WithAlgorithm(algo))
			}) {
				require.ErrorIs(t, err, codec.ErrInvalid, "rank %d", r)
				require.ErrorContains(t, err, "out of rank order", "rank %d", r)
			}
		})
	}
}
