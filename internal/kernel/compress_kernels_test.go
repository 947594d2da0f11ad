package kernel

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/elemtest"
	"github.com/stretchr/testify/require"
)

// kernelInputs32 returns float32 bit patterns where rounding to codec.BFloat16 or
// binary16 is decided (each elemtest.Format's values, the midpoints between
// neighbours and the float32s either side of them, both signs), NaNs of
// every kind, random patterns, and runs of normal values with one NaN or
// one out-of-range value at each position of an eight-element group, in
// an order shuffled with a fixed seed so that special values land at
// every position of the kernels' groups of four and eight.
func kernelInputs32(t *testing.T) []uint32 {
	var in []uint32
	add := func(x float32) {
		in = append(in, math.Float32bits(x), math.Float32bits(-x))
	}
	for _, f := range []elemtest.Format{elemtest.BF16Format, elemtest.FP16Format} {
		f.EachStep(func(lo, hi float64) {
			mid := float32((lo + hi) / 2)
			add(float32(lo))
			add(mid)
			add(math.Nextafter32(mid, 0))
			add(math.Nextafter32(mid, float32(math.Inf(1))))
		})
	}
	in = append(in, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffffffff, 0x7fa00000, 0x7f7fffff, 1)
	r := elemtest.NewRand(t)
	for range 1 << 16 {
		in = append(in, r.Uint32())
	}
	r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	for _, odd := range []uint32{0x7fc00000, 0xffffffff, 0x7f800001, 0x477ff000, 0x00000001, 0} {
		for pos := range 8 {
			for i := range 8 {
				v := math.Float32bits(1 + float32(i)/8)
				if i == pos {
					v = odd
				}
				in = append(in, v)
			}
		}
	}
	return in
}

// kernelInputs64 is kernelInputs32 for float64: the inputs of
// TestHalfFromFloat64Reference, shuffled, and groups with one special
// value at each position.
func kernelInputs64(t *testing.T) []uint64 {
	var in []uint64
	for _, f := range []elemtest.Format{elemtest.BF16Format, elemtest.FP16Format} {
		elemtest.ForEachRoundingInput64(t, f, func(x float64) { in = append(in, math.Float64bits(x)) })
	}
	r := elemtest.NewRand(t)
	r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	for _, odd := range []uint64{0x7ff8000000000000, 0xfff0000000000001, 0x7ff0000000000000, math.Float64bits(65520), 1, 0} {
		for pos := range 4 {
			for i := range 4 {
				v := math.Float64bits(1 + float64(i)/4)
				if i == pos {
					v = odd
				}
				in = append(in, v)
			}
		}
	}
	return in
}

