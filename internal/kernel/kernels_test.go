package kernel

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/elemtest"
	"github.com/stretchr/testify/require"
)

// vecElem is the element types that have an assembly kernel.
type vecElem interface {
	float32 | float64 | int32 | int64
}

// vecKernel is a kernel with an assembly version, checked against the Go
// loop that it must match bit for bit. Reduce runs the assembly where the
// build and the CPU allow (TestAsmSwitch checks that it does), the Go loop
// otherwise.
type vecKernel struct {
	name string
	test func(t *testing.T, n int)
	fuzz func(t *testing.T, dst, src []byte)
}

func newVecKernel[T vecElem](name string, op codec.Op, loop func(dst, src []T)) vecKernel {
	return vecKernel{name, testKernel(op, loop), fromBytes(op, loop)}
}

var vecKernels = []vecKernel{
	newVecKernel("sum/float32", codec.Sum, sumFloat[float32]),
	newVecKernel("sum/float64", codec.Sum, sumFloat[float64]),
	newVecKernel("prod/float32", codec.Prod, prodFloat[float32]),
	newVecKernel("prod/float64", codec.Prod, prodFloat[float64]),
	newVecKernel("sum/int32", codec.Sum, sumInt[int32]),
	newVecKernel("sum/int64", codec.Sum, sumInt[int64]),
}

// fromBytes adapts checkKernel to operands given as bytes, as the fuzzer
// gives them.
func fromBytes[T vecElem](op codec.Op, loop func(dst, src []T)) func(t *testing.T, dst, src []byte) {
	return func(t *testing.T, dst, src []byte) {
		n := min(len(dst), len(src)) / DTypeOf[T]().Size() * DTypeOf[T]().Size()
		d, err := codec.FromBytes[T](dst[:n])
		require.NoError(t, err)
		s, err := codec.FromBytes[T](src[:n])
		require.NoError(t, err)
		checkKernel(t, op, loop, d, s)
	}
}

// checkKernel requires that Reduce(op, dst, src) and loop(dst, src) give
// the same bits, on copies of dst; both NaN counts as the same, since Go
// does not specify the payload of a NaN that arithmetic produces. It
// leaves dst and src unchanged.
func checkKernel[T vecElem](t *testing.T, op codec.Op, loop func(dst, src []T), dst, src []T) {
	t.Helper()
	want := slices.Clone(dst)
	loop(want, src)
	got := slices.Clone(dst)
	require.NoError(t, Reduce(op, got, src))
	requireReduced(t, op, want, got)
}

func TestKernelsMatchGo(t *testing.T) {
	var lengths []int
	for n := range 301 {
		lengths = append(lengths, n)
	}
	// Across the 64 KiB chunks of the assembly path, at and off their
	// boundaries.
	lengths = append(lengths, 1<<14, 1<<15, 65535, 65536+7, 1<<20+3)

	for _, k := range vecKernels {
		t.Run(k.name, func(t *testing.T) {
			for _, n := range lengths {
				t.Run(fmt.Sprint(n), func(t *testing.T) { k.test(t, n) })
			}
		})
	}
}

// testKernel checks Reduce against loop on n random elements laid out
// three ways: in slices of their own, as neighbours in one buffer at odd
// element offsets (so that no vector load is aligned, with guard elements
// around both that must stay as they were), and as one slice reduced with
// itself.
func testKernel[T vecElem](op codec.Op, loop func(dst, src []T)) func(t *testing.T, n int) {
	return func(t *testing.T, n int) {
		r := elemtest.NewRand(t)
		dst, src := kernelInput[T](r, n), kernelInput[T](r, n)

		checkKernel(t, op, loop, dst, src)

		buf := slices.Concat(kernelInput[T](r, 1), dst, kernelInput[T](r, 3), src, kernelInput[T](r, 3))
		before := slices.Clone(buf)
		d, s := buf[1:1+n], buf[n+4:2*n+4]
		want := slices.Clone(dst)
		loop(want, src)
		require.NoError(t, Reduce(op, d, s))
		requireReduced(t, op, want, d)
		copy(d, dst) // and the rest of buf, src and the guards, is as it was
		elemtest.RequireSameBits(t, before, buf)

		want = slices.Clone(dst)
		loop(want, want)
		got := slices.Clone(dst)
		require.NoError(t, Reduce(op, got, got))
		requireReduced(t, op, want, got)
	}
}

// kernelInput returns n operands: an eighth each from specials and from
// the edges below, a quarter small values, a quarter normally distributed
// (sums of neighbours that round), and a quarter random bit patterns.
func kernelInput[T vecElem](r *rand.Rand, n int) []T {
	sp, ed := specials[T](), kernelEdges[T]()
	s := make([]T, n)
	for i := range s {
		switch r.IntN(8) {
		case 0:
			s[i] = sp[r.IntN(len(sp))]
		case 1:
			s[i] = ed[r.IntN(len(ed))]
		case 2, 3:
			s[i] = small[T](r)
		case 4, 5:
			s[i] = T(r.NormFloat64() * 1000)
		default:
			s[i] = elemtest.FromBits[T](r.Uint64())
		}
	}
	return s
}

