package collective

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// codecs are the wire codecs every data-moving collective is checked with.
var codecs = []codec.ID{codec.Zstd, codec.S2, codec.BF16, codec.FP16}

// linkAlgorithms are the algorithms of kind that send messages, and so
// compress: all but the shared-memory ones.
func linkAlgorithms(kind wire.Kind) []Algorithm {
	return slices.DeleteFunc(slices.Clone(wire.Algorithms(kind)), func(a Algorithm) bool {
		return a == Shm || a == Hierarchical
	})
}

// floatInput is rank r's input of n float32 values for a compression
// test: magnitudes spread over several binades and both signs, some
// repeated runs (which the lossless codecs shrink) and some noise (which
// they cannot), deterministic in r, n and seed.
func floatInput(r, n, seed int) []float32 {
	rng := rand.New(rand.NewPCG(uint64(r), uint64(n*1000+seed)))
	s := make([]float32, n)
	for i := range s {
		switch {
		case i%64 < 24:
			s[i] = float32(i%5) - 2
		default:
			s[i] = float32((rng.Float64()*2 - 1) * math.Ldexp(1, rng.IntN(12)-6))
		}
	}
	return s
}

// compressCounts are the lengths checked: empty, one element, fewer than
// ranks, and counts that take several 4 KiB chunks with a remainder.
func compressCounts(n int) []int {
	if raceEnabled {
		return []int{0, 1, n + 1, 3001}
	}
	return []int{0, 1, n + 1, 3001, 40000}
}

// rounded is what x becomes on the wire with c.
func rounded(c codec.ID, x []float32) []float32 {
	x = slices.Clone(x)
	kernel.Round(c, x)
	return x
}

