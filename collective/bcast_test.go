package collective

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
)

var bcastAlgorithms = []Algorithm{
	Auto, Tree, Linear, Chain, ScatterAllgather,
}

func TestBcast(t *testing.T) {
	for _, algo := range bcastAlgorithms {
		t.Run(algo.String(), func(t *testing.T) {
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					cs := job(t, n)
					rootedCase(t, n, func(t *testing.T, root int, full bool) {
						checkBcast[float32](t, cs, algo, root, countsFor(n, full))
						checkBcast[float64](t, cs, algo, root, countsFor(n, false))
						checkBcast[int32](t, cs, algo, root, countsFor(n, false))
						checkBcast[uint8](t, cs, algo, root, countsFor(n, false))
						checkBcast[codec.BFloat16](t, cs, algo, root, countsFor(n, false))
					})
				})
			}
		})
	}
}

// checkBcast broadcasts root's input with each count and checks every
// rank's buf against it. The small chunk size makes Chain pipeline even
// the mid-size counts, with more chunks than it keeps receives posted.
// Every rank passes opts after the algorithm.
func checkBcast[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, root int, sizes []int, opts ...Option) {
	t.Helper()
	n := len(cs)
	for _, count := range sizes {
		t.Run(fmt.Sprintf("%s/count=%d", kernel.DTypeOf[T](), count), func(t *testing.T) {
			inputs := make([][]T, n)
			for r := range n {
				inputs[r] = input[T](r, count, count+root)
			}
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				buf := place(t, c.Rank(), slices.Clone(inputs[c.Rank()]))
				if err := Bcast(ctx, c, buf, root, append([]Option{WithAlgorithm(algo), WithChunkSize(512)}, opts...)...); err != nil {
					return err
				}
				return equalBits(buf, inputs[root])
			})
		})
	}
}

// TestBcastChainChunks: chunk sizes from one element up to more than the
// buffer give the same result.
func TestBcastChainChunks(t *testing.T) {
	const count = 777
	cs := job(t, 5)
	for _, chunk := range []int{1, 4, 12, 4096, 1 << 20} {
		t.Run(fmt.Sprint("chunk=", chunk), func(t *testing.T) {
			want := input[int32](2, count, chunk)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				buf := make([]int32, count)
				if c.Rank() == 2 {
					copy(buf, want)
				}
				if err := Bcast(ctx, c, buf, 2, WithAlgorithm(Chain), WithChunkSize(chunk)); err != nil {
					return err
				}
				return equalBits(buf, want)
			})
		})
	}
}

func TestBcastRefusesBadArguments(t *testing.T) {
	t.Run("root out of range", func(t *testing.T) {
		requireRefused(t, 4, []int{0, 1, 2, 3}, func(ctx context.Context, c *comm.Comm) error {
			return Bcast(ctx, c, make([]uint8, 10), 7)
		}, "Bcast", "root 7 is outside the communicator of 4 ranks")
	})
	t.Run("algorithm on one rank", func(t *testing.T) {
		requireRefused(t, 3, []int{1}, func(ctx context.Context, c *comm.Comm) error {
			algo := Tree
			if c.Rank() == 1 {
				algo = Bruck
			}
			return Bcast(ctx, c, make([]uint8, 10), 0, WithAlgorithm(algo))
		}, "Bcast has no bruck algorithm")
	})
	t.Run("mismatched count", func(t *testing.T) {
		for _, algo := range bcastAlgorithms[1:] {
			t.Run(algo.String(), func(t *testing.T) {
				requireMismatch(t, 3, func(ctx context.Context, c *comm.Comm) error {
					return Bcast(ctx, c, make([]float64, 9+c.Rank()), 0, WithAlgorithm(algo))
				}, nil)
			})
		}
	})
}

// TestChunkCap: however small the chunk size, a pipelined algorithm cuts
// a buffer into at most MaxChunks chunks (RingChunked: each block), and
// the result is still right.
func TestChunkCap(t *testing.T) {
	const n, count = 3, 1 << 16 // 256 KiB of int32: 262144 one-byte chunks uncapped
	tests := []struct {
		name string
		call func(ctx context.Context, c *comm.Comm, buf []int32) error
		// most is the messages all ranks may send in all: MaxChunks per
		// link a chunked buffer crosses.
		most int
	}{
		{"chain bcast", func(ctx context.Context, c *comm.Comm, buf []int32) error {
			return Bcast(ctx, c, buf, 1, WithAlgorithm(Chain), WithChunkSize(1))
		}, (n - 1) * MaxChunks},
		{"ring chunked allreduce", func(ctx context.Context, c *comm.Comm, buf []int32) error {
			return Allreduce(ctx, c, buf, codec.Sum, WithAlgorithm(RingChunked), WithChunkSize(1))
		}, n * 2 * (n - 1) * MaxChunks},
	}
	cs := job(t, n)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sent atomic.Int64
			sentHook = func() { sent.Add(1) }
			defer func() { sentHook = nil }()
			bufs := make([][]int32, n)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				bufs[c.Rank()] = input[int32](1, count, 7)
				return tt.call(ctx, c, bufs[c.Rank()])
			})
			require.LessOrEqual(t, sent.Load(), int64(tt.most))
			require.Greater(t, sent.Load(), int64(tt.most/2), "the chunks are not as small as the cap allows")
			for r := 1; r < n; r++ {
				require.NoError(t, equalBits(bufs[r], bufs[0]), "rank %d", r)
			}
		})
	}
}
