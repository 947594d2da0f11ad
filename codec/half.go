package codec

import (
	"math"
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
	// up to and including the step from the largest finite value to Inf,
	// and float32 subnormals round to BF16 subnormals the same way, since
	// the two share an exponent field. Only a NaN could carry into the
	// exponent or the sign, and it went above. (The NaN test is a branch
	// rather than a conditional move because that is faster in scalar
	// loops: data rarely holds NaNs.)
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

	// f32ToF16Bias rebiases a float32 exponent (bias 127) to a binary16
	// one (bias 15), in place in the float32 bit layout.
	f32ToF16Bias = (127 - 15) << 23

	// f32HalfOverflow is 65520, halfway between the largest finite
	// binary16 (65504) and 2^16. It rounds up to 2^16, which is Inf, since
	// 65504's mantissa is odd: it and everything above it overflow.
	f32HalfOverflow = 0x477ff000
	// f32HalfMinNormal is 2^-14, the smallest normal binary16.
	f32HalfMinNormal = 0x38800000
)

// Float16FromFloat32 returns the IEEE binary16 value nearest to f, ties to
// even, with gradual underflow to subnormals and ±0. Finite values of 65520
// and beyond in magnitude round to ±Inf. A NaN stays a NaN with its sign
// and the top bits of its payload, made quiet.
func Float16FromFloat32(f float32) Float16 {
	b := math.Float32bits(f)
	if a := b & 0x7fffffff; a-f32HalfMinNormal < f32HalfOverflow-f32HalfMinNormal {
		return Float16(fp16Normal32(b, a)) // the common case: one predictable branch
	}
	return Float16(fp16FromBits32(b))
}

// fp16Normal32 is fp16FromBits32 for a float32 whose magnitude a is in
// binary16's normal range, [2^-14, 65520): rebias the exponent and round
// the 23-bit mantissa to 10 bits the way BF16FromFloat32 does. A carry out
// of the mantissa correctly steps up the exponent, and below 65520 it
// never reaches the Inf pattern.
func fp16Normal32(b, a uint32) uint16 {
	return uint16(b>>16)&f16SignMask | uint16((a-f32ToF16Bias+0xfff+a>>13&1)>>13)
}

// fp16FromBits32 is Float16FromFloat32 on the bits of a float32, for every
// input. It computes the result of each range and picks one with
// conditional moves, so that it never mispredicts a branch on data that
// mixes zeros, normals and tiny values. Its cost is at the compiler's
// inlining budget, so that the kernels of compress_kernels.go can inline
// it: adding to it moves it out of their loops (go build -gcflags=-m says
// whether it still inlines).
func fp16FromBits32(b uint32) uint16 {
	a := b & 0x7fffffff
	// Normal: as fp16Normal32. The overflow case below takes every input
	// whose rounding would reach the Inf pattern; below the smallest
	// normal the subtraction wraps and r is garbage.
	r := (a - f32ToF16Bias + 0xfff + a>>13&1) >> 13
	// Subnormal or zero: the result is m·2^-24 with m <= 2^10. Adding 0.5,
	// whose float32 unit is 2^-24, makes the FPU round |f| to a multiple of
	// 2^-24, to nearest with ties to even, once; what lands above 0.5 is m.
	// m = 2^10 is the smallest normal, whose encoding is exactly that.
	// (A float32 subnormal operand makes the addition slow on some CPUs;
	// such inputs are rare, and the result is right.)
	t := math.Float32bits(math.Float32frombits(a)+0.5) - 0x3f000000 // 0.5
	if a < f32HalfMinNormal {
		r = t
	}
	if a >= f32HalfOverflow { // also Inf itself
		r = f16ExpMask
	}
	if a > 0x7f800000 { // NaN
		r = f16ExpMask | f16Quiet | a>>13&0x3ff
	}
	return uint16(b>>16)&f16SignMask | uint16(r)
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
	if a >= f16ExpMask {
		b |= 0x7f800000
	}
	return math.Float32frombits(uint32(x&f16SignMask)<<16 | b)
}

// Float64 returns x as a float64, exactly.
func (x Float16) Float64() float64 { return float64(x.Float32()) }

// String formats x like a float32: the shortest decimal that reads back as
// the same float32. As for any fmt.Stringer, fmt uses it for the %v, %s, %q
// and %x verbs; format uint16(x) to see the bits.
func (x Float16) String() string {
	return strconv.FormatFloat(float64(x.Float32()), 'g', -1, 32)
}

