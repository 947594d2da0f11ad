package kernel

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/gocoll/gocoll/codec"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// maxDecoded bounds what the zstd decoder may allocate: the bound of a
// frame's payload. (Decode also caps its output at len(dst).)
const maxDecoded = 1 << 40

// KnownCodec reports whether c is one of the codecs (S2 is the last).
func KnownCodec(c codec.ID) bool { return c <= codec.S2 }

// Check says why c cannot encode elements of dt, if it cannot: the lossy
// codecs take float32 and float64 only.
func CheckCodec(c codec.ID, dt DType) error {
	switch {
	case !KnownCodec(c):
		return fmt.Errorf("%w: unknown codec %d", codec.ErrInvalid, uint8(c))
	case c.Lossy() && dt != Float32 && dt != Float64:
		return fmt.Errorf("%w: %s compression applies to float32 and float64 data, not %s", codec.ErrInvalid, c, dt)
	}
	return nil
}

// MaxWireLen is the most payload bytes that n elements of dt take on the
// wire with c: what a receive must have room for. Lossless codecs never
// exceed the raw size, since a payload that does not shrink goes raw.
func MaxWireLen(c codec.ID, dt DType, n int) int {
	if c.Lossy() {
		return 2 * n
	}
	return n * dt.Size()
}

// EncodeScratchLen is the size of the dst that Encode needs for n
// elements of dt.
func EncodeScratchLen(c codec.ID, dt DType, n int) int {
	raw := n * dt.Size()
	switch c {
	case codec.Zstd:
		return zstdEncoder().MaxEncodedSize(raw)
	case codec.S2:
		return s2.MaxEncodedLen(raw)
	}
	return MaxWireLen(c, dt, n)
}

// Encode encodes src with c into dst, which must hold
// EncodeScratchLen(c, dt, len(src)) bytes, and returns the payload and
// the codec it is in. That is c, except for a lossless codec whose
// output would not be smaller than src, and for codec.None: then the
// payload is codec.Bytes(src) and the codec codec.None. c must be Valid and
// apply to T (see Check); Encode panics otherwise.
//
// Encode does not allocate, except the first time zstd is used, when it
// builds its encoder, and where Bytes copies (codec.Aliasing is false), for the
// lossless codecs.
func Encode[T codec.Elem](c codec.ID, dst []byte, src []T) ([]byte, codec.ID) {
	switch c {
	case codec.None:
		return codec.Bytes(src), codec.None
	case codec.BF16, codec.FP16:
		return encodeLossy(c, dst, src, false), c
	}
	raw := codec.Bytes(src)
	var out []byte
	switch c {
	case codec.Zstd:
		out = zstdEncoder().EncodeAll(raw, dst[:0])
	case codec.S2:
		out = s2.Encode(dst, raw)
	default:
		panic(fmt.Sprintf("codec: Encode with %s", c))
	}
	if len(out) >= len(raw) {
		return raw, codec.None
	}
	return out, c
}

// EncodeRounding is Encode for a sender that keeps the values it sends:
// with a lossy codec it also replaces src's values by what the payload
// decodes to (Round), in the same pass over src where a kernel does both
// (BF16 on float32 with AVX2), so that the sender's copy is bit for bit
// the receivers'. With any other codec it is Encode.
func EncodeRounding[T codec.Elem](c codec.ID, dst []byte, src []T) ([]byte, codec.ID) {
	if !c.Lossy() {
		return Encode(c, dst, src)
	}
	return encodeLossy(c, dst, src, true), c
}

// encodeLossy is Encode and, with round, EncodeRounding for the lossy
// codec c: the payload, two bytes an element.
func encodeLossy[T codec.Elem](c codec.ID, dst []byte, src []T, round bool) []byte {
	switch s := any(src).(type) {
	case []float32:
		encodeHalfOf(c, dst, s, round)
	case []float64:
		encodeHalfOf(c, dst, s, round)
	default:
		panic(fmt.Sprintf("codec: %s encoding of %s", c, DTypeOf[T]()))
	}
	return dst[:2*len(src)]
}

// encodeHalfOf is encodeHalf, or with round encodeRoundHalf.
func encodeHalfOf[F float](c codec.ID, dst []byte, src []F, round bool) {
	if round {
		encodeRoundHalf(c, dst, src)
	} else {
		encodeHalf(c, dst, src)
	}
}

// Decode decodes src, a payload in codec c, into exactly len(dst)
// elements. It never writes past dst, and a payload of another length or
// that c cannot have produced is an error wrapping codec.ErrCorrupt, after
// which dst's contents are unspecified. A lossy c with an element type it
// does not apply to is an error wrapping codec.ErrInvalid, whatever src is.
// Like Encode, Decode does not allocate where codec.Aliasing is true.
func Decode[T codec.Elem](c codec.ID, dst []T, src []byte) error {
	return decode(c, dst, src, false)
}

