package codec

import (
	"math"
	"math/bits"
	"strconv"
)

// BF16FromFloat32 returns the BF16 nearest to f, ties to even. Values
// beyond the largest finite BF16 round to ±Inf as IEEE rounding says (BF16
// has float32's exponent range, so only the top half-unit overflows). A NaN
// stays a NaN with its sign and the top bits of its payload, made quiet:
// truncating a signalling NaN whose payload sits in the low bits would
// otherwise give ±Inf.
func BF16FromFloat32(f float32) BF16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return BF16(b>>16) | 0x0040
	}
	// Adding just under half a BF16 unit, plus one when the kept part is
	// odd, carries into bit 16 exactly when the dropped part is above half,
	// or exactly half with an odd kept part: round to nearest, ties to even.
	// A carry out of the mantissa bumps the exponent, which is right too,
	// up to and including the step from the largest finite value to Inf.
	b += 0x7fff + (b>>16)&1
	return BF16(b >> 16)
}

// Float32 returns x as a float32. Every BF16 is exactly a float32.
func (x BF16) Float32() float32 { return math.Float32frombits(uint32(x) << 16) }

// Float64 returns x as a float64, exactly.
func (x BF16) Float64() float64 { return float64(x.Float32()) }

// String formats x like a float32: the shortest decimal that reads back as
// the same float32. As for any fmt.Stringer, fmt uses it for the %v, %s, %q
// and %x verbs; format uint16(x) to see the bits.
func (x BF16) String() string {
	return strconv.FormatFloat(float64(x.Float32()), 'g', -1, 32)
}

// Float16 layout, and the float32 bit patterns where rounding to it changes
// regime.
const (
	f16SignMask = 0x8000
	f16ExpMask  = 0x7c00
	f16Quiet    = 0x0200 // top mantissa bit: set in a quiet NaN
	f16ManBits  = 10

	// f32ToF16Bias rebiases a float32 exponent (bias 127) to a binary16
	// one (bias 15), in place in the float32 bit layout.
	f32ToF16Bias = (127 - 15) << 23

	// f32HalfOverflow is 65520, halfway between the largest finite
	// binary16 (65504) and 2^16. It rounds up to 2^16, which is Inf, since
	// 65504's mantissa is odd: it and everything above it overflow.
	f32HalfOverflow = 0x477ff000
	// f32HalfMinNormal is 2^-14, the smallest normal binary16.
	f32HalfMinNormal = 0x38800000
	// f32HalfUnderflow is 2^-25, half the smallest subnormal binary16
	// (2^-24). It and everything below it round to zero (the tie goes to
	// the even zero).
	f32HalfUnderflow = 0x33000000
)

// Float16FromFloat32 returns the IEEE binary16 value nearest to f, ties to
// even, with gradual underflow to subnormals and ±0. Finite values of 65520
// and beyond in magnitude round to ±Inf. A NaN stays a NaN with its sign
// and the top bits of its payload, made quiet.
func Float16FromFloat32(f float32) Float16 {
	b := math.Float32bits(f)
	sign := Float16(b>>16) & f16SignMask
	a := b & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN
		return sign | f16ExpMask | f16Quiet | Float16(a>>13)&0x3ff
	case a >= f32HalfOverflow: // also Inf itself
		return sign | f16ExpMask
	case a >= f32HalfMinNormal:
		// Normal: rebias the exponent and round the 23-bit mantissa to
		// 10 bits the way BF16FromFloat32 does; a carry out of the
		// mantissa correctly steps up the exponent, and the overflow case
		// above guarantees it never reaches the Inf pattern.
		a -= f32ToF16Bias
		a += 0xfff + (a>>13)&1
		return sign | Float16(a>>13)
	case a <= f32HalfUnderflow:
		return sign
	}
	// Subnormal: the result is m·2^-24 with m < 2^10. The float32 is
	// man·2^(e-150) with its 24-bit significand man and biased exponent
	// e, so m = man·2^(e-126), a right shift by 126-e (14 to 24 here).
	// Rounding up to m = 2^10 gives the smallest normal, whose encoding is
	// exactly that.
	e := a >> 23
	man := a&0x7fffff | 0x800000
	shift := 126 - e
	m := man >> shift
	rem := man & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && m&1 == 1 {
		m++
	}
	return sign | Float16(m)
}

// Float32 returns x as a float32. Every binary16 value, subnormals
// included, is exactly a float32; NaN payloads are kept.
func (x Float16) Float32() float32 {
	sign := uint32(x&f16SignMask) << 16
	exp := uint32(x&f16ExpMask) >> f16ManBits
	man := uint32(x) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp<<23 + f32ToF16Bias) | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal m·2^-24: shift the top set bit of m up to bit 10, the
	// implicit one of a normal float32, and lower the exponent to match.
	shift := uint32(bits.LeadingZeros32(man)) - 21
	return math.Float32frombits(sign | (113-shift)<<23 | (man<<shift)&0x3ff<<13)
}

// Float64 returns x as a float64, exactly.
func (x Float16) Float64() float64 { return float64(x.Float32()) }

// String formats x like a float32: the shortest decimal that reads back as
// the same float32. As for any fmt.Stringer, fmt uses it for the %v, %s, %q
// and %x verbs; format uint16(x) to see the bits.
func (x Float16) String() string {
	return strconv.FormatFloat(float64(x.Float32()), 'g', -1, 32)
}