// kernelEdges adds to specials the floats where hardware takes a
// different path: the largest subnormal, the smallest normal, the
// negative extremes, a signalling NaN and 1 + ulp.
func kernelEdges[T vecElem]() []T {
	var bits []uint64
	switch DTypeOf[T]() {
	case Float32:
		bits = []uint64{0x007fffff, 0x00800000, 0x80000001, 0xff7fffff, 0x7f800001, 0x3f800001}
	case Float64:
		bits = []uint64{0x000fffffffffffff, 0x0010000000000000, 1<<63 | 1, 0xffefffffffffffff,
			0x7ff0000000000001, 0x3ff0000000000001}
	default:
		return specials[T]()
	}
	s := make([]T, len(bits))
	for i, b := range bits {
		s[i] = elemtest.FromBits[T](b)
	}
	return s
}

// FuzzKernels reads arbitrary bytes as the two operands of every kernel
// with an assembly version and compares Reduce with the Go loop.
func FuzzKernels(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 7, 8, 9, 64, 300, 1000} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Add(append(codec.Bytes(specials[float32]()), codec.Bytes(kernelEdges[float32]())...))
	f.Add(append(codec.Bytes(specials[float64]()), codec.Bytes(kernelEdges[float64]())...))
	f.Fuzz(func(t *testing.T, data []byte) {
		half := len(data) / 2
		for _, k := range vecKernels {
			k.fuzz(t, data[:half], data[half:])
		}
	})
}

// BenchmarkSum measures codec.Sum on buffers of 4 KiB (in L1), 64 KiB (in L2),
// 1 MiB (in L2/L3) and 64 MiB (in memory); the size in each name is that
// of one buffer. The MB/s column counts the bytes of both operands read,
// 2 × size per call, and not the write back to dst, so it is comparable to
// a memory-bandwidth figure for two streams in and one out.
//
// float32/asm is Reduce with the assembly kernel (skipped where there is
// none) and float32/go the Go loop; the other types run Reduce, whichever
// kernel it picks.
func BenchmarkSum(b *testing.B) {
	b.Run("float32", func(b *testing.B) {
		b.Run("asm", func(b *testing.B) {
			if !sumAsm[float32](nil, nil) {
				b.Skip("no assembly kernel in this build or on this CPU")
			}
			benchSum(b, viaReduce[float32])
		})
		b.Run("go", func(b *testing.B) { benchSum(b, sumFloat[float32]) })
	})
	b.Run("float64", func(b *testing.B) { benchSum(b, viaReduce[float64]) })
	b.Run("int32", func(b *testing.B) { benchSum(b, viaReduce[int32]) })
	b.Run("bf16", func(b *testing.B) { benchSum(b, viaReduce[codec.BFloat16]) })
}

// viaReduce is Reduce(codec.Sum, dst, src), which cannot fail on slices of equal
// length.
func viaReduce[T codec.Elem](dst, src []T) {
	if err := Reduce(codec.Sum, dst, src); err != nil {
		panic(err)
	}
}

func benchSum[T codec.Elem](b *testing.B, sum func(dst, src []T)) {
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20, 64 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			n := size / DTypeOf[T]().Size()
			dst, src := make([]T, n), make([]T, n)
			r := elemtest.NewRand(b)
			for i := range n {
				// Multiples of 1/4 below 8: however often they are added
				// the sums stay finite and never subnormal, so the timing
				// is of ordinary adds.
				dst[i], src[i] = small[T](r), small[T](r)
			}
			sum(dst, src) // warm up outside the timer
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			for b.Loop() {
				sum(dst, src)
			}
		})
	}
}

// BenchmarkSumSmall times Reduce on the few elements of a small call (an
// 8 B Allreduce reduces two float32s a rank), where what the call costs
// is the dispatch, not the bandwidth: float32/asm and float32/go as in
// BenchmarkSum.
func BenchmarkSumSmall(b *testing.B) {
	for _, size := range []int{8, 32, 64, 128, 256, 512} {
		b.Run(sizeName(size), func(b *testing.B) {
			n := size / 4
			dst, src := make([]float32, n), make([]float32, n)
			for i := range n {
				dst[i], src[i] = 1, 0.25
			}
			b.Run("reduce", func(b *testing.B) {
				for b.Loop() {
					viaReduce(dst, src)
				}
			})
			b.Run("go", func(b *testing.B) {
				for b.Loop() {
					sumFloat(dst, src)
				}
			})
			b.Run("asm", func(b *testing.B) {
				if !sumAsm[float32](nil, nil) {
					b.Skip("no assembly kernel in this build or on this CPU")
				}
				for b.Loop() {
					sumAsm(dst, src)
				}
			})
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
