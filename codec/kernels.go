package codec

import "math"

// The reduction kernels. reduce and finishAvg switch on the slice type
// once per call and hand concrete slices to one loop per (op, type family):
// no interface and no call through a function value in an inner loop, and
// nothing escapes, so no call allocates. Every loop first reslices src to
// len(dst) so that the compiler drops the bounds checks on src.
//
// The generic loops are instantiated per GC shape, and every integer and
// float type is its own shape, so each compiles to the same code a
// hand-written loop would. BF16, Float16 and uint16 share a shape, which is
// why the half-precision kernels are written out per type.

type signed interface{ int8 | int16 | int32 | int64 }

type unsigned interface {
	uint8 | uint16 | uint32 | uint64
}

type integer interface{ signed | unsigned }

type float interface{ float32 | float64 }

// reduce applies a predefined op: dst[i] = dst[i] ∘ src[i], or src[i] ∘
// dst[i] when left is set. Only float Min and Max look at left: for every
// other predefined op the two orders give the same value (Go leaves the
// payload of a NaN produced by arithmetic unspecified, so there is no order
// to keep for Sum and Prod).
func reduce[T Elem](op Op, dst, src []T, left bool) error {
	switch d := any(dst).(type) {
	case []int8:
		return reduceInt(op, d, any(src).([]int8))
	case []int16:
		return reduceInt(op, d, any(src).([]int16))
	case []int32:
		return reduceInt(op, d, any(src).([]int32))
	case []int64:
		return reduceInt(op, d, any(src).([]int64))
	case []uint8:
		return reduceInt(op, d, any(src).([]uint8))
	case []uint16:
		return reduceInt(op, d, any(src).([]uint16))
	case []uint32:
		return reduceInt(op, d, any(src).([]uint32))
	case []uint64:
		return reduceInt(op, d, any(src).([]uint64))
	case []float32:
		return reduceFloat(op, d, any(src).([]float32), left)
	case []float64:
		return reduceFloat(op, d, any(src).([]float64), left)
	case []BF16:
		return reduceBF16(op, d, any(src).([]BF16), left)
	case []Float16:
		return reduceFloat16(op, d, any(src).([]Float16), left)
	}
	panic("unreachable: Elem covers exactly the cases above")
}

func reduceInt[I integer](op Op, dst, src []I) error {
	switch op.id {
	case OpSum, OpAvg:
		sumInt(dst, src)
	case OpProd:
		prodInt(dst, src)
	case OpMin:
		minInt(dst, src)
	case OpMax:
		maxInt(dst, src)
	case OpAnd:
		andInt(dst, src)
	case OpOr:
		orInt(dst, src)
	case OpXor:
		xorInt(dst, src)
	default:
		return op.Check(DTypeOf[I]())
	}
	return nil
}

func sumInt[I integer](dst, src []I) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

func prodInt[I integer](dst, src []I) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] *= src[i]
	}
}

func minInt[I integer](dst, src []I) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = min(dst[i], src[i])
	}
}

func maxInt[I integer](dst, src []I) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = max(dst[i], src[i])
	}
}

func andInt[I integer](dst, src []I) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] &= src[i]
	}
}

func orInt[I integer](dst, src []I) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] |= src[i]
	}
}

func xorInt[I integer](dst, src []I) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] ^= src[i]
	}
}

func reduceFloat[F float](op Op, dst, src []F, left bool) error {
	switch op.id {
	case OpSum, OpAvg:
		sumFloat(dst, src)
	case OpProd:
		prodFloat(dst, src)
	case OpMin:
		if left {
			minFloatLeft(dst, src)
		} else {
			minFloat(dst, src)
		}
	case OpMax:
		if left {
			maxFloatLeft(dst, src)
		} else {
			maxFloat(dst, src)
		}
	default:
		return op.Check(DTypeOf[F]())
	}
	return nil
}

// sumFloat is unrolled by eight: Go does not vectorize, and a plain loop
// spends as much on its own increment, compare and branch as on the add.
// The loop condition tests both lengths so that the compiler proves the
// sixteen constant indexes in range.
func sumFloat[F float](dst, src []F) {
	for len(dst) >= 8 && len(src) >= 8 {
		dst[0] += src[0]
		dst[1] += src[1]
		dst[2] += src[2]
		dst[3] += src[3]
		dst[4] += src[4]
		dst[5] += src[5]
		dst[6] += src[6]
		dst[7] += src[7]
		dst, src = dst[8:], src[8:]
	}
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// prodFloat is unrolled like sumFloat.
func prodFloat[F float](dst, src []F) {
	for len(dst) >= 8 && len(src) >= 8 {
		dst[0] *= src[0]
		dst[1] *= src[1]
		dst[2] *= src[2]
		dst[3] *= src[3]
		dst[4] *= src[4]
		dst[5] *= src[5]
		dst[6] *= src[6]
		dst[7] *= src[7]
		dst, src = dst[8:], src[8:]
	}
	src = src[:len(dst)]
	for i := range dst {
		dst[i] *= src[i]
	}
}

// fmin returns a ∘ b for Min with a the left operand: a NaN operand is
// the result (the left one if both are), -0 is below +0, and otherwise the
// smaller value. It always returns one of its operands, bit for bit, so
// the result does not depend on how the compiler orders the operands.
func fmin[F float](a, b F) F {
	switch {
	case a < b:
		return a
	case b < a:
		return b
	case a != a:
		return a
	case b != b:
		return b
	case a == 0 && math.Signbit(float64(b)):
		// ±0 against ±0; only here do equal operands differ in bits.
		return b
	}
	return a
}

// fmax is fmin's mirror: a NaN operand is the result (the left one if
// both are), +0 is above -0, and otherwise the larger value.
func fmax[F float](a, b F) F {
	switch {
	case a > b:
		return a
	case b > a:
		return b
	case a != a:
		return a
	case b != b:
		return b
	case a == 0 && !math.Signbit(float64(b)):
		return b
	}
	return a
}

func minFloat[F float](dst, src []F) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = fmin(dst[i], src[i])
	}
}