// TestKernelsMatchScalar runs every word kernel and every portable loop on
// the inputs above, from each of the first eight offsets so that groups
// and tails fall differently, and requires the result of the scalar
// conversion of half.go for each element, bit for bit.
func TestKernelsMatchScalar(t *testing.T) {
	in32, in64 := kernelInputs32(t), kernelInputs64(t)
	words := make([]uint16, 1<<16)
	for i := range words {
		words[i] = uint16(i)
	}
	f32 := make([]float32, len(in32))
	for i, b := range in32 {
		f32[i] = math.Float32frombits(b)
	}
	f64 := make([]float64, len(in64))
	for i, b := range in64 {
		f64[i] = math.Float64frombits(b)
	}

	t.Run("bf16", func(t *testing.T) {
		scalarEnc32 := func(b uint32) uint16 { return uint16(codec.BFloat16FromFloat32(math.Float32frombits(b))) }
		scalarEnc64 := func(b uint64) uint16 { return uint16(codec.BFloat16FromFloat64(math.Float64frombits(b))) }
		checkEncodeKernel(t, in32, encodeBF16F32, scalarEnc32)
		checkEncodeKernel(t, in64, encodeBF16F64, scalarEnc64)
		checkRoundKernel(t, in32, roundBF16F32, func(b uint32) uint32 { return math.Float32bits(codec.BFloat16(scalarEnc32(b)).Float32()) })
		checkRoundKernel(t, in64, roundBF16F64, func(b uint64) uint64 { return math.Float64bits(codec.BFloat16(scalarEnc64(b)).Float64()) })
		// encodeRoundBF16F32 must give both: the encoding, and the rounded
		// values over its source.
		checkEncodeKernel(t, in32, func(d []uint16, s []uint32) { encodeRoundBF16F32(d, slices.Clone(s)) }, scalarEnc32)
		checkRoundKernel(t, in32, func(s []uint32) { encodeRoundBF16F32(make([]uint16, len(s)), s) },
			func(b uint32) uint32 { return math.Float32bits(codec.BFloat16(scalarEnc32(b)).Float32()) })
		checkDecodeKernel(t, words, func(s []uint16) []uint32 { d := make([]uint32, len(s)); decodeBF16F32(d, s); return d },
			func(w uint16) uint32 { return math.Float32bits(codec.BFloat16(w).Float32()) })
		checkDecodeKernel(t, words, func(s []uint16) []uint64 { d := make([]float64, len(s)); decodeBF16F64(d, s); return bits64(d) },
			func(w uint16) uint64 { return math.Float64bits(codec.BFloat16(w).Float64()) })
		checkPortable(t, codec.BF16, f32, func(x float32) uint16 { return uint16(codec.BFloat16FromFloat32(x)) })
		checkPortable(t, codec.BF16, f64, func(x float64) uint16 { return uint16(codec.BFloat16FromFloat64(x)) })
		checkSumDecoded(t, codec.BF16, f32, words)
	})
	t.Run("fp16", func(t *testing.T) {
		scalarEnc32 := func(b uint32) uint16 { return uint16(codec.Float16FromFloat32(math.Float32frombits(b))) }
		scalarEnc64 := func(b uint64) uint16 { return uint16(codec.Float16FromFloat64(math.Float64frombits(b))) }
		checkEncodeKernel(t, in32, encodeFP16F32, scalarEnc32)
		checkEncodeKernel(t, in64, encodeFP16F64, scalarEnc64)
		checkRoundKernel(t, in32, roundFP16F32, func(b uint32) uint32 { return math.Float32bits(codec.Float16(scalarEnc32(b)).Float32()) })
		checkRoundKernel(t, in64, roundFP16F64, func(b uint64) uint64 { return math.Float64bits(codec.Float16(scalarEnc64(b)).Float64()) })
		checkDecodeKernel(t, words, func(s []uint16) []uint32 { d := make([]uint32, len(s)); decodeFP16F32(d, s); return d },
			func(w uint16) uint32 { return math.Float32bits(codec.Float16(w).Float32()) })
		checkDecodeKernel(t, words, func(s []uint16) []uint64 { d := make([]float64, len(s)); decodeFP16F64(d, s); return bits64(d) },
			func(w uint16) uint64 { return math.Float64bits(codec.Float16(w).Float64()) })
		checkPortable(t, codec.FP16, f32, func(x float32) uint16 { return uint16(codec.Float16FromFloat32(x)) })
		checkPortable(t, codec.FP16, f64, func(x float64) uint16 { return uint16(codec.Float16FromFloat64(x)) })
		checkSumDecoded(t, codec.FP16, f32, words)
	})
}

// checkSumDecoded runs SumDecoded on mine and a payload of words in c, shuffled
// and cycled to mine's length, from each of the first eight offsets, in
// place and into another slice, with and without encoding, and requires
// what the separate steps give: against the scalar conversions for every
// pair but two NaNs (whose sum may be either one, depending on the order
// of the operands), and in place against Decode and Reduce bit for bit,
// which is what collectives did before SumDecoded.
func checkSumDecoded(t *testing.T, c codec.ID, mine []float32, words []uint16) {
	t.Helper()
	decode, encode := func(w uint16) float32 { return codec.BFloat16(w).Float32() }, func(x float32) uint16 { return uint16(codec.BFloat16FromFloat32(x)) }
	if c == codec.FP16 {
		decode, encode = func(w uint16) float32 { return codec.Float16(w).Float32() }, func(x float32) uint16 { return uint16(codec.Float16FromFloat32(x)) }
	}
	w := slices.Clone(words)
	elemtest.NewRand(t).Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	payload := make([]byte, 2*len(mine))
	for i := range mine {
		binary.LittleEndian.PutUint16(payload[2*i:], w[i%len(w)])
	}
	for off := range 8 {
		m, src := mine[off:], payload[2*off:]
		for _, inPlace := range []bool{true, false} {
			for _, encoding := range []bool{false, true} {
				dst := make([]float32, len(m))
				if inPlace {
					copy(dst, m)
				}
				mine := m
				if inPlace {
					mine = dst
				}
				var enc []byte
				if encoding {
					enc = make([]byte, len(src))
				}
				before := slices.Clone(dst)
				if !SumDecoded(c, dst, mine, src, enc) {
					// No kernel here (TestBF16AsmSwitch says where
					// there must be one): nothing may have changed.
					elemtest.RequireSameBits(t, before, dst)
					require.True(t, bytes.Equal(make([]byte, len(enc)), enc), "SumDecoded wrote an encoding and reported it did not run")
					continue
				}
				for i, x := range m {
					word := binary.LittleEndian.Uint16(src[2*i:])
					y := decode(word)
					want := x + y
					if encoding {
						want = decode(encode(want))
						if got, wantWord := binary.LittleEndian.Uint16(enc[2*i:]), encode(dst[i]); got != wantWord {
							t.Fatalf("offset %d, in place %v, element %d: %v + %#04x encoded as %#04x, want %#04x", off, inPlace, i, x, word, got, wantWord)
						}
					}
					if x != x && y != y {
						if dst[i] == dst[i] {
							t.Fatalf("offset %d, in place %v, element %d: NaN + NaN gave %v", off, inPlace, i, dst[i])
						}
						continue
					}
					if math.Float32bits(dst[i]) != math.Float32bits(want) {
						t.Fatalf("offset %d, in place %v, encoding %v, element %d: %v + %#04x gave %v, want %v", off, inPlace, encoding, i, x, word, dst[i], want)
					}
				}
				if !inPlace {
					continue
				}
				want, dec := slices.Clone(m), make([]float32, len(m))
				if err := Decode(c, dec, src); err != nil {
					t.Fatal(err)
				}
				if err := Reduce(codec.Sum, want, dec); err != nil {
					t.Fatal(err)
				}
				wantEnc := make([]byte, len(src))
				if encoding {
					EncodeRounding(c, wantEnc, want)
				}
				elemtest.RequireSameBits(t, want, dst)
				if encoding {
					require.Equal(t, wantEnc, enc, "offset %d: the encoding is not EncodeRounding's", off)
				}
			}
		}
		// SumEncoded writes the encoding SumDecoded writes, from
		// operands SumDecoded has not rounded, and nothing else.
		want, enc := make([]float32, len(m)), make([]byte, len(src))
		ran := SumDecoded(c, want, m, src, enc)
		operands := slices.Clone(m)
		got := make([]byte, len(src))
		require.Equal(t, ran, SumEncoded(c, got, m, src), "offset %d: SumEncoded ran where SumDecoded did not, or the other way", off)
		require.Equal(t, enc, got, "offset %d: SumEncoded's encoding is not SumDecoded's", off)
		elemtest.RequireSameBits(t, operands, m)
	}
}

