package collective

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
)

// rootsOf are the roots a rooted collective is checked with on n ranks:
// all of them on small jobs, the first, second and last on larger ones.
func rootsOf(n int) []int {
	if n <= 5 {
		roots := make([]int, n)
		for i := range roots {
			roots[i] = i
		}
		return roots
	}
	return []int{0, 1, n - 1}
}

// rootedCase runs check once per root of rootsOf(n) as a subtest, telling
// it whether it is the case that runs the largest count: the last root
// with float32.
func rootedCase(t *testing.T, n int, check func(t *testing.T, root int, full bool)) {
	roots := rootsOf(n)
	for i, root := range roots {
		t.Run(fmt.Sprint("root=", root), func(t *testing.T) {
			check(t, root, i == len(roots)-1)
		})
	}
}

func TestReduce(t *testing.T) {
	for _, algo := range []Algorithm{Auto, Tree, Rabenseifner} {
		t.Run(algo.String(), func(t *testing.T) {
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					cs := job(t, n)
					rootedCase(t, n, func(t *testing.T, root int, full bool) {
						checkReduce[float32](t, cs, algo, codec.Sum, root, countsFor(n, full))
						checkReduce[float64](t, cs, algo, codec.Avg, root, countsFor(n, false))
						checkReduce[int32](t, cs, algo, codec.Prod, root, countsFor(n, false))
						checkReduce[uint8](t, cs, algo, codec.Xor, root, countsFor(n, false))
						checkReduce[codec.BFloat16](t, cs, algo, codec.Max, root, countsFor(n, false))
						checkReduce[uint64](t, cs, algo, packedMatMul, root, countsFor(n, false))
					})
				})
			}
		})
	}
}

// TestReduceSegments: Reduce's tree in segments of a few elements, many
// more than a rank keeps receives posted for, with a commutative and a
// non-commutative op, at every job size and root.
func TestReduceSegments(t *testing.T) {
	for _, n := range rankCounts {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n)
			rootedCase(t, n, func(t *testing.T, root int, _ bool) {
				sizes := []int{0, 1, n + 1, 1000}
				checkReduce[float32](t, cs, Tree, codec.Sum, root, sizes, WithChunkSize(24))
				checkReduce[uint64](t, cs, Tree, packedMatMul, root, sizes, WithChunkSize(24))
			})
		})
	}
}

// checkReduce runs Reduce with each count and compares root's result
// with the sequential reference bit for bit, and every other rank's buf
// with its input: Reduce must not write there. The ranks take turns
// calling Reduce, ReduceInto from a send buffer into another (a rank
// other than root passing a recv of its own, which must stay as it was,
// or nil) and ReduceInto with one slice for both; every send must come
// back unchanged.
// Every rank passes opts after the algorithm.
func checkReduce[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, op codec.Op, root int, sizes []int, opts ...Option) {
	t.Helper()
	n := len(cs)
	opts = append([]Option{WithAlgorithm(algo)}, opts...)
	for i, count := range sizes {
		turn := i + root + int(kernel.DTypeOf[T]())
		t.Run(fmt.Sprintf("%s/%s/count=%d", kernel.DTypeOf[T](), op, count), func(t *testing.T) {
			inputs := make([][]T, n)
			for r := range n {
				inputs[r] = input[T](r, count, count+root)
			}
			want := reference(op, inputs)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				send := slices.Clone(inputs[me])
				buf, untouched := send, []T(nil) // buf holds root's result; untouched must stay as it was
				var err error
				switch (me + turn) % 3 {
				case 0:
					err = Reduce(ctx, c, send, op, root, opts...)
				case 1:
					buf = make([]T, count)
					if me != root && count%2 == 0 {
						buf = nil
					}
					untouched = slices.Clone(buf)
					err = ReduceInto(ctx, c, send, buf, op, root, opts...)
				default:
					err = ReduceInto(ctx, c, send, send, op, root, opts...)
				}
				if err != nil {
					return err
				}
				switch {
				case me == root:
					if err := equalBits(buf, want); err != nil || sameSlice(send, buf) {
						return err // in place, send holds the result
					}
				case untouched != nil:
					if err := equalBits(buf, untouched); err != nil {
						return fmt.Errorf("recv of non-root rank %d changed: %w", me, err)
					}
				}
				if err := equalBits(send, inputs[me]); err != nil {
					return fmt.Errorf("send of rank %d changed: %w", me, err)
				}
				return nil
			})
		})
	}
}

