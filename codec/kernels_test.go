package codec

import (
	"fmt"
	"testing"
)

// BenchmarkSum measures Reduce(Sum, dst, src) on buffers of 4 KiB (in L1),
// 1 MiB (in L2/L3) and 64 MiB (in memory); the size in each name is that
// of one buffer. The MB/s column counts the bytes of both operands read,
// 2 × size per call, and not the write back to dst, so it is comparable to
// a memory-bandwidth figure for two streams in and one out.
func BenchmarkSum(b *testing.B) {
	b.Run("float32", benchSum[float32])
	b.Run("float64", benchSum[float64])
	b.Run("int32", benchSum[int32])
	b.Run("bf16", benchSum[BF16])
}

func benchSum[T Elem](b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20, 64 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			n := size / DTypeOf[T]().Size()
			dst, src := make([]T, n), make([]T, n)
			r := newRand(b)
			for i := range n {
				// Multiples of 1/4 below 8: however often they are added
				// the sums stay finite and never subnormal, so the timing
				// is of ordinary adds.
				dst[i], src[i] = small[T](r), small[T](r)
			}
			if err := Reduce(Sum, dst, src); err != nil { // warm up outside the timer
				b.Fatal(err)
			}
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			for b.Loop() {
				if err := Reduce(Sum, dst, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}
