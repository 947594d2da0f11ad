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

var scanAlgorithms = []Algorithm{Auto, RecursiveDoubling}

// scanFunc is Scan or Exscan.
type scanFunc func(ctx context.Context, c *comm.Comm, buf []float64, op codec.Op, opts ...Option) error

func TestScan(t *testing.T) {
	for _, inclusive := range []bool{true, false} {
		for _, algo := range scanAlgorithms {
			t.Run(fmt.Sprintf("%s/%s", scanName(inclusive), algo), func(t *testing.T) {
				for _, n := range rankCounts {
					t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
						cs := job(t, n)
						checkScan[float32](t, cs, inclusive, algo, codec.Sum, countsFor(n, true))
						checkScan[float64](t, cs, inclusive, algo, codec.Avg, countsFor(n, false))
						checkScan[int32](t, cs, inclusive, algo, codec.Max, countsFor(n, false))
						checkScan[uint8](t, cs, inclusive, algo, codec.Xor, countsFor(n, false))
						checkScan[codec.BFloat16](t, cs, inclusive, algo, codec.Sum, countsFor(n, false))
					})
				}
			})
		}
	}
}

func scanName(inclusive bool) string {
	if inclusive {
		return "Scan"
	}
	return "Exscan"
}

// scanWant is rank r's expected result: the reduction of the inputs of
// ranks 0…r (inclusive) or 0…r-1 (exclusive), in rank order, finished
// over that many ranks; rank 0's own input for Exscan.
func scanWant[T codec.Elem](op codec.Op, inputs [][]T, r int, inclusive bool) []T {
	if inclusive {
		return reference(op, inputs[:r+1])
	}
	if r == 0 {
		return inputs[0]
	}
	return reference(op, inputs[:r])
}

// checkScan runs Scan or Exscan with each count and compares every
// rank's buf with its prefix of the sequential reference.
func checkScan[T codec.Elem](t *testing.T, cs []*comm.Comm, inclusive bool, algo Algorithm, op codec.Op, sizes []int) {
	t.Helper()
	n := len(cs)
	for _, count := range sizes {
		t.Run(fmt.Sprintf("%s/%s/count=%d", kernel.DTypeOf[T](), op, count), func(t *testing.T) {
			inputs := make([][]T, n)
			for r := range n {
				inputs[r] = input[T](r, count, count)
			}
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				buf := slices.Clone(inputs[me])
				var err error
				if inclusive {
					err = Scan(ctx, c, buf, op, WithAlgorithm(algo))
				} else {
					err = Exscan(ctx, c, buf, op, WithAlgorithm(algo))
				}
				if err != nil {
					return err
				}
				return equalBits(buf, scanWant(op, inputs, me, inclusive))
			})
		})
	}
}

// TestScanNonCommutative: 2×2 matrix products (packedMatMul)
// come out in rank order on every rank.
func TestScanNonCommutative(t *testing.T) {
	op := packedMatMul
	for _, f := range []struct {
		inclusive bool
		call      func(context.Context, *comm.Comm, []uint64, codec.Op, ...Option) error
	}{{true, Scan[uint64]}, {false, Exscan[uint64]}} {
		for _, tr := range []string{"mem", "auto"} { // auto: through a shared segment
			for _, n := range rankCounts {
				t.Run(fmt.Sprintf("%s/%s/n=%d", scanName(f.inclusive), tr, n), func(t *testing.T) {
					cs := job(t, n, comm.WithTransport(tr))
					for _, m := range []int{0, 1, 3, 300, 70000} {
						inputs := make([][]uint64, n)
						for r := range n {
							inputs[r] = packedMatrices(r, m, 2)
						}
						allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
							me := c.Rank()
							buf := slices.Clone(inputs[me])
							if err := f.call(ctx, c, buf, op); err != nil {
								return err
							}
							return equalBits(buf, scanWant(op, inputs, me, f.inclusive))
						})
					}
				})
			}
		}
	}
}

func TestScanOverTCP(t *testing.T) {
	for _, n := range []int{3, 4} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n, comm.WithTransport("tcp"))
			for _, inclusive := range []bool{true, false} {
				checkScan[float32](t, cs, inclusive, RecursiveDoubling, codec.Sum, []int{0, 5, 10000})
			}
		})
	}
}

func TestScanRefusesBadArguments(t *testing.T) {
	for _, f := range []struct {
		name string
		call scanFunc
	}{{"Scan", Scan[float64]}, {"Exscan", Exscan[float64]}} {
		t.Run(f.name+"/algorithm", func(t *testing.T) {
			requireRefused(t, 2, []int{0, 1}, func(ctx context.Context, c *comm.Comm) error {
				return f.call(ctx, c, make([]float64, 4), codec.Sum, WithAlgorithm(Ring))
			}, f.name+" has no ring algorithm")
		})
		t.Run(f.name+"/bitwise op on floats", func(t *testing.T) {
			requireRefused(t, 3, []int{0, 1, 2}, func(ctx context.Context, c *comm.Comm) error {
				return f.call(ctx, c, make([]float64, 4), codec.And)
			}, f.name+"(4 × float64", "op and is not defined for float64")
		})
		t.Run(f.name+"/mismatched count", func(t *testing.T) {
			requireMismatch(t, 4, func(ctx context.Context, c *comm.Comm) error {
				return f.call(ctx, c, make([]float64, 4+c.Rank()%2), codec.Sum)
			}, nil)
		})
		t.Run(f.name+"/mismatched op", func(t *testing.T) {
			requireMismatch(t, 2, func(ctx context.Context, c *comm.Comm) error {
				op := codec.Sum
				if c.Rank() == 1 {
					op = codec.Max
				}
				return f.call(ctx, c, make([]float64, 4), op)
			}, []string{"sum", "max"})
		})
	}
}