// reduceMatMul is a non-commutative op: each run of four float64 is a
// 2×2 matrix, and dst = dst · src.
var reduceMatMul = codec.NewOp("matmul", func(dst, src []float64) {
	for i := 0; i+3 < len(dst); i += 4 {
		a0, a1, a2, a3 := dst[i], dst[i+1], dst[i+2], dst[i+3]
		b0, b1, b2, b3 := src[i], src[i+1], src[i+2], src[i+3]
		dst[i], dst[i+1], dst[i+2], dst[i+3] = a0*b0+a1*b2, a0*b1+a1*b3, a2*b0+a3*b2, a2*b1+a3*b3
	}
}, false)

// reduceMatrices is rank r's input: m matrices of small integers, so
// every product over eight ranks is exact, and neither the reverse nor
// any rotation of the rank order gives the same products.
func reduceMatrices(r, m int) []float64 {
	s := make([]float64, 0, 4*m)
	for j := range m {
		s = append(s, float64((r+j)%2+1), float64((r+j)%3), float64((r*j+r+1)%2), 1)
	}
	return s
}

// TestReduceNonCommutative: a non-commutative op reduces in rank order
// whatever the root, and non-root buffers stay as they were.
func TestReduceNonCommutative(t *testing.T) {
	for _, n := range rankCounts {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n)
			for _, root := range rootsOf(n) {
				for _, m := range []int{0, 1, 3, 300} {
					t.Run(fmt.Sprintf("root=%d/matrices=%d", root, m), func(t *testing.T) {
						inputs := make([][]float64, n)
						for r := range n {
							inputs[r] = reduceMatrices(r, m)
						}
						want := reference(reduceMatMul, inputs)
						if n > 1 && m > 0 {
							other := slices.Clone(inputs)
							slices.Reverse(other)
							require.Error(t, equalBits(reference(reduceMatMul, other), want), "the inputs must tell the reverse order apart")
							if root != 0 {
								other = slices.Concat(inputs[root:], inputs[:root])
								require.Error(t, equalBits(reference(reduceMatMul, other), want), "the inputs must tell the order from root on apart")
							}
						}
						allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
							buf := slices.Clone(inputs[c.Rank()])
							if err := Reduce(ctx, c, buf, reduceMatMul, root); err != nil {
								return err
							}
							if c.Rank() == root {
								return equalBits(buf, want)
							}
							return equalBits(buf, inputs[c.Rank()])
						})
					})
				}
			}
		})
	}
}

// TestRootedOverTCP runs each rooted collective and algorithm over real
// sockets.
func TestRootedOverTCP(t *testing.T) {
	for _, n := range []int{3, 4} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n, comm.WithTransport("tcp"))
			for _, count := range []int{5, 10000} {
				root := n - 1
				t.Run(fmt.Sprint("count=", count), func(t *testing.T) {
					checkReduce[float64](t, cs, Tree, reduceMatMul, 0, []int{count})
					for _, algo := range []Algorithm{Tree, Rabenseifner} {
						checkReduce[float32](t, cs, algo, codec.Sum, root, []int{count})
						checkReduce[uint64](t, cs, algo, packedMatMul, 1, []int{count})
					}
					for _, algo := range []Algorithm{Tree, Linear, Chain, ScatterAllgather} {
						checkBcast[float32](t, cs, algo, root, []int{count})
					}
					for _, algo := range []Algorithm{Tree, Linear} {
						checkGather[float32](t, cs, algo, root, []int{count})
						checkScatter[float32](t, cs, algo, root, []int{count})
					}
					checkGatherv[int32](t, cs, Linear, root, []int{count})
					checkScatterv[int32](t, cs, Linear, root, []int{count})
				})
			}
		})
	}
}