// TestCompressionMoves: the collectives that move data without
// combining it deliver, with every link algorithm and codec, exactly the
// values that travelled: the senders' bits with a lossless codec, their
// rounded values with a lossy one. A rank's own data is rounded too where
// every rank holds the result (Bcast's root, each block of Allgather) so
// that all ranks hold the same bits; where it stays on one rank (Gather's
// root, Scatter's root, Alltoall) it does not travel and is not rounded.
func TestCompressionMoves(t *testing.T) {
	type move struct {
		kind wire.Kind
		// run is rank c.Rank()'s part, with inputs[r] the data of rank
		// r; want is what rank r must hold after it, with round applied
		// to every value that travelled (or kept as the senders' copy).
		run  func(ctx context.Context, c *comm.Comm, inputs [][]float32, opts []Option) ([]float32, error)
		want func(r int, inputs [][]float32, round func([]float32) []float32) []float32
	}
	const root = 1
	moves := map[string]move{
		"bcast": {wire.KindBcast,
			func(ctx context.Context, c *comm.Comm, in [][]float32, opts []Option) ([]float32, error) {
				buf := make([]float32, len(in[0]))
				if c.Rank() == root%c.Size() {
					copy(buf, in[c.Rank()])
				}
				return buf, Bcast(ctx, c, buf, root%c.Size(), opts...)
			},
			func(r int, in [][]float32, round func([]float32) []float32) []float32 {
				if len(in) == 1 {
					return slices.Clone(in[0]) // nothing travels
				}
				return round(in[root%len(in)])
			}},
		"gather": {wire.KindGather,
			func(ctx context.Context, c *comm.Comm, in [][]float32, opts []Option) ([]float32, error) {
				var recv []float32
				if c.Rank() == root%c.Size() {
					recv = make([]float32, len(in)*len(in[0]))
				}
				return recv, Gather(ctx, c, in[c.Rank()], recv, root%c.Size(), opts...)
			},
			func(r int, in [][]float32, round func([]float32) []float32) []float32 {
				if r != root%len(in) {
					return nil
				}
				var all []float32
				for s, x := range in {
					if s != r {
						x = round(x)
					}
					all = append(all, x...)
				}
				return all
			}},
		"scatter": {wire.KindScatter,
			func(ctx context.Context, c *comm.Comm, in [][]float32, opts []Option) ([]float32, error) {
				m := len(in[0]) / c.Size()
				recv := make([]float32, m)
				return recv, Scatter(ctx, c, in[c.Rank()][:m*c.Size()], recv, root%c.Size(), opts...)
			},
			func(r int, in [][]float32, round func([]float32) []float32) []float32 {
				m := len(in[0]) / len(in)
				mine := in[root%len(in)][r*m : (r+1)*m]
				if r == root%len(in) {
					return slices.Clone(mine)
				}
				return round(mine)
			}},
		"allgather": {wire.KindAllgather,
			func(ctx context.Context, c *comm.Comm, in [][]float32, opts []Option) ([]float32, error) {
				recv := make([]float32, len(in)*len(in[0]))
				return recv, Allgather(ctx, c, in[c.Rank()], recv, opts...)
			},
			func(r int, in [][]float32, round func([]float32) []float32) []float32 {
				var all []float32
				for _, x := range in {
					all = append(all, round(x)...)
				}
				if len(in) == 1 {
					return slices.Clone(in[0]) // nothing travels
				}
				return all
			}},
		"allgatherv": {wire.KindAllgatherv,
			func(ctx context.Context, c *comm.Comm, in [][]float32, opts []Option) ([]float32, error) {
				counts := slices.Repeat([]int{len(in[0])}, c.Size())
				recv := make([]float32, len(in)*len(in[0]))
				return recv, Allgatherv(ctx, c, in[c.Rank()], recv, counts, opts...)
			},
			func(r int, in [][]float32, round func([]float32) []float32) []float32 {
				var all []float32
				for _, x := range in {
					all = append(all, round(x)...)
				}
				if len(in) == 1 {
					return slices.Clone(in[0])
				}
				return all
			}},
		"gatherv": {wire.KindGatherv,
			func(ctx context.Context, c *comm.Comm, in [][]float32, opts []Option) ([]float32, error) {
				counts := slices.Repeat([]int{len(in[0])}, c.Size())
				var recv []float32
				if c.Rank() == 0 {
					recv = make([]float32, len(in)*len(in[0]))
				}
				return recv, Gatherv(ctx, c, in[c.Rank()], recv, counts, 0, opts...)
			},
			func(r int, in [][]float32, round func([]float32) []float32) []float32 {
				if r != 0 {
					return nil
				}
				all := slices.Clone(in[0])
				for _, x := range in[1:] {
					all = append(all, round(x)...)
				}
				return all
			}},
		"scatterv": {wire.KindScatterv,
			func(ctx context.Context, c *comm.Comm, in [][]float32, opts []Option) ([]float32, error) {
				m := len(in[0]) / c.Size()
				recv := make([]float32, m)
				return recv, Scatterv(ctx, c, in[c.Rank()][:m*c.Size()], slices.Repeat([]int{m}, c.Size()), recv, 0, opts...)
			},
			func(r int, in [][]float32, round func([]float32) []float32) []float32 {
				m := len(in[0]) / len(in)
				mine := in[0][r*m : (r+1)*m]
				if r == 0 {
					return slices.Clone(mine)
				}
				return round(mine)
			}},
		"alltoall": {wire.KindAlltoall,
			func(ctx context.Context, c *comm.Comm, in [][]float32, opts []Option) ([]float32, error) {
				m := len(in[0]) / c.Size()
				recv := make([]float32, m*c.Size())
				return recv, Alltoall(ctx, c, in[c.Rank()][:m*c.Size()], recv, opts...)
			},
			func(r int, in [][]float32, round func([]float32) []float32) []float32 {
				m := len(in[0]) / len(in)
				var all []float32
				for s, x := range in {
					b := x[r*m : (r+1)*m]
					if s != r {
						b = round(b)
					}
					all = append(all, b...)
				}
				return all
			}},
	}
	for _, c := range codecs {
		for name, mv := range moves {
			for _, algo := range linkAlgorithms(mv.kind) {
				t.Run(fmt.Sprintf("%s/%s/%s", c, name, algo), func(t *testing.T) {
					round := func(x []float32) []float32 { return rounded(c, x) }
					for _, n := range []int{1, 2, 3, 5} {
						cs := job(t, n)
						for _, count := range compressCounts(n) {
							inputs := make([][]float32, n)
							for r := range inputs {
								inputs[r] = floatInput(r, count, 1)
							}
							opts := []Option{WithAlgorithm(algo), WithCompression(c), WithChunkSize(4096)}
							allOK(t, cs, func(ctx context.Context, cm *comm.Comm) error {
								got, err := mv.run(ctx, cm, inputs, opts)
								if err != nil {
									return err
								}
								if want := mv.want(cm.Rank(), inputs, round); want != nil {
									if err := equalBits(got, want); err != nil {
										return fmt.Errorf("n=%d count %d: %w", n, count, err)
									}
								}
								return nil
							})
						}
					}
				})
			}
		}
	}
}

