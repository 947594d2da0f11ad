package codec

import (
	"math"
	"strconv"

	"github.com/gocoll/gocoll/internal/half"
)

// BFloat16FromFloat32 returns the BFloat16 nearest to f, ties to even. Values
// beyond the largest finite BFloat16 round to ±Inf as IEEE rounding says (BFloat16
// has float32's exponent range, so only the top half-unit overflows). A NaN
// stays a NaN with its sign and the top bits of its payload, made quiet:
// truncating a signalling NaN whose payload sits in the low bits would
// otherwise give ±Inf.
func BFloat16FromFloat32(f float32) BFloat16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return BFloat16(b>>16) | 0x0040
	}
	// Adding just under half a BFloat16 unit, plus one when the kept part is
	// odd, carries into bit 16 exactly when the dropped part is above half,
	// or exactly half with an odd kept part: round to nearest, ties to even.
	// A carry out of the mantissa bumps the exponent, which is right too,
	// up to and including the step from the largest finite value to Inf,
	// and float32 subnormals round to BFloat16 subnormals the same way, since
	// the two share an exponent field. Only a NaN could carry into the
	// exponent or the sign, and it went above. (The NaN test is a branch
	// rather than a conditional move because that is faster in scalar
	// loops: data rarely holds NaNs.)
	b += 0x7fff + (b>>16)&1
	return BFloat16(b >> 16)
}

// Float32 returns x as a float32. Every BFloat16 is exactly a float32.
func (x BFloat16) Float32() float32 { return math.Float32frombits(uint32(x) << 16) }

// Float64 returns x as a float64, exactly.
func (x BFloat16) Float64() float64 { return float64(x.Float32()) }

// String formats x like a float32: the shortest decimal that reads back as
// the same float32. As for any fmt.Stringer, fmt uses it for the %v, %s, %q
// and %x verbs; format uint16(x) to see the bits.
func (x BFloat16) String() string {
	return strconv.FormatFloat(float64(x.Float32()), 'g', -1, 32)
}

// Float16FromFloat32 returns the IEEE binary16 value nearest to f, ties to
// even, with gradual underflow to subnormals and ±0. Finite values of 65520
// and beyond in magnitude round to ±Inf. A NaN stays a NaN with its sign
// and the top bits of its payload, made quiet.
func Float16FromFloat32(f float32) Float16 {
	b := math.Float32bits(f)
	if a := b & 0x7fffffff; a-half.F32HalfMinNormal < half.F32HalfOverflow-half.F32HalfMinNormal {
		return Float16(half.FP16Normal32(b, a)) // the common case: one predictable branch
	}
	return Float16(half.FP16FromBits32(b))
}

// Float32 returns x as a float32. Every binary16 value, subnormals
// included, is exactly a float32; NaN payloads are kept.
func (x Float16) Float32() float32 {
	// x's exponent and mantissa, moved to the float32 fields, read as a
	// float32 that is x·2^-112 (2^-112 = 2^(15-127) is the difference of
	// the biases): for a binary16 subnormal it is a float32 subnormal with
	// the same mantissa. Multiplying by 2^112 is exact and normalises it.
	// Only Inf and NaN, exponent 31, need their exponent set to all ones,
	// which keeps the payload. (The subnormal operand makes the
	// multiplication slow on some CPUs; binary16 subnormals are rare.)
	a := uint32(x) & 0x7fff
	b := math.Float32bits(math.Float32frombits(a<<13) * 0x1p112)
	if a >= half.F16ExpMask {
		b |= 0x7f800000
	}
	return math.Float32frombits(uint32(x&half.F16SignMask)<<16 | b)
}

// Float64 returns x as a float64, exactly.
func (x Float16) Float64() float64 { return float64(x.Float32()) }

// String formats x like a float32: the shortest decimal that reads back as
// the same float32. As for any fmt.Stringer, fmt uses it for the %v, %s, %q
// and %x verbs; format uint16(x) to see the bits.
func (x Float16) String() string {
	return strconv.FormatFloat(float64(x.Float32()), 'g', -1, 32)
}

// BFloat16FromFloat64 returns the BFloat16 nearest to f, ties to even, rounding
// once: going through float32 would round twice, and a float64 just above
// a BFloat16 tie that float32 rounds onto the tie would then go to even
// instead of up. Values of (2-2^-8)·2^127 and beyond in magnitude round to
// ±Inf; values below float32's normal range round to BFloat16 subnormals
// (multiples of 2^-133) or ±0 with their sign. A NaN stays a NaN with its
// sign and the top bits of its payload, made quiet, as BFloat16FromFloat32
// gives for float32(f).
func BFloat16FromFloat64(f float64) BFloat16 {
	b := math.Float64bits(f)
	if a := b &^ half.F64SignMask; a-half.F64BF16MinNormal < half.F64BF16Overflow-half.F64BF16MinNormal {
		return BFloat16(half.BF16Normal64(b, a))
	}
	return BFloat16(half.BF16FromBits64(b))
}

// Float16FromFloat64 returns the binary16 value nearest to f, ties to
// even, rounding once (not through float32), with gradual underflow to
// subnormals and ±0. Finite values of 65520 and beyond in magnitude round
// to ±Inf. A NaN stays a NaN with its sign and the top bits of its
// payload, made quiet.
func Float16FromFloat64(f float64) Float16 {
	b := math.Float64bits(f)
	if a := b &^ half.F64SignMask; a-half.F64HalfMinNormal < half.F64HalfOverflow-half.F64HalfMinNormal {
		return Float16(half.FP16Normal64(b, a))
	}
	return Float16(half.FP16FromBits64(b))
}