func TestReduceRefusesBadArguments(t *testing.T) {
	t.Run("root out of range", func(t *testing.T) {
		requireRefused(t, 3, []int{0, 1, 2}, func(ctx context.Context, c *comm.Comm) error {
			return Reduce(ctx, c, make([]float32, 4), codec.Sum, 3)
		}, "Reduce", "root 3 is outside the communicator of 3 ranks")
	})
	t.Run("negative root on one rank", func(t *testing.T) {
		requireRefused(t, 3, []int{2}, func(ctx context.Context, c *comm.Comm) error {
			root := 0
			if c.Rank() == 2 {
				root = -1
			}
			return Reduce(ctx, c, make([]float32, 4), codec.Sum, root)
		}, "Reduce", "root -1 is outside the communicator of 3 ranks")
	})
	t.Run("algorithm", func(t *testing.T) {
		requireRefused(t, 2, []int{0, 1}, func(ctx context.Context, c *comm.Comm) error {
			return Reduce(ctx, c, make([]float32, 4), codec.Sum, 0, WithAlgorithm(Ring))
		}, "Reduce has no ring algorithm")
	})
	t.Run("mismatched count", func(t *testing.T) {
		requireMismatch(t, 3, func(ctx context.Context, c *comm.Comm) error {
			return Reduce(ctx, c, make([]int64, 4+c.Rank()), codec.Sum, 0)
		}, nil)
	})
}

