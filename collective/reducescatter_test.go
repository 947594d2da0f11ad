package collective

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// matMul is a non-commutative op: each run of four float64 is a 2×2
// matrix, and dst = dst · src.
var matMul = codec.NewOp("matmul", func(dst, src []float64) {
	for i := 0; i+3 < len(dst); i += 4 {
		a, b := dst[i:i+4:i+4], src[i:i+4:i+4]
		dst[i], dst[i+1], dst[i+2], dst[i+3] =
			a[0]*b[0]+a[1]*b[2], a[0]*b[1]+a[1]*b[3],
			a[2]*b[0]+a[3]*b[2], a[2]*b[1]+a[3]*b[3]
	}
}, false)

// matrices is rank r's input: m matrices with entries 0…3 that differ
// by rank, matrix and entry, so that products of eight are exact and
// (almost always) change when reordered.
func matrices(r, m int) []float64 {
	s := make([]float64, 4*m)
	for i := range s {
		s[i] = float64((r*7 + i/4*3 + i%4*5) % 4)
	}
	return s
}

// packedMatMul is a non-commutative op that, unlike matMul, is
// elementwise, as codec.NewOp requires of ops that algorithms may cut
// anywhere: each uint64 packs a 2×2 matrix of 16-bit entries, and dst =
// dst · src modulo 2^16.
var packedMatMul = codec.NewOp("packed matmul", func(dst, src []uint64) {
	for i, a := range dst {
		b := src[i]
		a0, a1, a2, a3 := a&0xffff, a>>16&0xffff, a>>32&0xffff, a>>48
		b0, b1, b2, b3 := b&0xffff, b>>16&0xffff, b>>32&0xffff, b>>48
		dst[i] = (a0*b0+a1*b2)&0xffff | (a0*b1+a1*b3)&0xffff<<16 |
			(a2*b0+a3*b2)&0xffff<<32 | (a2*b1+a3*b3)&0xffff<<48
	}
}, false)

// packedMatrices is rank r's input for packedMatMul: matrices with
// entries 0…2 that differ by rank and position.
func packedMatrices(r, n, seed int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		for e := range 4 {
			s[i] |= uint64((r*5+i*3+e*7+seed)%3) << (16 * e)
		}
	}
	return s
}

var reduceScatterAlgorithms = []Algorithm{Auto, Ring, RecursiveHalving}

func TestReduceScatter(t *testing.T) {
	for _, algo := range reduceScatterAlgorithms {
		t.Run(algo.String(), func(t *testing.T) {
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					cs := job(t, n)
					checkReduceScatter[float32](t, cs, algo, codec.Sum, countsFor(n, true))
					checkReduceScatter[float64](t, cs, algo, codec.Avg, countsFor(n, false))
					checkReduceScatter[int32](t, cs, algo, codec.Max, countsFor(n, false))
					checkReduceScatter[uint8](t, cs, algo, codec.Xor, countsFor(n, false))
					checkReduceScatter[codec.BFloat16](t, cs, algo, codec.Sum, countsFor(n, false))
				})
			}
		})
	}
}

// checkReduceScatter runs ReduceScatter with each block length m and
// checks every rank's recv against its block of the reference, and that
// send is left as it was.
func checkReduceScatter[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, op codec.Op, sizes []int) {
	t.Helper()
	n := len(cs)
	for _, m := range sizes {
		t.Run(fmt.Sprintf("%s/%s/m=%d", kernel.DTypeOf[T](), op, m), func(t *testing.T) {
			inputs := make([][]T, n)
			for r := range n {
				inputs[r] = input[T](r, n*m, m)
			}
			want := reference(op, inputs)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				send := place(t, me, slices.Clone(inputs[me]))
				recv := place(t, me, make([]T, m))
				if err := ReduceScatter(ctx, c, send, recv, op, WithAlgorithm(algo)); err != nil {
					return err
				}
				if err := equalBits(send, inputs[me]); err != nil {
					return fmt.Errorf("send changed: %w", err)
				}
				return equalBits(recv, want[me*m:(me+1)*m])
			})
		})
	}
}

