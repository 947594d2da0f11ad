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
	checkAllreduceMatrix(t)
}

// tcpWaits are the two ways a rank waits for what its tcp links bring:
// parked while the links' goroutines read them, as NewLocal's ranks do
// by default, and spinning, taking its messages off the socket itself,
// as the ranks of separate processes do by default (WithSpin).
var tcpWaits = []struct {
	name string
	opts []comm.Option
}{
	{"parked", []comm.Option{comm.WithTransport("tcp")}},
	{"spinning", []comm.Option{comm.WithTransport("tcp"), comm.WithSpin(comm.DefaultSpin)}},
}

// TestAllreduceOverTCP runs TestAllreduce's matrix over real sockets.
func TestAllreduceOverTCP(t *testing.T) {
	for _, tt := range tcpWaits {
		t.Run(tt.name, func(t *testing.T) { checkAllreduceMatrix(t, tt.opts...) })
	}
}

// checkAllreduceMatrix runs checkAllreduceTypes on every algorithm at
// every job size, the jobs made with opts.
func checkAllreduceMatrix(t *testing.T, opts ...comm.Option) {
	for _, algo := range allreduceAlgorithms {
		t.Run(algo.String(), func(t *testing.T) {
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					checkAllreduceTypes(t, job(t, n, opts...), algo)
				})
			}
		})
	}
}

// checkAllreduceTypes runs checkAllreduce with algo on the ranks cs in an
// element type of each kind, each with an op of its own; float32 is the
// full case of countsFor.
func checkAllreduceTypes(t *testing.T, cs []*comm.Comm, algo Algorithm) {
	t.Helper()
	n := len(cs)
	checkAllreduce[float32](t, cs, algo, codec.Sum, countsFor(n, true))
	checkAllreduce[float64](t, cs, algo, codec.Avg, countsFor(n, false))
	checkAllreduce[int32](t, cs, algo, codec.Max, countsFor(n, false))
	checkAllreduce[uint8](t, cs, algo, codec.Xor, countsFor(n, false))
	checkAllreduce[codec.BFloat16](t, cs, algo, codec.Sum, countsFor(n, false))
}

// checkAllreduce runs Allreduce with each of counts and compares each
// rank's result with the sequential reference, bit for bit. A small chunk
// size makes RingChunked pipeline even the mid-size counts. The ranks
// take turns, from count to count and element type to element type, at
// calling Allreduce in place, AllreduceInto from a send buffer of their
// own, which must come back unchanged, and AllreduceInto with one slice
// for both.
func checkAllreduce[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, op codec.Op, counts []int) {
	t.Helper()
	n := len(cs)
	for i, count := range counts {
		turn := i + int(kernel.DTypeOf[T]())
		inputs := make([][]T, n)
		for r := range n {
			inputs[r] = input[T](r, count, count)
		}
		want := reference(op, inputs)
		allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
			me := c.Rank()
			buf := place(t, me, slices.Clone(inputs[me]))
			var err error
			var send []T
			switch (me + turn) % 3 {
			case 0:
				err = Allreduce(ctx, c, buf, op, WithAlgorithm(algo), WithChunkSize(4096))
			case 1:
				send, buf = buf, place(t, me, make([]T, count))
				err = AllreduceInto(ctx, c, send, buf, op, WithAlgorithm(algo), WithChunkSize(4096))
			default:
				err = AllreduceInto(ctx, c, buf, buf, op, WithAlgorithm(algo), WithChunkSize(4096))
			}
			if err != nil {
				return err
			}
			if err := equalBits(buf, want); err != nil {
				return fmt.Errorf("%s %s count %d: %w", kernel.DTypeOf[T](), op, count, err)
			}
			if err := equalBits(send, inputs[me][:len(send)]); err != nil {
				return fmt.Errorf("%s %s count %d: AllreduceInto changed send: %w", kernel.DTypeOf[T](), op, count, err)
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
	checkNonCommutativeMatrix(t)
}

// TestAllreduceNonCommutativeOverTCP runs TestAllreduceNonCommutative's
// matrix over real sockets.
func TestAllreduceNonCommutativeOverTCP(t *testing.T) {
	for _, tt := range tcpWaits {
		t.Run(tt.name, func(t *testing.T) { checkNonCommutativeMatrix(t, tt.opts...) })
	}
}

// checkNonCommutativeMatrix runs checkNonCommutative on every algorithm
// that keeps rank order, at every job size, the jobs made with opts.
func checkNonCommutativeMatrix(t *testing.T, opts ...comm.Option) {
	for _, algo := range []Algorithm{Auto, RecursiveDoubling, Rabenseifner, Tree} {
		for _, n := range rankCounts {
			t.Run(fmt.Sprintf("%s/n=%d", algo, n), func(t *testing.T) {
				checkNonCommutative(t, job(t, n, opts...), algo)
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

// TestAllreduceIntoRefusesBadArguments: a rank whose send and recv differ
// in length, or overlap without being one slice, fails with ErrInvalid
// naming the sizes, and the others are aborted instead of left waiting.
func TestAllreduceIntoRefusesBadArguments(t *testing.T) {
	tests := []struct {
		name string
		bad  int
		call func(ctx context.Context, c *comm.Comm, bad bool) error
		want string
	}{
		{
			name: "lengths",
			bad:  1,
			call: func(ctx context.Context, c *comm.Comm, bad bool) error {
				send := make([]float32, 4)
				if bad {
					send = make([]float32, 5)
				}
				return AllreduceInto(ctx, c, send, make([]float32, 4), codec.Sum)
			},
			want: "send has 5 elements and recv 4",
		},
		{
			name: "overlap",
			bad:  0,
			call: func(ctx context.Context, c *comm.Comm, bad bool) error {
				buf := make([]float32, 8)
				if bad {
					return AllreduceInto(ctx, c, buf[:4], buf[2:6], codec.Sum)
				}
				return AllreduceInto(ctx, c, buf[:4], buf[4:], codec.Sum)
			},
			want: "send and recv (4 elements) overlap",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := job(t, 3, comm.WithTimeout(watchdog))
			for r, err := range onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
				return tt.call(ctx, c, c.Rank() == tt.bad)
			}) {
				require.Error(t, err, "rank %d", r)
				if r != tt.bad {
					require.ErrorIs(t, err, comm.ErrAborted, "rank %d", r)
					continue
				}
				require.ErrorIs(t, err, codec.ErrInvalid, "rank %d", r)
				require.ErrorContains(t, err, fmt.Sprintf("on rank %d", r))
				require.ErrorContains(t, err, "Allreduce(4 × float32, sum)")
				require.ErrorContains(t, err, tt.want)
			}
		})
	}
}