// TestRootedAllocatesNothing: once links and pools are warm, the rooted
// collectives allocate nothing, on root or elsewhere. Each round ends
// with a one-element Allreduce, as a training step would: a rank that
// only sends (a leaf of Reduce's tree, say) would otherwise run rounds
// ahead, and the messages it piles up at the others, each buffered
// until its receive is posted, would be allocations of the test's
// making.
func TestRootedAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items)")
	}
	if !codec.Aliasing {
		t.Skip("the purego build copies every message through codec.Bytes")
	}
	const n, count = 4, 3000
	counts := []int{count, 0, 2 * count, count}
	total := 4 * count
	type op struct {
		name string
		run  func(ctx context.Context, c *comm.Comm, a, b []float32) error
	}
	var ops []op
	for _, algo := range []Algorithm{Tree, Linear, Chain, ScatterAllgather, Shm} {
		ops = append(ops, op{"Bcast/" + algo.String(), func(ctx context.Context, c *comm.Comm, a, b []float32) error {
			return Bcast(ctx, c, a[:count], 1, WithAlgorithm(algo), WithChunkSize(1024))
		}})
	}
	ops = append(ops, op{"Reduce", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Reduce(ctx, c, a[:count], codec.Sum, 1)
	}}, op{"Reduce/segments", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Reduce(ctx, c, a[:count], codec.Sum, 1, WithChunkSize(1024))
	}}, op{"Reduce/noncommutative", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Reduce(ctx, c, a[:count], allocMax, 2)
	}}, op{"Reduce/rabenseifner", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Reduce(ctx, c, a[:count], codec.Sum, 1, WithAlgorithm(Rabenseifner))
	}}, op{"ReduceInto", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return ReduceInto(ctx, c, a[:count], b[:count], codec.Sum, 1)
	}})
	for _, algo := range []Algorithm{Tree, Linear} {
		ops = append(ops, op{"Gather/" + algo.String(), func(ctx context.Context, c *comm.Comm, a, b []float32) error {
			return Gather(ctx, c, a[:count], b[:n*count], 1, WithAlgorithm(algo))
		}}, op{"Scatter/" + algo.String(), func(ctx context.Context, c *comm.Comm, a, b []float32) error {
			return Scatter(ctx, c, b[:n*count], a[:count], 3, WithAlgorithm(algo))
		}})
	}
	ops = append(ops, op{"Bcast/without receipts", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Bcast(ctx, c, a[:count], 1, WithReceipts(false))
	}}, op{"Gather/without receipts", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Gather(ctx, c, a[:count], b[:n*count], 1, WithReceipts(false))
	}})
	ops = append(ops, op{"Gather/shm", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Gather(ctx, c, a[:count], b[:n*count], 1, WithAlgorithm(Shm))
	}}, op{"Scatter/shm", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Scatter(ctx, c, b[:n*count], a[:count], 3, WithAlgorithm(Shm))
	}}, op{"Scatter/small/shm", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Scatter(ctx, c, b[:n], a[:1], 3, WithAlgorithm(Shm))
	}})
	ops = append(ops, op{"Gatherv", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Gatherv(ctx, c, a[:counts[c.Rank()]], b[:total], counts, 2)
	}}, op{"Scatterv", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Scatterv(ctx, c, b[:total], counts, a[:counts[c.Rank()]], 1)
	}})
	for _, tr := range []string{"mem", "tcp", "auto"} {
		for _, o := range ops {
			if shmOnly(o.name) && tr != "auto" {
				continue
			}
			t.Run(tr+"/"+o.name, func(t *testing.T) {
				const rounds = 50
				cs := job(t, n, comm.WithTransport(tr))
				ctx := context.Background()
				round := func(c *comm.Comm, a, b, sync []float32) error {
					if err := o.run(ctx, c, a, b); err != nil {
						return err
					}
					return Allreduce(ctx, c, sync, codec.Sum, WithAlgorithm(RecursiveDoubling))
				}
				others := make(chan error, n-1)
				for _, c := range cs[1:] {
					go func() {
						a, b, sync := make([]float32, 2*count), make([]float32, total), make([]float32, 1)
						for range rounds + 2 {
							if err := round(c, a, b, sync); err != nil {
								others <- err
								return
							}
						}
						others <- nil
					}()
				}
				a, b, sync := make([]float32, 2*count), make([]float32, total), make([]float32, 1)
				step := func() {
					if err := round(cs[0], a, b, sync); err != nil {
						t.Fatal(err)
					}
				}
				step() // warm-up
				allocs := steadyAllocs(rounds, step)
				for range cs[1:] {
					require.NoError(t, <-others)
				}
				require.Zero(t, allocs, "allocations per %s", o.name)
			})
		}
	}
}

// allocMax is a non-commutative user op (max is commutative, but the
// library may not know it), so that Reduce takes its rank-order path.
var allocMax = codec.NewOp("max", func(dst, src []float32) {
	for i := range dst {
		dst[i] = max(dst[i], src[i])
	}
}, false)

// TestReduceIntoRefusesBadArguments: a root whose recv is not as long as
// send, or overlaps it without being one slice, fails with ErrInvalid
// naming the sizes, and the others are aborted instead of left waiting.
// The others' recv, short and overlapping here, is not root's.
func TestReduceIntoRefusesBadArguments(t *testing.T) {
	const root = 1
	tests := []struct {
		name string
		call rankCall
		want string
	}{
		{
			name: "lengths",
			call: func(ctx context.Context, c *comm.Comm) error {
				recv := make([]float32, 4)
				if c.Rank() == root {
					recv = make([]float32, 3)
				}
				return ReduceInto(ctx, c, make([]float32, 4), recv, codec.Sum, root)
			},
			want: "send has 4 elements and root's recv 3",
		},
		{
			name: "overlap",
			call: func(ctx context.Context, c *comm.Comm) error {
				buf := make([]float32, 8)
				if c.Rank() == root {
					return ReduceInto(ctx, c, buf[:4], buf[2:6], codec.Sum, root)
				}
				return ReduceInto(ctx, c, buf[:4], buf[:1], codec.Sum, root)
			},
			want: "send and root's recv (4 elements) overlap",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireRefused(t, 3, []int{root}, tt.call, "Reduce(4 × float32, sum", tt.want)
		})
	}
}