// TestCompressionReductions: with a lossless codec every reducing
// collective gives the same bits as without one, and with a lossy codec
// an allreduce leaves the same bits on every rank, and every reduction
// stays within kernel.RoundingBound of the exact result (README,
// "Compression").
func TestCompressionReductions(t *testing.T) {
	type reduction struct {
		kind wire.Kind
		op   codec.Op
		// run is rank c.Rank()'s part; result is the part of the exact
		// reduction (float64) that rank r must hold, with whether all ranks
		// hold the same.
		run func(ctx context.Context, c *comm.Comm, in []float32, opts []Option) ([]float32, error)
		// span is the part of the reduced vector rank r holds, nil for
		// none.
		span func(r, n, count int) (lo, hi int, ok bool)
		same bool
	}
	whole := func(r, n, count int) (int, int, bool) { return 0, count, true }
	reductions := map[string]reduction{
		"allreduce": {wire.KindAllreduce, codec.Sum,
			func(ctx context.Context, c *comm.Comm, in []float32, opts []Option) ([]float32, error) {
				return in, Allreduce(ctx, c, in, codec.Sum, opts...)
			}, whole, true},
		"allreduce-avg": {wire.KindAllreduce, codec.Avg,
			func(ctx context.Context, c *comm.Comm, in []float32, opts []Option) ([]float32, error) {
				return in, Allreduce(ctx, c, in, codec.Avg, opts...)
			}, whole, true},
		"reduce": {wire.KindReduce, codec.Sum,
			func(ctx context.Context, c *comm.Comm, in []float32, opts []Option) ([]float32, error) {
				return in, Reduce(ctx, c, in, codec.Sum, c.Size()-1, opts...)
			},
			func(r, n, count int) (int, int, bool) { return 0, count, r == n-1 }, false},
		"reducescatter": {wire.KindReduceScatter, codec.Sum,
			func(ctx context.Context, c *comm.Comm, in []float32, opts []Option) ([]float32, error) {
				m := len(in) / c.Size()
				recv := make([]float32, m)
				return recv, ReduceScatter(ctx, c, in[:m*c.Size()], recv, codec.Sum, opts...)
			},
			func(r, n, count int) (int, int, bool) { m := count / n; return r * m, (r + 1) * m, true }, false},
	}
	for _, c := range codecs {
		for name, red := range reductions {
			for _, algo := range linkAlgorithms(red.kind) {
				t.Run(fmt.Sprintf("%s/%s/%s", c, name, algo), func(t *testing.T) {
					for _, n := range []int{1, 2, 3, 4, 5} {
						cs := job(t, n)
						for _, count := range compressCounts(n) {
							inputs := make([][]float32, n)
							for r := range inputs {
								inputs[r] = floatInput(r, count, 2)
							}
							plain := make([][]float32, n) // the uncompressed results
							results := make([][]float32, n)
							allOK(t, cs, func(ctx context.Context, cm *comm.Comm) error {
								r := cm.Rank()
								var err error
								plain[r], err = red.run(ctx, cm, slices.Clone(inputs[r]), []Option{WithAlgorithm(algo)})
								if err != nil {
									return err
								}
								results[r], err = red.run(ctx, cm, slices.Clone(inputs[r]),
									[]Option{WithAlgorithm(algo), WithCompression(c), WithChunkSize(4096)})
								return err
							})
							for r := range n {
								lo, hi, ok := red.span(r, n, count)
								if !ok {
									continue
								}
								if !c.Lossy() {
									require.NoError(t, equalBits(results[r], plain[r]), "rank %d n=%d count %d", r, n, count)
									continue
								}
								requireWithinBound(t, c, red.op, inputs, lo, hi, results[r], fmt.Sprintf("rank %d n=%d count %d", r, n, count))
								if red.same {
									require.NoError(t, equalBits(results[r], results[0]), "rank %d differs from rank 0, n=%d count %d", r, n, count)
								}
							}
						}
					}
				})
			}
		}
	}
}

