package collective

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
)

var allgatherAlgorithms = []Algorithm{
	Auto, Bruck, Ring, RecursiveDoubling,
}

func TestAllgather(t *testing.T) {
	for _, algo := range allgatherAlgorithms {
		t.Run(algo.String(), func(t *testing.T) {
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					cs := job(t, n)
					checkAllgather[float32](t, cs, algo, countsFor(n, true))
					checkAllgather[float64](t, cs, algo, countsFor(n, false))
					checkAllgather[int32](t, cs, algo, countsFor(n, false))
					checkAllgather[uint8](t, cs, algo, countsFor(n, false))
					checkAllgather[codec.BFloat16](t, cs, algo, countsFor(n, false))
				})
			}
		})
	}
}

// poisoned is a buffer of n elements that no input contains (inputs are
// 0…4), so an element the collective forgets to write shows.
func poisoned[T codec.Elem](n int) []T {
	return slices.Repeat([]T{fromInt[T](9)}, n)
}

// checkAllgather runs Allgather with each per-rank count, once with
// separate buffers and once in place (send is recv's own block), and
// compares every rank's recv with the concatenated inputs.
func checkAllgather[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, sizes []int, opts ...Option) {
	t.Helper()
	n := len(cs)
	opts = append(opts, WithAlgorithm(algo))
	for _, count := range sizes {
		inputs := make([][]T, n)
		var want []T
		for r := range n {
			inputs[r] = input[T](r, count, count)
			want = append(want, inputs[r]...)
		}
		if want == nil {
			want = []T{}
		}
		for _, inPlace := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/count=%d/inplace=%v", kernel.DTypeOf[T](), count, inPlace), func(t *testing.T) {
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					me := c.Rank()
					recv := place(t, me, poisoned[T](n*count))
					send := place(t, me, slices.Clone(inputs[me]))
					if inPlace {
						copy(recv[me*count:], send)
						send = recv[me*count : (me+1)*count]
					}
					if err := Allgather(ctx, c, send, recv, opts...); err != nil {
						return err
					}
					return equalBits(recv, want)
				})
			})
		}
	}
}

func TestAllgatherv(t *testing.T) {
	for _, n := range rankCounts {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n)
			checkAllgatherv[float32](t, cs, Ring, countsFor(n, true))
			checkAllgatherv[float64](t, cs, Ring, countsFor(n, false))
			checkAllgatherv[int32](t, cs, Ring, countsFor(n, false))
			checkAllgatherv[uint8](t, cs, Ring, countsFor(n, false))
			checkAllgatherv[codec.BFloat16](t, cs, Ring, countsFor(n, false))
		})
	}
}

// varCounts are the per-rank counts of Allgatherv tests around base: the
// same count everywhere, and counts that differ by rank with some ranks
// (every third, rank 0 among them) contributing nothing.
func varCounts(n, base int) [][]int {
	same, mixed := make([]int, n), make([]int, n)
	for r := range n {
		same[r] = base
		mixed[r] = base * (r % 3) / 2
	}
	return [][]int{same, mixed}
}

func checkAllgatherv[T codec.Elem](t *testing.T, cs []*comm.Comm, algo Algorithm, sizes []int) {
	t.Helper()
	n := len(cs)
	for _, base := range sizes {
		for _, cnts := range varCounts(n, base) {
			t.Run(fmt.Sprintf("%s/counts=%v", kernel.DTypeOf[T](), cnts[:min(n, 4)]), func(t *testing.T) {
				inputs := make([][]T, n)
				want := []T{}
				for r := range n {
					inputs[r] = input[T](r, cnts[r], base)
					want = append(want, inputs[r]...)
				}
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					me := c.Rank()
					recv := place(t, me, poisoned[T](len(want)))
					if err := Allgatherv(ctx, c, place(t, me, slices.Clone(inputs[me])), recv, cnts, WithAlgorithm(algo)); err != nil {
						return err
					}
					return equalBits(recv, want)
				})
			})
		}
	}
}

// TestAllgatherOverTCP runs every algorithm over real sockets.
func TestAllgatherOverTCP(t *testing.T) {
	for _, n := range []int{3, 4} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n, comm.WithTransport("tcp"))
			for _, algo := range allgatherAlgorithms[1:] {
				checkAllgather[float32](t, cs, algo, []int{0, 5, 10000})
			}
			checkAllgatherv[int32](t, cs, Ring, []int{5, 10000})
		})
	}
}