// DecodeAround is Decode for a destination larger than the caches that
// the caller does not read again soon, such as the part of a large
// collective's result that arrives compressed. Where a lossy codec's
// vector kernel decodes into float32 (BF16 with AVX2 or AVX-512, FP16 with
// F16C), it writes dst with non-temporal stores, around the caches: a
// line then costs one write to memory, where a store through the caches
// first reads the line to own it, and evicts nothing the caches hold.
// BenchmarkDecodeAround, 2026-11-30, an Intel Xeon host: BF16 into 8 MiB
// of float32 out of the caches took 0.56-0.57 ms that way against
// 1.19-1.25 through them (FP16 0.71-0.78 against 1.29-1.40), while 1 MiB
// that stays in the caches took 65-67 µs against 35-38: a destination
// that fits decodes faster through them.
// Elsewhere DecodeAround is Decode.
func DecodeAround[T codec.Elem](c codec.ID, dst []T, src []byte) error {
	return decode(c, dst, src, true)
}

// decode is Decode, and DecodeAround with around.
func decode[T codec.Elem](c codec.ID, dst []T, src []byte, around bool) error {
	if c.Lossy() {
		if err := CheckCodec(c, DTypeOf[T]()); err != nil {
			return err
		}
		if len(src) != 2*len(dst) {
			return corrupt(c, len(dst), fmt.Sprintf("%d bytes, want %d", len(src), 2*len(dst)))
		}
		switch d := any(dst).(type) {
		case []float32:
			decodeHalf(c, d, src, around)
		case []float64:
			decodeHalf(c, d, src, around)
		}
		return nil
	}
	size := DTypeOf[T]().Size()
	if c == codec.None {
		if len(src) != len(dst)*size {
			return corrupt(c, len(dst), fmt.Sprintf("%d bytes, want %d", len(src), len(dst)*size))
		}
		codec.Store(dst, src)
		return nil
	}
	// The lossless codecs decode into dst's own bytes where Bytes is a
	// view, and into a buffer that Store copies from where it is not.
	var raw []byte
	if codec.Aliasing {
		raw = codec.Bytes(dst)
	} else {
		raw = make([]byte, len(dst)*size)
	}
	switch c {
	case codec.Zstd:
		// The decoder is limited to cap(raw[:0]) == len(raw) bytes
		// (WithDecodeAllCapLimit), so a payload that decodes to more fails
		// instead of making DecodeAll grow a buffer of its own; one that
		// decodes to fewer is caught by the length check.
		out, err := zstdDecoder().DecodeAll(src, raw[:0:len(raw)])
		if err != nil {
			return corrupt(c, len(dst), err.Error())
		}
		if len(out) != len(raw) || len(out) > 0 && &out[0] != &raw[0] {
			return corrupt(c, len(dst), fmt.Sprintf("%d bytes decoded", len(out)))
		}
	case codec.S2:
		n, err := s2.DecodedLen(src)
		if err != nil {
			return corrupt(c, len(dst), err.Error())
		}
		if n != len(raw) {
			return corrupt(c, len(dst), fmt.Sprintf("%d bytes decoded", n))
		}
		if _, err := s2.Decode(raw, src); err != nil {
			return corrupt(c, len(dst), err.Error())
		}
	default:
		return fmt.Errorf("%w: unknown codec %d", codec.ErrCorrupt, uint8(c))
	}
	codec.Store(dst, raw)
	return nil
}

func corrupt(c codec.ID, n int, got string) error {
	return fmt.Errorf("%w: %s payload for %d elements: %s", codec.ErrCorrupt, c, n, got)
}

// Round replaces every value of buf by what it becomes after a trip
// through c: the value a peer decodes, bit for bit. It does nothing for
// lossless codecs, and for element types a lossy codec does not apply to
// (see Check). Rounding a value twice gives the same as once. It never
// allocates.
func Round[T codec.Elem](c codec.ID, buf []T) {
	if !c.Lossy() {
		return
	}
	switch b := any(buf).(type) {
	case []float32:
		roundHalf(c, b)
	case []float64:
		roundHalf(c, b)
	}
}

// SumDecoded is Decode of the lossy payload src followed by a sum:
// dst[i] = mine[i] + the value src's element i decodes to, in one pass
// over the three instead of decoding into a scratch slice and reading it
// back. With encode non-nil it also does what EncodeRounding(c, encode,
// dst) then does, in the same pass: each sum rounded to what the codec
// keeps, its encoding in encode. mine is the left operand, as dst is in
// Reduce, so that where mine is dst the results are Decode's and
// Reduce(codec.Sum)'s bit for bit.
//
// It runs only where a kernel fuses the steps: float32 in BF16 or FP16,
// with the AVX2 (F16C for FP16) or AVX-512 kernels, payloads 2-byte
// aligned. It reports whether it ran; when it did not, nothing was
// written and the caller decodes and reduces apart. src must hold
// 2·len(dst) bytes, encode (when not nil) at least as many, mine
// len(dst) elements, and dst and mine must be the same slice or not
// overlap. SumDecoded does not allocate.
func SumDecoded[T codec.Elem](c codec.ID, dst, mine []T, src, encode []byte) bool {
	d, ok := any(dst).([]float32)
	if !ok || !c.Lossy() || len(src) != 2*len(dst) || len(mine) != len(dst) || encode != nil && len(encode) < 2*len(dst) {
		return false
	}
	return sumDecodedHalf(c, d, any(mine).([]float32), src, encode)
}