// requireWithinBound checks got, the reduction of inputs[*][lo:hi] with
// op (codec.Sum or codec.Avg), against the exact result computed in float64: each
// element must be within kernel.RoundingBound times the sum of the
// magnitudes of its operands, plus, for FP16, half its smallest
// subnormal (2^-25) for each of the at most n+1 roundings: below 2^-14 its
// error is absolute, not relative.
func requireWithinBound(t *testing.T, c codec.ID, op codec.Op, inputs [][]float32, lo, hi int, got []float32, where string) {
	t.Helper()
	n := len(inputs)
	gamma := kernel.RoundingBound(c, kernel.Float32, n)
	require.Len(t, got, hi-lo, where)
	for i := lo; i < hi; i++ {
		var exact, mag float64
		for _, x := range inputs {
			exact += float64(x[i])
			mag += math.Abs(float64(x[i]))
		}
		if op == codec.Avg {
			// The division by n rounds once more, in float32.
			exact, mag = exact/float64(n), mag/float64(n)*(1+0x1p-23)
		}
		bound := gamma * mag
		if c == codec.FP16 {
			bound += float64(n+1) * 0x1p-25
		}
		if err := math.Abs(float64(got[i-lo]) - exact); err > bound {
			t.Fatalf("%s: %s element %d is %v, exact %v: error %g exceeds the bound %g", where, c, i, got[i-lo], exact, err, bound)
		}
	}
}

// TestCompressionRefused: a codec that cannot apply to a call is refused
// with an error naming it, on the rank that passed it.
func TestCompressionRefused(t *testing.T) {
	tests := []struct {
		name string
		call rankCall
		want []string
	}{
		{"lossy codec on integers", func(ctx context.Context, c *comm.Comm) error {
			return Allreduce(ctx, c, make([]int32, 8), codec.Sum, WithCompression(codec.BF16))
		}, []string{"bf16 compression applies to float32 and float64", "int32"}},
		{"lossy codec on bf16 data", func(ctx context.Context, c *comm.Comm) error {
			return Bcast(ctx, c, make([]codec.BFloat16, 8), 0, WithCompression(codec.FP16))
		}, []string{"fp16", "bf16"}},
		{"unknown codec", func(ctx context.Context, c *comm.Comm) error {
			return Allgather(ctx, c, make([]float32, 2), make([]float32, 6), WithCompression(codec.ID(99)))
		}, []string{"unknown codec 99"}},
		{"shared memory algorithm", func(ctx context.Context, c *comm.Comm) error {
			return Allreduce(ctx, c, make([]float32, 8), codec.Sum, WithAlgorithm(Shm), WithCompression(codec.Zstd))
		}, []string{"shm", "zstd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireRefused(t, 3, []int{0, 1, 2}, tt.call, tt.want...)
		})
	}
}

// TestCompressionAutoAvoidsShm: with a codec the selector takes a link
// algorithm where it would otherwise take the shared segment, and the
// result is still right.
func TestCompressionAutoAvoidsShm(t *testing.T) {
	cs := job(t, 3, comm.WithTransport("auto"))
	require.NotNil(t, (*core.Comm)(cs[0]).Segment(), "precondition: the ranks share a segment")
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		var k call[float32]
		if err := prepare(&k, ctx, c, wire.KindAllreduce, codec.Sum, 1<<20, -1, []Option{WithCompression(codec.BF16)}); err != nil {
			return err
		}
		if k.me.Algorithm == Shm || k.me.Algorithm == Hierarchical {
			return fmt.Errorf("compressed allreduce chose %s", k.me.Algorithm)
		}
		buf := slices.Repeat([]float32{1.5}, 1<<18)
		if err := Allreduce(ctx, c, buf, codec.Sum, WithCompression(codec.BF16)); err != nil {
			return err
		}
		if buf[0] != 4.5 || buf[len(buf)-1] != 4.5 {
			return fmt.Errorf("sum is %v, want 4.5", buf[0])
		}
		return nil
	})
}

