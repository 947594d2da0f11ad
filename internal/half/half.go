// Package half holds the bit-level conversions to bfloat16 and IEEE
// binary16 that package codec's BFloat16 and Float16 conversions and the
// lossy compression kernels of internal/kernel share. They work on the
// bits of float32 and float64 values, so that a kernel can run them on a
// view of a payload without converting every element to a float first.
package half

import "math"

// Float16 layout, and the float32 bit patterns where rounding to it changes
// regime.
const (
	F16SignMask = 0x8000
	F16ExpMask  = 0x7c00
	f16Quiet    = 0x0200 // top mantissa bit: set in a quiet NaN

	// f32ToF16Bias rebiases a float32 exponent (bias 127) to a binary16
	// one (bias 15), in place in the float32 bit layout.
	f32ToF16Bias = (127 - 15) << 23

	// F32HalfOverflow is 65520, halfway between the largest finite
	// binary16 (65504) and 2^16. It rounds up to 2^16, which is Inf, since
	// 65504's mantissa is odd: it and everything above it overflow.
	F32HalfOverflow = 0x477ff000
	// F32HalfMinNormal is 2^-14, the smallest normal binary16.
	F32HalfMinNormal = 0x38800000
)

// FP16Normal32 is FP16FromBits32 for a float32 whose magnitude a is in
// binary16's normal range, [2^-14, 65520): rebias the exponent and round
// the 23-bit mantissa to 10 bits the way BF16FromFloat32 does. A carry out
// of the mantissa correctly steps up the exponent, and below 65520 it
// never reaches the Inf pattern.
func FP16Normal32(b, a uint32) uint16 {
	return uint16(b>>16)&F16SignMask | uint16((a-f32ToF16Bias+0xfff+a>>13&1)>>13)
}

// FP16FromBits32 is Float16FromFloat32 on the bits of a float32, for every
// input. It computes the result of each range and picks one with
// conditional moves, so that it never mispredicts a branch on data that
// mixes zeros, normals and tiny values. Its cost is at the compiler's
// inlining budget, so that the kernels of compress_kernels.go can inline
// it: adding to it moves it out of their loops (go build -gcflags=-m says
// whether it still inlines).
func FP16FromBits32(b uint32) uint16 {
	a := b & 0x7fffffff
	// Normal: as FP16Normal32. The overflow case below takes every input
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
	if a < F32HalfMinNormal {
		r = t
	}
	if a >= F32HalfOverflow { // also Inf itself
		r = F16ExpMask
	}
	if a > 0x7f800000 { // NaN
		r = F16ExpMask | f16Quiet | a>>13&0x3ff
	}
	return uint16(b>>16)&F16SignMask | uint16(r)
}

// The float64 layout, and the float64 bit patterns where rounding to BF16
// and binary16 changes regime. Each threshold is a float64 that is exact,
// so comparing the bits of |f| with it compares the values.
const (
	F64SignMask = 1 << 63
	f64Inf      = 0x7ff0000000000000

	// f64ToBF16Bias rebiases a float64 exponent (bias 1023) to a BF16 one
	// (bias 127), in place in the float64 bit layout; F64BF16MinNormal
	// is 2^-126, the smallest normal BF16.
	f64ToBF16Bias    = (1023 - 127) << 52
	F64BF16MinNormal = (1023 - 126) << 52
	// F64BF16Overflow is (2-2^-8)·2^127, halfway between the largest
	// finite BF16, (2-2^-7)·2^127 = 0x7f7f, and 2^128: it rounds to
	// 2^128, which is Inf, since 0x7f7f is odd, and so does all above it.
	F64BF16Overflow = (1023+127)<<52 | (1<<8-1)<<44
	// f64BF16Tiny is 2^-81, whose float64 unit is 2^-133, the smallest
	// subnormal BF16 (2^-126 with 7 mantissa bits).
	f64BF16Tiny     = 0x1p-81
	f64BF16TinyBits = (1023 - 81) << 52

	// The same for binary16: bias 15, smallest normal 2^-14, overflow at
	// (2-2^-11)·2^15 = 65520, and 2^28, whose unit is 2^-24, the smallest
	// binary16 subnormal.
	f64ToF16Bias     = (1023 - 15) << 52
	F64HalfMinNormal = (1023 - 14) << 52
	F64HalfOverflow  = (1023+15)<<52 | (1<<11-1)<<41
	f64HalfTiny      = 0x1p28
	f64HalfTinyBits  = (1023 + 28) << 52
)

// BF16Normal64 is BF16FromBits64 for a float64 whose magnitude a is in
// BF16's normal range: rebias and round the 52-bit mantissa to 7 bits, as
// BF16FromFloat32 does with 23.
func BF16Normal64(b, a uint64) uint16 {
	return uint16(b>>48)&0x8000 | uint16((a-f64ToBF16Bias+(1<<44-1)+a>>45&1)>>45)
}

// BF16FromBits64 is BF16FromFloat64 on the bits of a float64, for every
// input, with conditional moves and at the inlining budget like
// FP16FromBits32.
func BF16FromBits64(b uint64) uint16 {
	a := b &^ F64SignMask
	// Normal range: as BF16Normal64. Garbage below 2^-126.
	r := (a - f64ToBF16Bias + (1<<44 - 1) + a>>45&1) >> 45
	// Below 2^-126 the result is a multiple of 2^-133, what the FPU
	// rounds |f| to when it adds 2^-81 (see FP16FromBits32).
	t := math.Float64bits(math.Float64frombits(a)+f64BF16Tiny) - f64BF16TinyBits
	if a < F64BF16MinNormal {
		r = t
	}
	if a >= F64BF16Overflow {
		r = 0x7f80
	}
	if a > f64Inf {
		r = 0x7fc0 | a>>45&0x7f
	}
	return uint16(b>>48)&0x8000 | uint16(r)
}

// FP16Normal64 is FP16FromBits64 for a float64 whose magnitude a is in
// binary16's normal range.
func FP16Normal64(b, a uint64) uint16 {
	return uint16(b>>48)&F16SignMask | uint16((a-f64ToF16Bias+(1<<41-1)+a>>42&1)>>42)
}

// FP16FromBits64 is Float16FromFloat64 on the bits of a float64, for every
// input, with conditional moves and at the inlining budget like
// FP16FromBits32, which it follows step by step with the float64 layout:
// 42 mantissa bits to drop instead of 13, and 2^28, whose float64 unit is
// 2^-24, as the addend that rounds tiny values.
func FP16FromBits64(b uint64) uint16 {
	a := b &^ F64SignMask
	r := (a - f64ToF16Bias + (1<<41 - 1) + a>>42&1) >> 42
	t := math.Float64bits(math.Float64frombits(a)+f64HalfTiny) - f64HalfTinyBits
	if a < F64HalfMinNormal {
		r = t
	}
	if a >= F64HalfOverflow {
		r = F16ExpMask
	}
	if a > f64Inf {
		r = F16ExpMask | f16Quiet | a>>42&0x3ff
	}
	return uint16(b>>48)&F16SignMask | uint16(r)
}