// SumEncoded is SumDecoded with encode that keeps only the encodings: encode
// takes, for each i, the encoding of mine[i] plus the value src's element
// i decodes to, the bytes SumDecoded would write there, and no sum is
// stored anywhere. It is for sums that go on to another rank and are not
// kept, such as those of a ring's reduce-scatter steps before the last,
// and spares their destination's stores. It runs where SumDecoded does,
// src and encode each holding 2·len(mine) bytes, and reports whether it
// ran; when it did not, nothing was written. SumEncoded does not
// allocate.
func SumEncoded[T codec.Elem](c codec.ID, encode []byte, mine []T, src []byte) bool {
	m, ok := any(mine).([]float32)
	if !ok || !c.Lossy() || len(src) != 2*len(mine) || len(encode) != 2*len(mine) {
		return false
	}
	return sumEncodedHalf(c, encode, m, src)
}

// The zstd coder is made on first use: building one allocates its
// tables, which a job without zstd should not pay for. One encoder and one
// decoder serve every goroutine.
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic("codec: zstd encoder: " + err.Error())
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithDecoderMaxMemory(maxDecoded), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic("codec: zstd decoder: " + err.Error())
		}
		return d
	})
)

// UnitRoundoff is the unit roundoff u of codec c, half the spacing of its
// format's values at 1: for x in the format's normal range (and x = 0)
// Round(x) = x(1+δ) with |δ| ≤ u. It is 2^-8 for codec.BFloat16 (8 significant
// bits), 2^-11 for FP16 (11 bits), and 0 for the lossless codecs.
func UnitRoundoff(c codec.ID) float64 {
	switch c {
	case codec.BF16:
		return 0x1p-8
	case codec.FP16:
		return 0x1p-11
	}
	return 0
}

// accumRoundoff is the unit roundoff ε of one reduction step on elements
// of dt: one IEEE addition for float32 and float64. For codec.BFloat16 and codec.Float16,
// Reduce adds in float32 and rounds back to 16 bits, two roundings per
// step; ε is the sum of their unit roundoffs, which is what the bound t of
// RoundingBound needs, as (1+a)(1+b) ≤ e^(a+b). Integer sums are exact
// (overflow wraps, which is not rounding).
func accumRoundoff(dt DType) float64 {
	switch dt {
	case Float32:
		return 0x1p-24
	case Float64:
		return 0x1p-53
	case BFloat16:
		return 0x1p-8 + 0x1p-24
	case Float16:
		return 0x1p-11 + 0x1p-24
	}
	return 0
}

// RoundingBound is the relative error bound γ of an allreduce sum of
// ranks contributions of element type dt sent with codec c: the computed
// sum s of x_1, …, x_N (N = ranks) satisfies
//
//	|s - Σ x_i| ≤ γ · Σ |x_i|
//
// when every value that travels is rounded by c at most once per hop, no
// contribution passes more than N+1 roundings by c (its own before it is
// first sent, at most N-1 hops, and the final rounding of the result) and
// N steps of the reduction in dt (N-1 additions and Avg's division), and
// nothing overflows or falls below the normal range of c's format. With
// u = UnitRoundoff(c) and ε the unit roundoff of dt (2^-24 for float32,
// 2^-53 for float64) it returns
//
//	γ = t/(1-t),  t = (N+1)·u + N·ε,
//
// which is at least (1+u)^(N+1)·(1+ε)^N - 1, the exact bound; see "Wire
// compression" in the package documentation for the derivation. It is
// +Inf when t >= 1, where the bound says nothing (from 255 ranks for codec.BFloat16,
// 2047 for FP16).
// For codec.BFloat16 and codec.Float16 data ε is that of the float32 addition plus the
// rounding back to 16 bits; integer data has ε = 0.
//
// RoundingBound panics if ranks < 1 or if c does not apply to dt (see
// Check), as Encode would.
func RoundingBound(c codec.ID, dt DType, ranks int) float64 {
	if ranks < 1 {
		panic(fmt.Sprintf("codec: RoundingBound for %d ranks", ranks))
	}
	if err := CheckCodec(c, dt); err != nil {
		panic("codec: RoundingBound: " + err.Error())
	}
	n := float64(ranks)
	t := (n+1)*UnitRoundoff(c) + n*accumRoundoff(dt)
	switch {
	case t == 0:
		return 0 // exact: integer data, sent losslessly
	case t >= 1:
		return math.Inf(1)
	}
	// t/(1-t) is rounded once, to nearest; the next float64 up is at least
	// the exact quotient, so γ is a bound, not an approximation of one.
	return math.Nextafter(t/(1-t), math.Inf(1))
}
