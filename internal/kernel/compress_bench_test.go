package kernel

import (
	"fmt"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/elemtest"
)

// benchBytes is the raw size of the data each benchmark encodes, decodes
// or rounds per iteration; b.SetBytes reports throughput in raw bytes.
const benchBytes = 1 << 20

// benchData returns 1 MiB of T drawn like gradients: normally distributed
// around zero, the data the lossy codecs are for. For the lossless codecs
// the values are rounded to codec.BFloat16 first, so that the low half of every
// float32 is zeros: full-precision random floats hardly shrink, and would
// go raw (codec.None) without exercising the codec.
func benchData[T float](b *testing.B, c codec.ID) []T {
	r := elemtest.NewRand(b)
	s := make([]T, benchBytes/DTypeOf[T]().Size())
	for i := range s {
		s[i] = T(r.NormFloat64())
	}
	if !c.Lossy() {
		Round(codec.BF16, s)
	}
	return s
}

func benchCodecs[T float](b *testing.B, lossyOnly bool, run func(b *testing.B, c codec.ID, src []T)) {
	for _, c := range codec.IDs()[1:] {
		if lossyOnly && !c.Lossy() {
			continue
		}
		src := benchData[T](b, c)
		b.Run(fmt.Sprintf("%s/%s", c, DTypeOf[T]()), func(b *testing.B) {
			b.SetBytes(benchBytes)
			b.ReportAllocs()
			run(b, c, src)
		})
	}
}

func benchEncode[T float](b *testing.B, c codec.ID, src []T) {
	dst := make([]byte, EncodeScratchLen(c, DTypeOf[T](), len(src)))
	payload, wc := Encode(c, dst, src) // build the zstd coder outside the timing
	if wc != c {
		b.Fatalf("%s sent the data raw", c)
	}
	b.ResetTimer()
	for b.Loop() {
		Encode(c, dst, src)
	}
	b.ReportMetric(float64(len(payload))/benchBytes, "wire/raw") // after ResetTimer, which drops metrics
}

func benchDecode[T float](b *testing.B, c codec.ID, src []T) {
	enc := make([]byte, EncodeScratchLen(c, DTypeOf[T](), len(src)))
	payload, wc := Encode(c, enc, src)
	dst := make([]T, len(src))
	if err := Decode(wc, dst, payload); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := Decode(wc, dst, payload); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRound[T float](b *testing.B, c codec.ID, src []T) {
	buf := make([]T, len(src))
	copy(buf, src)
	for b.Loop() {
		// After the first iteration every value is already rounded; the
		// kernels have no data-dependent branches, so that costs the same.
		Round(c, buf)
	}
}

// benchEncodeRounding times what a sender that keeps what it sends
// does: EncodeRounding, against Encode then Decode of the payload back
// over the source, which is what it did before.
func benchEncodeRounding[T float](b *testing.B, c codec.ID, src []T) {
	dst := make([]byte, EncodeScratchLen(c, DTypeOf[T](), len(src)))
	buf := make([]T, len(src))
	copy(buf, src)
	b.Run("fused", func(b *testing.B) {
		b.SetBytes(benchBytes)
		for b.Loop() {
			EncodeRounding(c, dst, buf)
		}
	})
	b.Run("encode+decode", func(b *testing.B) {
		b.SetBytes(benchBytes)
		for b.Loop() {
			payload, wc := Encode(c, dst, buf)
			if err := Decode(wc, buf, payload); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	benchCodecs(b, false, benchEncode[float32])
	benchCodecs(b, false, benchEncode[float64])
}

func BenchmarkDecode(b *testing.B) {
	benchCodecs(b, false, benchDecode[float32])
	benchCodecs(b, false, benchDecode[float64])
}

// BenchmarkEncodeRounding covers the lossy codecs only: for the others
// EncodeRounding is Encode.
func BenchmarkEncodeRounding(b *testing.B) {
	benchCodecs(b, true, benchEncodeRounding[float32])
}

// BenchmarkRound covers the lossy codecs only: for the others Round does
// nothing.
func BenchmarkRound(b *testing.B) {
	benchCodecs(b, true, benchRound[float32])
	benchCodecs(b, true, benchRound[float64])
}

// BenchmarkSumDecoded times a ring's receiving reduce-scatter step on
// float32 in BF16 and FP16: SumDecoded, with and without encoding the sums, against
// what it did before, decoding a piece into a scratch block, summing it
// and encoding it, 2048 elements at a time. The 32 MiB runs are a rank's
// half of a 64 MiB Allreduce, from memory.
func BenchmarkSumDecoded(b *testing.B) {
	for _, size := range []int{benchBytes, 32 << 20} {
		mine := make([]float32, size/4)
		for i := range mine {
			mine[i] = float32(i % 1000)
		}
		payload := make([]byte, 2*len(mine))
		enc := make([]byte, len(payload))
		for _, c := range []codec.ID{codec.BF16, codec.FP16} {
			Encode(c, payload, mine)
			benchSumDecoded(b, c, mine, payload, enc)
		}
	}
}

func benchSumDecoded(b *testing.B, c codec.ID, mine []float32, payload, enc []byte) {
	size := 4 * len(mine)
	for _, encoding := range []bool{false, true} {
		var e []byte
		if encoding {
			e = enc
		}
		name := fmt.Sprintf("%s/%dKiB/encode=%v", c, size>>10, encoding)
		b.Run(name+"/fused", func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if !SumDecoded(c, mine, mine, payload, e) {
					b.Skip("no fused kernel here")
				}
			}
		})
		b.Run(name+"/apart", func(b *testing.B) {
			b.SetBytes(int64(size))
			block := make([]float32, 2048)
			for b.Loop() {
				for lo := 0; lo < len(mine); lo += len(block) {
					hi := lo + len(block)
					_ = Decode(c, block, payload[2*lo:2*hi])
					_ = Reduce(codec.Sum, mine[lo:hi], block)
					if e != nil {
						EncodeRounding(c, e[2*lo:2*hi], mine[lo:hi])
					}
				}
			}
		})
	}
}

// BenchmarkDecodeAround times Decode and DecodeAround of BF16 and FP16
// into float32 out of the caches: 8 MiB a call, each into the next of
// eight destinations (64 MiB), as a large collective's arrivals land in
// its result; and, for the other side of collective's receiveAroundMin, 1 MiB
// into one destination, again and again, which stays in the caches.
func BenchmarkDecodeAround(b *testing.B) {
	for _, size := range []struct {
		name       string
		bytes, dst int
	}{{"8MiB-memory", 8 << 20, 8}, {"1MiB-cached", 1 << 20, 1}} {
		n := size.bytes / 4
		dsts := make([][]float32, size.dst)
		for i := range dsts {
			dsts[i] = make([]float32, n)
		}
		for _, c := range []codec.ID{codec.BF16, codec.FP16} {
			payload, _ := Encode(c, make([]byte, 2*n), dsts[0])
			for _, way := range []struct {
				name   string
				decode func(codec.ID, []float32, []byte) error
			}{{"through", Decode[float32]}, {"around", DecodeAround[float32]}} {
				b.Run(fmt.Sprintf("%s/%s/%s", c, size.name, way.name), func(b *testing.B) {
					b.SetBytes(int64(size.bytes))
					i := 0
					for b.Loop() {
						if err := way.decode(c, dsts[i%len(dsts)], payload); err != nil {
							b.Fatal(err)
						}
						i++
					}
				})
			}
		}
	}
}