// TestCompressionSpecialValues: through a lossy allreduce ±Inf and NaN
// propagate as IEEE sums do, identically on every rank and algorithm;
// and a partial sum beyond the codec's range becomes +Inf, not garbage
// (FP16 overflows above 65504, which is the price of its precision).
func TestCompressionSpecialValues(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	tests := []struct {
		name  string
		codec codec.ID
		in    func(r int) float32
		check func(got float32) bool
		want  string
	}{
		{"inf", codec.BF16, func(r int) float32 { return map[bool]float32{true: inf, false: 1}[r == 1] }, func(g float32) bool { return math.IsInf(float64(g), 1) }, "+Inf"},
		{"inf minus inf", codec.BF16, func(r int) float32 { return map[int]float32{0: inf, 1: -inf}[r] }, func(g float32) bool { return g != g }, "NaN"},
		{"nan", codec.FP16, func(r int) float32 { return map[bool]float32{true: nan, false: 2}[r == 2] }, func(g float32) bool { return g != g }, "NaN"},
		{"fp16 overflow", codec.FP16, func(r int) float32 { return 60000 }, func(g float32) bool { return math.IsInf(float64(g), 1) }, "+Inf"},
		{"fp16 just in range", codec.FP16, func(r int) float32 { return 16384 }, func(g float32) bool { return g == 49152 }, "49152"},
		{"bf16 near float32 max", codec.BF16, func(r int) float32 { return math.MaxFloat32 / 2 }, func(g float32) bool { return math.IsInf(float64(g), 1) }, "+Inf"},
	}
	for _, tt := range tests {
		for _, algo := range linkAlgorithms(wire.KindAllreduce) {
			t.Run(tt.name+"/"+algo.String(), func(t *testing.T) {
				cs := job(t, 3)
				results := make([][]float32, 3)
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					buf := slices.Repeat([]float32{tt.in(c.Rank())}, 5)
					results[c.Rank()] = buf
					return Allreduce(ctx, c, buf, codec.Sum, WithAlgorithm(algo), WithCompression(tt.codec))
				})
				for r, got := range results {
					require.True(t, tt.check(got[0]), "rank %d: got %v, want %s", r, got[0], tt.want)
					require.NoError(t, equalBits(got, results[0]), "rank %d", r)
				}
			})
		}
	}
}

// TestCompressionErrorBound: a lossy allreduce of adversarial data stays
// within kernel.RoundingBound of the exact sum: values just above a
// rounding midpoint (so every rounding errs the same way), values of one
// sign growing with the rank (so partial sums grow hop by hop), and
// cancelling values of large magnitude (the bound is relative to the sum
// of magnitudes, not to the sum; large, but not so large that a partial
// sum leaves FP16's range, where no bound holds).
func TestCompressionErrorBound(t *testing.T) {
	inputs := map[string]func(r, i int) float32{
		"above midpoints": func(r, i int) float32 { return 1 + 0x1p-9 + float32(i%7)*0x1p-16 },
		"growing":         func(r, i int) float32 { return float32(r+1) * (1 + float32(i)*0x1p-12) },
		"cancelling":      func(r, i int) float32 { return float32(1-2*(r%2)) * 3e3 * (1 + float32(i)*0x1p-10) },
	}
	for _, c := range []codec.ID{codec.BF16, codec.FP16} {
		for name, f := range inputs {
			for _, algo := range linkAlgorithms(wire.KindAllreduce) {
				t.Run(fmt.Sprintf("%s/%s/%s", c, name, algo), func(t *testing.T) {
					for _, n := range []int{2, 5, 8} {
						cs := job(t, n)
						in := make([][]float32, n)
						results := make([][]float32, n)
						for r := range in {
							in[r] = make([]float32, 512)
							for i := range in[r] {
								in[r][i] = f(r, i)
							}
						}
						allOK(t, cs, func(ctx context.Context, cm *comm.Comm) error {
							results[cm.Rank()] = slices.Clone(in[cm.Rank()])
							return Allreduce(ctx, cm, results[cm.Rank()], codec.Sum, WithAlgorithm(algo), WithCompression(c), WithChunkSize(256))
						})
						for r := range n {
							require.NoError(t, equalBits(results[r], results[0]), "rank %d, n=%d", r, n)
						}
						requireWithinBound(t, c, codec.Sum, in, 0, 512, results[0], fmt.Sprintf("n=%d", n))
					}
				})
			}
		}
	}
}