// The float64 layout, and the float64 bit patterns where rounding to BF16
// and binary16 changes regime. Each threshold is a float64 that is exact,
// so comparing the bits of |f| with it compares the values.
const (
	f64SignMask = 1 << 63
	f64Inf      = 0x7ff0000000000000

	// f64ToBF16Bias rebiases a float64 exponent (bias 1023) to a BF16 one
	// (bias 127), in place in the float64 bit layout; f64BF16MinNormal
	// is 2^-126, the smallest normal BF16.
	f64ToBF16Bias    = (1023 - 127) << 52
	f64BF16MinNormal = (1023 - 126) << 52
	// f64BF16Overflow is (2-2^-8)·2^127, halfway between the largest
	// finite BF16, (2-2^-7)·2^127 = 0x7f7f, and 2^128: it rounds to
	// 2^128, which is Inf, since 0x7f7f is odd, and so does all above it.
	f64BF16Overflow = (1023+127)<<52 | (1<<8-1)<<44
	// f64BF16Tiny is 2^-81, whose float64 unit is 2^-133, the smallest
	// subnormal BF16 (2^-126 with 7 mantissa bits).
	f64BF16Tiny     = 0x1p-81
	f64BF16TinyBits = (1023 - 81) << 52

	// The same for binary16: bias 15, smallest normal 2^-14, overflow at
	// (2-2^-11)·2^15 = 65520, and 2^28, whose unit is 2^-24, the smallest
	// binary16 subnormal.
	f64ToF16Bias     = (1023 - 15) << 52
	f64HalfMinNormal = (1023 - 14) << 52
	f64HalfOverflow  = (1023+15)<<52 | (1<<11-1)<<41
	f64HalfTiny      = 0x1p28
	f64HalfTinyBits  = (1023 + 28) << 52
)

// BF16FromFloat64 returns the BF16 nearest to f, ties to even, rounding
// once: going through float32 would round twice, and a float64 just above
// a BF16 tie that float32 rounds onto the tie would then go to even
// instead of up. Values of (2-2^-8)·2^127 and beyond in magnitude round to
// ±Inf; values below float32's normal range round to BF16 subnormals
// (multiples of 2^-133) or ±0 with their sign. A NaN stays a NaN with its
// sign and the top bits of its payload, made quiet, as BF16FromFloat32
// gives for float32(f).
func BF16FromFloat64(f float64) BF16 {
	b := math.Float64bits(f)
	if a := b &^ f64SignMask; a-f64BF16MinNormal < f64BF16Overflow-f64BF16MinNormal {
		return BF16(bf16Normal64(b, a))
	}
	return BF16(bf16FromBits64(b))
}

// bf16Normal64 is bf16FromBits64 for a float64 whose magnitude a is in
// BF16's normal range: rebias and round the 52-bit mantissa to 7 bits, as
// BF16FromFloat32 does with 23.
func bf16Normal64(b, a uint64) uint16 {
	return uint16(b>>48)&0x8000 | uint16((a-f64ToBF16Bias+(1<<44-1)+a>>45&1)>>45)
}

// bf16FromBits64 is BF16FromFloat64 on the bits of a float64, for every
// input, with conditional moves and at the inlining budget like
// fp16FromBits32.
func bf16FromBits64(b uint64) uint16 {
	a := b &^ f64SignMask
	// Normal range: as bf16Normal64. Garbage below 2^-126.
	r := (a - f64ToBF16Bias + (1<<44 - 1) + a>>45&1) >> 45
	// Below 2^-126 the result is a multiple of 2^-133, what the FPU
	// rounds |f| to when it adds 2^-81 (see fp16FromBits32).
	t := math.Float64bits(math.Float64frombits(a)+f64BF16Tiny) - f64BF16TinyBits
	if a < f64BF16MinNormal {
		r = t
	}
	if a >= f64BF16Overflow {
		r = 0x7f80
	}
	if a > f64Inf {
		r = 0x7fc0 | a>>45&0x7f
	}
	return uint16(b>>48)&0x8000 | uint16(r)
}

// Float16FromFloat64 returns the binary16 value nearest to f, ties to
// even, rounding once (not through float32), with gradual underflow to
// subnormals and ±0. Finite values of 65520 and beyond in magnitude round
// to ±Inf. A NaN stays a NaN with its sign and the top bits of its
// payload, made quiet.
func Float16FromFloat64(f float64) Float16 {
	b := math.Float64bits(f)
	if a := b &^ f64SignMask; a-f64HalfMinNormal < f64HalfOverflow-f64HalfMinNormal {
		return Float16(fp16Normal64(b, a))
	}
	return Float16(fp16FromBits64(b))
}

// fp16Normal64 is fp16FromBits64 for a float64 whose magnitude a is in
// binary16's normal range.
func fp16Normal64(b, a uint64) uint16 {
	return uint16(b>>48)&f16SignMask | uint16((a-f64ToF16Bias+(1<<41-1)+a>>42&1)>>42)
}

// fp16FromBits64 is Float16FromFloat64 on the bits of a float64, for every
// input, with conditional moves and at the inlining budget like
// fp16FromBits32, which it follows step by step with the float64 layout:
// 42 mantissa bits to drop instead of 13, and 2^28, whose float64 unit is
// 2^-24, as the addend that rounds tiny values.
func fp16FromBits64(b uint64) uint16 {
	a := b &^ f64SignMask
	r := (a - f64ToF16Bias + (1<<41 - 1) + a>>42&1) >> 42
	t := math.Float64bits(math.Float64frombits(a)+f64HalfTiny) - f64HalfTinyBits
	if a < f64HalfMinNormal {
		r = t
	}
	if a >= f64HalfOverflow {
		r = f16ExpMask
	}
	if a > f64Inf {
		r = f16ExpMask | f16Quiet | a>>42&0x3ff
	}
	return uint16(b>>48)&f16SignMask | uint16(r)
}
