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