func bits64(f []float64) []uint64 {
	b := make([]uint64, len(f))
	for i, v := range f {
		b[i] = math.Float64bits(v)
	}
	return b
}

func checkEncodeKernel[U uint32 | uint64](t *testing.T, in []U, kernel func([]uint16, []U), scalar func(U) uint16) {
	t.Helper()
	for off := range 8 {
		src := in[off:]
		got := make([]uint16, len(src))
		kernel(got, src)
		for i, b := range src {
			if want := scalar(b); got[i] != want {
				t.Fatalf("offset %d, element %d: encoding %#x gave %#04x, want %#04x", off, i, b, got[i], want)
			}
		}
	}
}

func checkRoundKernel[U uint32 | uint64](t *testing.T, in []U, kernel func([]U), scalar func(U) U) {
	t.Helper()
	for off := range 8 {
		got := append([]U(nil), in[off:]...)
		kernel(got)
		for i, b := range in[off:] {
			if want := scalar(b); got[i] != want {
				t.Fatalf("offset %d, element %d: rounding %#x gave %#x, want %#x", off, i, b, got[i], want)
			}
		}
	}
}

func checkDecodeKernel[U uint32 | uint64](t *testing.T, words []uint16, decode func([]uint16) []U, scalar func(uint16) U) {
	t.Helper()
	for off := range 8 {
		src := words[off:]
		got := decode(src)
		for i, w := range src {
			if want := scalar(w); got[i] != want {
				t.Fatalf("offset %d: decoding %#04x gave %#x, want %#x", off, w, got[i], want)
			}
		}
	}
}

// checkPortable runs the loops of the copying build on src and requires
// the scalar conversions' results: the encoding, its decoding, and Round.
func checkPortable[F float](t *testing.T, c codec.ID, src []F, scalarEnc func(F) uint16) {
	t.Helper()
	enc := make([]byte, 2*len(src))
	encodeHalfPortable(c, enc, src)
	dec := make([]F, len(src))
	decodeHalfPortable(c, dec, enc)
	round := append([]F(nil), src...)
	roundHalfPortable(c, round)
	for i, v := range src {
		w := binary.LittleEndian.Uint16(enc[2*i:])
		var want F
		switch any(want).(type) {
		case float32:
			want = F(codec.BFloat16(w).Float32())
			if c == codec.FP16 {
				want = F(codec.Float16(w).Float32())
			}
		case float64:
			want = F(codec.BFloat16(w).Float64())
			if c == codec.FP16 {
				want = F(codec.Float16(w).Float64())
			}
		}
		if elemtest.ToBits(dec[i]) != elemtest.ToBits(want) || elemtest.ToBits(round[i]) != elemtest.ToBits(want) {
			t.Fatalf("%v: decoded %v, rounded %v, want %v", v, dec[i], round[i], want)
		}
		if w != scalarEnc(v) {
			t.Fatalf("%v: encoded %#04x, want %#04x", v, w, scalarEnc(v))
		}
	}
}