func TestAllgatherRefusesBadArguments(t *testing.T) {
	t.Run("recv length", func(t *testing.T) {
		requireRefused(t, 3, []int{1}, func(ctx context.Context, c *comm.Comm) error {
			recv := make([]float32, 12+c.Rank())
			return Allgather(ctx, c, make([]float32, 4), recv)
		}, "Allgather(12 × float32)", "recv has 13 elements, want Size()·len(send) = 3·4 = 12")
	})
	t.Run("algorithm", func(t *testing.T) {
		requireRefused(t, 2, []int{0, 1}, func(ctx context.Context, c *comm.Comm) error {
			return Allgather(ctx, c, make([]float32, 4), make([]float32, 8), WithAlgorithm(Tree))
		}, "Allgather has no tree algorithm")
	})
	for _, algo := range allgatherAlgorithms[1:] {
		t.Run("mismatched count/"+algo.String(), func(t *testing.T) {
			requireMismatch(t, 3, func(ctx context.Context, c *comm.Comm) error {
				m := 4 + c.Rank()
				return Allgather(ctx, c, make([]int64, m), make([]int64, 3*m), WithAlgorithm(algo))
			}, nil)
		})
	}
}

func TestAllgathervRefusesBadArguments(t *testing.T) {
	tests := []struct {
		name string
		bad  []int
		call rankCall
		want []string
	}{
		{
			name: "too few counts",
			bad:  []int{0, 1, 2},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Allgatherv(ctx, c, make([]float32, 1), make([]float32, 2), []int{1, 1})
			},
			want: []string{"Allgatherv(2 × float32)", "2 counts for 3 ranks"},
		},
		{
			name: "negative count",
			bad:  []int{0, 1, 2},
			call: func(ctx context.Context, c *comm.Comm) error {
				cnts := []int{2, -1, 2}
				return Allgatherv(ctx, c, make([]float32, max(cnts[c.Rank()], 0)), make([]float32, 3), cnts)
			},
			want: []string{"counts[1] is -1"},
		},
		{
			name: "send length",
			bad:  []int{2},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Allgatherv(ctx, c, make([]float32, 2), make([]float32, 6), []int{2, 2, 2 + c.Rank()/2})
			},
			want: []string{"send has 2 elements, want counts[2] = 3"},
		},
		{
			name: "recv length",
			bad:  []int{0},
			call: func(ctx context.Context, c *comm.Comm) error {
				total := 6
				if c.Rank() == 0 {
					total = 7
				}
				return Allgatherv(ctx, c, make([]float32, 2), make([]float32, total), []int{2, 2, 2})
			},
			want: []string{"recv has 7 elements, want sum(counts) = 6"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireRefused(t, 3, tt.bad, tt.call, tt.want...)
		})
	}
	t.Run("mismatched counts", func(t *testing.T) {
		// Same total, different split: caught by the block sizes.
		requireMismatch(t, 3, func(ctx context.Context, c *comm.Comm) error {
			cnts := []int{2, 2, 2}
			if c.Rank() == 1 {
				cnts = []int{1, 3, 2}
			}
			return Allgatherv(ctx, c, make([]float32, cnts[c.Rank()]), make([]float32, 6), cnts)
		}, nil)
	})
	// Through a shared segment the call record holds only the total: each
	// rank's own count goes ahead of its part, in its fast line, its slot
	// of the first round or, registered, its buffer's length.
	for _, tc := range []struct {
		name       string
		count      int // per rank, before rank 1 moves one element
		registered bool
	}{
		{"shm/fast line", 2, false},
		{"shm/slots", 100000, false},
		{"shm/registered", 100000, true},
	} {
		t.Run("mismatched counts/"+tc.name, func(t *testing.T) {
			if tc.registered {
				useRegistered(t, func(int) bool { return true })
			}
			m := tc.count
			requireMismatch(t, 3, func(ctx context.Context, c *comm.Comm) error {
				cnts := []int{m, m, m}
				if c.Rank() == 1 {
					cnts = []int{m - 1, m + 1, m}
				}
				me := c.Rank()
				send, recv := place(t, me, make([]float32, cnts[me])), place(t, me, make([]float32, 3*m))
				return Allgatherv(ctx, c, send, recv, cnts)
			}, []string{"elements, but this rank's counts["}, comm.WithTransport("auto"))
		})
	}
	t.Run("mismatched totals/shm", func(t *testing.T) {
		requireMismatch(t, 3, func(ctx context.Context, c *comm.Comm) error {
			cnts := []int{2, 2, 2}
			if c.Rank() == 2 {
				cnts = []int{2, 2, 3}
			}
			return Allgatherv(ctx, c, make([]float32, cnts[c.Rank()]), make([]float32, cnts[0]+cnts[1]+cnts[2]), cnts)
		}, nil, comm.WithTransport("auto"))
	})
}

// first is a non-commutative op (a∘b = a) for the allocation test, so
// that the paths that combine with the peer on the left are measured.
var first = codec.NewOp("first", func(dst, src []float32) {}, false)

