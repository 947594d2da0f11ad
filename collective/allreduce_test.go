package collective

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
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
					checkAllreduce[float32](t, cs, algo, Sum)
					checkAllreduce[float64](t, cs, algo, Avg)
					checkAllreduce[int32](t, cs, algo, Max)
					checkAllreduce[uint8](t, cs, algo, Xor)
					checkAllreduce[codec.BF16](t, cs, algo, Sum)
				})
			}
		})
	}
}

// checkAllreduce runs Allreduce with every count of counts(n) and compares
// each rank's result with the sequential reference, bit for bit. A small
// chunk size makes RingChunked pipeline even the mid-size counts.
func checkAllreduce[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, op codec.Op) {
	t.Helper()
	n := len(cs)
	for _, count := range counts(n) {
		inputs := make([][]T, n)
		for r := range n {
			inputs[r] = input[T](r, count, count)
		}
		want := reference(op, inputs)
		allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
			buf := append([]T(nil), inputs[c.Rank()]...)
			err := Allreduce(ctx, c, buf, op, WithAlgorithm(algo), WithChunkSize(4096))
			if err != nil {
				return err
			}
			if err := equalBits(buf, want); err != nil {
				return fmt.Errorf("%s %s count %d: %w", codec.DTypeOf[T](), op, count, err)
			}
			return nil
		})
	}
}

// TestAllreduceNonCommutative: every algorithm that accepts a
// non-commutative op applies it in rank order. The op multiplies 2×2
// matrices packed element-wise (packedMatMul), and the test
// first checks that its inputs would expose any other order.
func TestAllreduceNonCommutative(t *testing.T) {
	op := packedMatMul
	for _, algo := range []Algorithm{Auto, RecursiveDoubling, Rabenseifner, Tree} {
		for _, n := range rankCounts {
			t.Run(fmt.Sprintf("%s/n=%d", algo, n), func(t *testing.T) {
				cs := job(t, n)
				for _, m := range []int{0, 1, 3, n + 1, 300} {
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
						buf := slices.Clone(inputs[c.Rank()])
						if err := Allreduce(ctx, c, buf, op, WithAlgorithm(algo)); err != nil {
							return err
						}
						if err := equalBits(buf, want); err != nil {
							return fmt.Errorf("%d matrices: %w", m, err)
						}
						return nil
					})
				}
			})
		}
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

// TestAllreduceMismatch: ranks that disagree on the call each get an
// error naming both calls, well before the timeout.
func TestAllreduceMismatch(t *testing.T) {
	tests := []struct {
		name string
		call func(ctx context.Context, c *comm.Comm) error
		want []string
	}{
		{
			name: "count",
			call: func(ctx context.Context, c *comm.Comm) error {
				return Allreduce(ctx, c, make([]float32, 10+10*c.Rank()), Sum)
			},
			want: []string{"Allreduce(10 × float32, sum)", "Allreduce(20 × float32, sum)"},
		},
		{
			name: "dtype",
			call: func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 0 {
					return Allreduce(ctx, c, make([]float32, 8), Sum)
				}
				return Allreduce(ctx, c, make([]int32, 8), Sum)
			},
			want: []string{"8 × float32", "8 × int32"},
		},
		{
			name: "op",
			call: func(ctx context.Context, c *comm.Comm) error {
				op := Sum
				if c.Rank() == 1 {
					op = Max
				}
				return Allreduce(ctx, c, make([]float64, 8), op)
			},
			want: []string{"sum", "max"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := job(t, 2, comm.WithTimeout(watchdog))
			for r, err := range onEveryRank(t, cs, tt.call) {
				require.Error(t, err, "rank %d", r)
				require.True(t, errors.Is(err, ErrMismatch) || errors.Is(err, comm.ErrAborted), "rank %d: %v", r, err)
				for _, w := range tt.want {
					require.ErrorContains(t, err, w, "rank %d", r)
				}
			}
		})
	}
}

// TestMismatchAcrossCalls: ranks in different collectives, or in one
// collective with counts that choose different algorithms, exchange
// messages that never share a tag. Each rank must still fail fast with
// both calls named, not wait for the timeout. A rank whose part only sends
// (a root of Bcast) may finish before the news reaches it; it fails at
// its next call, which the test makes.
func TestMismatchAcrossCalls(t *testing.T) {
	const timeout = 20 * time.Second
	tests := []struct {
		name string
		call func(ctx context.Context, c *comm.Comm) error
		want []string
	}{
		{
			name: "allreduce vs bcast",
			call: func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					return Bcast(ctx, c, make([]float32, 10), 0)
				}
				return Allreduce(ctx, c, make([]float32, 10), Sum)
			},
			want: []string{"Bcast(10 × float32, root 0)", "Allreduce(10 × float32, sum)"},
		},
		{
			name: "counts that pick different algorithms",
			call: func(ctx context.Context, c *comm.Comm) error {
				n := 8
				if c.Rank() == 0 {
					n = 1 << 20
				}
				return Allreduce(ctx, c, make([]float32, n), Sum)
			},
			want: []string{"Allreduce(8 × float32, sum)", "Allreduce(1048576 × float32, sum)"},
		},
	}
	for _, tt := range tests {
		for _, n := range []int{2, 3, 4} {
			t.Run(fmt.Sprintf("%s/n=%d", tt.name, n), func(t *testing.T) {
				cs := job(t, n, comm.WithTimeout(timeout))
				start := time.Now()
				for r, err := range onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
					if err := tt.call(ctx, c); err != nil {
						return err
					}
					return Barrier(ctx, c)
				}) {
					require.Error(t, err, "rank %d", r)
					require.True(t, errors.Is(err, ErrMismatch) || errors.Is(err, comm.ErrAborted), "rank %d: %v", r, err)
					for _, w := range tt.want {
						require.ErrorContains(t, err, w, "rank %d", r)
					}
				}
				require.Less(t, time.Since(start), timeout/10, "the mismatch was found by the timeout, not by the check")
			})
		}
	}
}