// TestReduceScatterNonCommutative: RecursiveHalving, and the selector's
// choice, combine in rank order.
func TestReduceScatterNonCommutative(t *testing.T) {
	for _, algo := range []Algorithm{Auto, RecursiveHalving} {
		for _, n := range rankCounts {
			t.Run(fmt.Sprintf("%s/n=%d", algo, n), func(t *testing.T) {
				cs := job(t, n)
				for _, m := range []int{0, 1, 3, 300} {
					inputs := make([][]float64, n)
					for r := range n {
						inputs[r] = matrices(r, n*m)
					}
					want := reference(matMul, inputs)
					allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
						me := c.Rank()
						recv := make([]float64, 4*m)
						if err := ReduceScatter(ctx, c, inputs[me], recv, matMul, WithAlgorithm(algo)); err != nil {
							return err
						}
						return equalBits(recv, want[4*m*me:4*m*(me+1)])
					})
				}
			})
		}
	}
}

// TestHalvingDoublingAllreduce composes reduceScatterHalving and
// allgatherDoubling into Rabenseifner's allreduce, as allreduce.go does,
// for every rank count, buffers shorter than the rank count (empty
// blocks), commutative ops and a non-commutative one, and checks the
// ownership that reduceScatterHalving documents.
func TestHalvingDoublingAllreduce(t *testing.T) {
	for _, n := range rankCounts {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n)
			for _, count := range []int{0, 1, max(n-1, 0), n + 1, 1000} {
				checkHalvingDoubling[float32](t, cs, codec.Sum, count, input[float32])
				checkHalvingDoubling[int32](t, cs, codec.Prod, count, input[int32])
				checkHalvingDoubling[codec.BFloat16](t, cs, codec.Avg, count, input[codec.BFloat16])
				checkHalvingDoubling[uint64](t, cs, packedMatMul, count, packedMatrices)
			}
		})
	}
}

func checkHalvingDoubling[T codec.Elem](t *testing.T, cs []*comm.Comm, op codec.Op, count int, in func(r, n, seed int) []T) {
	t.Helper()
	n := len(cs)
	t.Run(fmt.Sprintf("%s/%s/count=%d", kernel.DTypeOf[T](), op, count), func(t *testing.T) {
		inputs := make([][]T, n)
		for r := range n {
			inputs[r] = in(r, count, count)
		}
		want := reference(op, inputs)
		allOK(t, cs, func(ctx context.Context, c *comm.Comm) (err error) {
			me := c.Rank()
			// Every other rank out of place, from a send buffer that must
			// stay as it was.
			from := slices.Clone(inputs[me])
			buf := from
			if (me+count)%2 == 1 {
				buf = make([]T, count)
			}
			var k call[T]
			if err = begin(&k, ctx, c, wire.KindAllreduce, op, len(buf), -1, nil); err != nil {
				return err
			}
			defer k.leave(&err)
			lo, hi, err := reduceScatterHalving(&k, from, buf, 0)
			if err != nil {
				return err
			}
			if !sameSlice(from, buf) {
				if err := equalBits(from, inputs[me]); err != nil {
					return fmt.Errorf("send buffer changed: %w", err)
				}
			}
			// The documented ownership: the blocks owned(me), complete. A
			// wrong one is reported after the doubling, which the other
			// ranks wait for.
			owned := checkOwned(&k, buf, lo, hi, want)
			if err := allgatherDoubling(&k, buf, lo, hi, halvingSteps); err != nil {
				return err
			}
			kernel.Finish(op, buf, n)
			if err := equalBits(buf, want); err != nil {
				return errors.Join(owned, err)
			}
			return owned
		})
	})
}

// checkOwned checks what reduceScatterHalving left: buf[lo:hi] are the
// blocks that halving.owned names, complete (want, finished, is the
// reduction of the whole buffer); a rank removed by the fold holds the
// empty range at 0.
func checkOwned[T codec.Elem](k *call[T], buf []T, lo, hi int, want []T) error {
	me, p, n := k.c.Rank(), k.c.Size(), len(buf)
	g := newHalving(k)
	if g.virtual(me) < 0 {
		if lo != 0 || hi != 0 {
			return fmt.Errorf("removed rank %d got buf[%d:%d], want an empty range at 0", me, lo, hi)
		}
		return nil
	}
	first, last := g.owned(me)
	a, _ := block(n, p, first)
	b, _ := block(n, p, last)
	if lo != a || hi != b {
		return fmt.Errorf("rank %d owns blocks [%d, %d) = buf[%d:%d], got buf[%d:%d]", me, first, last, a, b, lo, hi)
	}
	part := slices.Clone(buf[lo:hi])
	kernel.Finish(k.op, part, p)
	if err := equalBits(part, want[lo:hi]); err != nil {
		return fmt.Errorf("rank %d's blocks after halving: %w", me, err)
	}
	return nil
}