// TestCompressionScan: Scan and Exscan give the uncompressed bits with a
// lossless codec and stay within the bound of their prefix with a lossy
// one; Exscan leaves rank 0's buffer alone.
func TestCompressionScan(t *testing.T) {
	for _, c := range codecs {
		for _, exclusive := range []bool{false, true} {
			name := map[bool]string{false: "scan", true: "exscan"}[exclusive]
			t.Run(fmt.Sprintf("%s/%s", c, name), func(t *testing.T) {
				scan := Scan[float32]
				if exclusive {
					scan = Exscan[float32]
				}
				for _, n := range []int{1, 2, 3, 5} {
					cs := job(t, n)
					for _, count := range compressCounts(n) {
						inputs := make([][]float32, n)
						for r := range inputs {
							inputs[r] = floatInput(r, count, 3)
						}
						plain, results := make([][]float32, n), make([][]float32, n)
						allOK(t, cs, func(ctx context.Context, cm *comm.Comm) error {
							r := cm.Rank()
							plain[r], results[r] = slices.Clone(inputs[r]), slices.Clone(inputs[r])
							if err := scan(ctx, cm, plain[r], codec.Sum); err != nil {
								return err
							}
							return scan(ctx, cm, results[r], codec.Sum, WithCompression(c), WithChunkSize(4096))
						})
						for r := range n {
							last := r + 1 // the ranks the prefix covers
							if exclusive {
								last = r
							}
							switch {
							case last == 0:
								require.NoError(t, equalBits(results[r], inputs[r]), "rank 0 n=%d count %d", n, count)
							case !c.Lossy():
								require.NoError(t, equalBits(results[r], plain[r]), "rank %d n=%d count %d", r, n, count)
							default:
								requireWithinBound(t, c, codec.Sum, inputs[:last], 0, count, results[r], fmt.Sprintf("rank %d n=%d count %d", r, n, count))
							}
						}
					}
				}
			})
		}
	}
}

// TestCompressionOverTCP: over tcp, where payloads land in the posted
// wire buffers straight from the socket, compressed allreduces and
// broadcasts give what they give over mem links: the uncompressed bits
// with a lossless codec, the same bits on every rank within the bound
// with a lossy one.
func TestCompressionOverTCP(t *testing.T) {
	const n, count = 3, 40000
	cs := job(t, n, comm.WithTransport("tcp"))
	inputs := make([][]float32, n)
	for r := range inputs {
		inputs[r] = floatInput(r, count, 4)
	}
	for _, c := range codecs {
		for _, algo := range []Algorithm{RecursiveDoubling, RingChunked, Tree} {
			t.Run(fmt.Sprintf("%s/%s", c, algo), func(t *testing.T) {
				plain, results, bcast := make([][]float32, n), make([][]float32, n), make([][]float32, n)
				allOK(t, cs, func(ctx context.Context, cm *comm.Comm) error {
					r := cm.Rank()
					plain[r], results[r], bcast[r] = slices.Clone(inputs[r]), slices.Clone(inputs[r]), slices.Clone(inputs[r])
					if err := Allreduce(ctx, cm, plain[r], codec.Sum, WithAlgorithm(algo)); err != nil {
						return err
					}
					if err := Allreduce(ctx, cm, results[r], codec.Sum, WithAlgorithm(algo), WithCompression(c), WithChunkSize(16<<10)); err != nil {
						return err
					}
					return Bcast(ctx, cm, bcast[r], 2, WithCompression(c), WithChunkSize(16<<10))
				})
				for r := range n {
					require.NoError(t, equalBits(results[r], results[0]), "rank %d", r)
					require.NoError(t, equalBits(bcast[r], rounded(c, inputs[2])), "bcast on rank %d", r)
				}
				if c.Lossy() {
					requireWithinBound(t, c, codec.Sum, inputs, 0, count, results[0], "rank 0")
				} else {
					require.NoError(t, equalBits(results[0], plain[0]))
				}
			})
		}
	}
}

// TestCompressionDecodedAround runs the compression tests with every
// compressed arrival decoded around the caches (kernel.DecodeAround),
// which otherwise only operations of receiveAroundMin bytes do: the same
// bits must arrive, and reductions must stay as close.
func TestCompressionDecodedAround(t *testing.T) {
	defer func(min int) { receiveAroundMin = min }(receiveAroundMin)
	receiveAroundMin = 0
	t.Run("moves", TestCompressionMoves)
	t.Run("reductions", TestCompressionReductions)
}