// TestUnrootedAllocatesNothing: once links and pools are warm, Allgather,
// Allgatherv, ReduceScatter, Alltoall, Barrier, Scan and Exscan allocate
// nothing, on any rank.
func TestUnrootedAllocatesNothing(t *testing.T) {
	if raceEnabled || !codec.Aliasing {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items) and in the purego build (views copy)")
	}
	const n, count = 5, 3000
	cnts := []int{count, 0, 2 * count, count, 1}
	total := 4*count + 1
	type op struct {
		name string
		run  func(ctx context.Context, c *comm.Comm, a, b []float32) error
	}
	var ops []op
	for _, algo := range slices.Concat(allgatherAlgorithms[1:], []Algorithm{Shm}) {
		ops = append(ops, op{"Allgather/" + algo.String(), func(ctx context.Context, c *comm.Comm, a, b []float32) error {
			return Allgather(ctx, c, a[:count], b[:n*count], WithAlgorithm(algo))
		}})
	}
	ops = append(ops, op{"Allgatherv", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Allgatherv(ctx, c, a[:cnts[c.Rank()]], b[:total], cnts)
	}})
	// Small enough for a segment's fast lines.
	small := []int{2, 0, 3, 1, 1}
	ops = append(ops, op{"Allgatherv/small", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Allgatherv(ctx, c, a[:small[c.Rank()]], b[:7], small)
	}})
	for _, o := range []struct {
		algo Algorithm
		op   codec.Op
	}{{Ring, codec.Sum}, {RecursiveHalving, codec.Sum}, {RecursiveHalving, first}} {
		ops = append(ops, op{fmt.Sprintf("ReduceScatter/%s/%s", o.algo, o.op), func(ctx context.Context, c *comm.Comm, a, b []float32) error {
			return ReduceScatter(ctx, c, b[:n*count], a[:count], o.op, WithAlgorithm(o.algo))
		}})
	}
	ops = append(ops, op{"Alltoall", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Alltoall(ctx, c, b[:n*count], b[n*count:2*n*count])
	}}, op{"Alltoall/small", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Alltoall(ctx, c, b[:n], b[n:2*n])
	}}, op{"Barrier", func(ctx context.Context, c *comm.Comm, a, b []float32) error {
		return Barrier(ctx, c)
	}})
	for _, sop := range []codec.Op{codec.Sum, first} {
		ops = append(ops, op{"Scan/" + sop.String(), func(ctx context.Context, c *comm.Comm, a, b []float32) error {
			return Scan(ctx, c, a[:count], sop)
		}}, op{"Exscan/" + sop.String(), func(ctx context.Context, c *comm.Comm, a, b []float32) error {
			return Exscan(ctx, c, a[:count], sop)
		}})
	}
	for _, tr := range []string{"mem", "tcp", "auto"} {
		for _, o := range ops {
			if shmOnly(o.name) && tr != "auto" {
				continue
			}
			t.Run(tr+"/"+o.name, func(t *testing.T) {
				const rounds = 50
				cs := job(t, n, comm.WithTransport(tr))
				ctx := context.Background()
				others := make(chan error, n-1)
				for _, c := range cs[1:] {
					go func() {
						a, b := make([]float32, 2*count), make([]float32, 2*n*count)
						for range rounds + 2 {
							if err := o.run(ctx, c, a, b); err != nil {
								others <- err
								return
							}
						}
						others <- nil
					}()
				}
				a, b := make([]float32, 2*count), make([]float32, 2*n*count)
				step := func() {
					if err := o.run(ctx, cs[0], a, b); err != nil {
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

// TestAllgatherOwnUnused: an Allgather whose caller never reads its own
// part leaves that part of recv as it was where it goes through the
// segment's slots, and fills every other rank's part; elsewhere it may
// fill it too.
func TestAllgatherOwnUnused(t *testing.T) {
	const count = 3000 // bytes per rank, past a fast line
	for _, tr := range []string{"shm", "mem"} {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := job(t, n, comm.WithTransport(tr))
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					part := func(r int) []byte { return bytes.Repeat([]byte{byte(r + 1)}, count) }
					recv := bytes.Repeat([]byte{0xee}, n*count)
					if err := allgather(ctx, c, part(c.Rank()), recv, true, nil); err != nil {
						return err
					}
					for r := range n {
						got := recv[r*count : (r+1)*count]
						switch {
						case r != c.Rank() && !bytes.Equal(got, part(r)):
							return fmt.Errorf("rank %d's part differs", r)
						case r == c.Rank() && tr == "shm" && !bytes.Equal(got, bytes.Repeat([]byte{0xee}, count)):
							return fmt.Errorf("its own part was written")
						}
					}
					return nil
				})
			})
		}
	}
}