// TestHalvingOwnership pins the ownership map that reduceScatterHalving
// documents, on its own: every block has exactly one owner, owner and
// owned agree, and with a commutative op the survivors own their own
// blocks.
func TestHalvingOwnership(t *testing.T) {
	for p := 1; p <= 33; p++ {
		for _, ordered := range []bool{false, true} {
			lg := 0
			for 1<<(lg+1) <= p {
				lg++
			}
			g := halving{p: p, pof2: 1 << lg, rem: p - 1<<lg, lg: lg, ordered: ordered}
			seen := make([]int, p)
			for r := range p {
				first, last := g.owned(r)
				for i := first; i < last; i++ {
					seen[i]++
					require.Equal(t, r, g.owner(i), "p=%d ordered=%v block %d", p, ordered, i)
				}
				if !ordered && g.virtual(r) >= 0 {
					require.True(t, first <= r && r < last, "p=%d rank %d owns [%d, %d)", p, r, first, last)
				}
			}
			for i, s := range seen {
				require.Equal(t, 1, s, "p=%d ordered=%v: block %d has %d owners", p, ordered, i, s)
			}
		}
	}
}

func TestReduceScatterOverTCP(t *testing.T) {
	for _, n := range []int{3, 4} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n, comm.WithTransport("tcp"))
			for _, algo := range []Algorithm{Ring, RecursiveHalving} {
				checkReduceScatter[float32](t, cs, algo, codec.Sum, []int{0, 5, 10000})
			}
			checkHalvingDoubling[float32](t, cs, codec.Sum, 10001, input[float32])
		})
	}
}

func TestReduceScatterRefusesBadArguments(t *testing.T) {
	tests := []struct {
		name string
		n    int
		bad  []int
		call func(ctx context.Context, c *comm.Comm) error
		want []string
	}{
		{
			name: "send length",
			n:    3,
			bad:  []int{2},
			call: func(ctx context.Context, c *comm.Comm) error {
				return ReduceScatter(ctx, c, make([]float32, 12+c.Rank()/2), make([]float32, 4), codec.Sum)
			},
			want: []string{"ReduceScatter(13 × float32, sum)", "send has 13 elements, want Size()·len(recv) = 3·4 = 12"},
		},
		{
			name: "ring with a non-commutative op",
			n:    3,
			bad:  []int{0, 1, 2},
			call: func(ctx context.Context, c *comm.Comm) error {
				return ReduceScatter(ctx, c, matrices(c.Rank(), 3), make([]float64, 4), matMul, WithAlgorithm(Ring))
			},
			want: []string{"out of rank order"},
		},
		{
			name: "bitwise op on floats",
			n:    2,
			bad:  []int{0, 1},
			call: func(ctx context.Context, c *comm.Comm) error {
				return ReduceScatter(ctx, c, make([]float32, 4), make([]float32, 2), codec.Xor)
			},
			want: []string{"xor is not defined for float32"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := job(t, tt.n, comm.WithTimeout(watchdog))
			for r, err := range onEveryRank(t, cs, tt.call) {
				require.Error(t, err, "rank %d", r)
				if slices.Contains(tt.bad, r) {
					require.ErrorIs(t, err, codec.ErrInvalid, "rank %d", r)
					require.ErrorContains(t, err, fmt.Sprintf("on rank %d", r), "rank %d", r)
					for _, w := range tt.want {
						require.ErrorContains(t, err, w, "rank %d", r)
					}
					continue
				}
				require.ErrorIs(t, err, comm.ErrAborted, "rank %d", r)
			}
		})
	}
	for _, algo := range []Algorithm{Ring, RecursiveHalving} {
		t.Run("mismatched count/"+algo.String(), func(t *testing.T) {
			cs := job(t, 3, comm.WithTimeout(watchdog))
			seen := false
			for r, err := range onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
				m := 2 + c.Rank()%2
				return ReduceScatter(ctx, c, make([]int32, 3*m), make([]int32, m), codec.Sum, WithAlgorithm(algo))
			}) {
				if err == nil {
					continue
				}
				seen = seen || errors.Is(err, comm.ErrMismatch)
				require.True(t, errors.Is(err, comm.ErrMismatch) || errors.Is(err, comm.ErrAborted), "rank %d: %v", r, err)
			}
			require.True(t, seen, "no rank saw the mismatch")
		})
	}
}