func minFloatLeft[F float](dst, src []F) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = fmin(src[i], dst[i])
	}
}

func maxFloat[F float](dst, src []F) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = fmax(dst[i], src[i])
	}
}

func maxFloatLeft[F float](dst, src []F) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = fmax(src[i], dst[i])
	}
}

// The half-precision kernels widen both operands to float32 (exact),
// operate in float32 and round the result once. Min and Max compare the
// widened values but store one of the operands unchanged, so a NaN keeps
// its payload exactly.
//
// The two kernels are written out twice on purpose. BF16 and Float16 share
// one GC shape (uint16), so a generic kernel calls their conversions
// through a dictionary for every element: measured 3.5× slower
// (BenchmarkSum/bf16: 0.7 GB/s against 2.5 GB/s).

func reduceBF16(op Op, dst, src []BF16, left bool) error {
	src = src[:len(dst)]
	switch op.id {
	case OpSum, OpAvg:
		for i := range dst {
			dst[i] = BF16FromFloat32(dst[i].Float32() + src[i].Float32())
		}
	case OpProd:
		for i := range dst {
			dst[i] = BF16FromFloat32(dst[i].Float32() * src[i].Float32())
		}
	case OpMin, OpMax:
		isMin := op.id == OpMin
		for i := range dst {
			a, b := dst[i], src[i]
			if left {
				a, b = b, a
			}
			dst[i] = b
			if pickLeft(isMin, a.Float32(), b.Float32()) {
				dst[i] = a
			}
		}
	default:
		return op.Check(BFloat16)
	}
	return nil
}

func reduceFloat16(op Op, dst, src []Float16, left bool) error {
	src = src[:len(dst)]
	switch op.id {
	case OpSum, OpAvg:
		for i := range dst {
			dst[i] = Float16FromFloat32(dst[i].Float32() + src[i].Float32())
		}
	case OpProd:
		for i := range dst {
			dst[i] = Float16FromFloat32(dst[i].Float32() * src[i].Float32())
		}
	case OpMin, OpMax:
		isMin := op.id == OpMin
		for i := range dst {
			a, b := dst[i], src[i]
			if left {
				a, b = b, a
			}
			dst[i] = b
			if pickLeft(isMin, a.Float32(), b.Float32()) {
				dst[i] = a
			}
		}
	default:
		return op.Check(Half)
	}
	return nil
}

// pickLeft reports whether Min (or Max) of left operand a and right operand
// b is a, by the rule of fmin and fmax.
func pickLeft(isMin bool, a, b float32) bool {
	var r float32
	if isMin {
		r = fmin(a, b)
	} else {
		r = fmax(a, b)
	}
	return math.Float32bits(r) == math.Float32bits(a)
}

// finishAvg divides every element of buf by n > 1.
func finishAvg[T Elem](buf []T, n int) {
	switch b := any(buf).(type) {
	case []int8:
		avgSigned(b, n)
	case []int16:
		avgSigned(b, n)
	case []int32:
		avgSigned(b, n)
	case []int64:
		avgSigned(b, n)
	case []uint8:
		avgUnsigned(b, n)
	case []uint16:
		avgUnsigned(b, n)
	case []uint32:
		avgUnsigned(b, n)
	case []uint64:
		avgUnsigned(b, n)
	case []float32:
		avgFloat(b, n)
	case []float64:
		avgFloat(b, n)
	case []BF16:
		d := float32(n)
		for i := range b {
			b[i] = BF16FromFloat32(b[i].Float32() / d)
		}
	case []Float16:
		d := float32(n)
		for i := range b {
			b[i] = Float16FromFloat32(b[i].Float32() / d)
		}
	}
}

// avgSigned divides in int64 because n need not fit in I (an int8 average
// over 200 ranks): Go's / truncates toward zero.
func avgSigned[I signed](buf []I, n int) {
	d := int64(n)
	for i := range buf {
		buf[i] = I(int64(buf[i]) / d)
	}
}

// avgUnsigned divides in uint64 for the same reason as avgSigned.
func avgUnsigned[U unsigned](buf []U, n int) {
	d := uint64(n)
	for i := range buf {
		buf[i] = U(uint64(buf[i]) / d)
	}
}

// avgFloat divides rather than multiplying by 1/n, so each result is the
// correctly rounded quotient, as exact as IEEE arithmetic allows.
func avgFloat[F float](buf []F, n int) {
	d := F(n)
	for i := range buf {
		buf[i] /= d
	}
}
