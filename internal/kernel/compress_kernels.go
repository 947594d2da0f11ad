package kernel

import (
	"encoding/binary"
	"math"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/half"
)

// The lossy codecs' kernels.
//
// On the wire a lossy payload is little-endian 16-bit words. Where views
// exist (view_unsafe.go's build) and the payload is 2-byte aligned,
// compress_unsafe.go views the payload as []uint16 and the float slice as
// its bit patterns ([]uint32 or []uint64) and runs the word kernels below:
// integer loops over slices resliced to the same length first, so that the
// compiler drops the bounds checks, with the conversion written out in the
// loop body (the functions of half.go that do not inline would otherwise
// cost a call per element), no interface, function value or allocation,
// and the element type and codec switched on once per call. Otherwise
// (purego or nounsafe tag, big-endian hosts, a misaligned payload) the
// portable loops at the end run instead: one call of half.go per element,
// through encoding/binary.
//
// Each word kernel computes exactly what the function of half.go named in
// its comment computes, bit for bit (TestKernelsMatchScalar checks): they
// inline the helpers of half.go that those functions are made of
// (half.FP16Normal32 for the normal range, half.FP16FromBits32 for every input, and
// their float64 and codec.BFloat16 counterparts).

// Word masks of the SWAR bf16 kernels, which work on two float32 bit
// patterns in one uint64: lanes are its low and high 32 bits.
const (
	lanesAbs     = 0x7fffffff_7fffffff // clears each lane's sign
	lanesNaNBias = 0x007fffff_007fffff // carries into bit 31 of a lane exactly when |lane| > Inf: a NaN
	lanesTop     = 0x80000000_80000000
	lanesHalf    = 0x00007fff_00007fff // just under half a codec.BFloat16 unit
	lanesOdd     = 0x00000001_00000001 // the lowest kept bit, after >>16
	lanesKept    = 0xffff0000_ffff0000
)

// nanLanes has bit 31 of a lane set when that lane of x is a NaN. The sum
// cannot carry out of a lane: |lane| + 0x7fffff < 2^32.
func nanLanes(x uint64) uint64 { return (x&lanesAbs + lanesNaNBias) & lanesTop }

// roundBF16Lanes rounds both lanes of x, neither a NaN, to codec.BFloat16 in their
// top 16 bits, as codec.BFloat16FromFloat32. With no NaN a lane is at most
// 0xff800000 (-Inf), so adding half a unit plus one never carries into
// the next lane.
func roundBF16Lanes(x uint64) uint64 { return x + lanesHalf + x>>16&lanesOdd }

// lanes2 reads two float32 bit patterns as the lanes of a uint64. The
// compiler fuses the two loads into one where the architecture allows
// unaligned loads.
func lanes2(s []uint32) uint64 { return uint64(s[0]) | uint64(s[1])<<32 }

// encodeBF16F32 is codec.BFloat16FromFloat32 of each src[i] as float32 bits:
// with the AVX2 kernel (kernels_amd64.s) where it runs, else, and for the
// last elements, eight at a time as four pairs of lanes. A group with a
// NaN, rare in real data, goes the scalar way.
func encodeBF16F32(dst []uint16, src []uint32) {
	dst = dst[:len(src)]
	i := encodeBF16Asm(dst, src) // where there is an assembly kernel
	for ; i+8 <= len(src); i += 8 {
		s, d := src[i:i+8:i+8], dst[i:i+8:i+8]
		x, y, z, w := lanes2(s[0:2]), lanes2(s[2:4]), lanes2(s[4:6]), lanes2(s[6:8])
		if nanLanes(x)|nanLanes(y)|nanLanes(z)|nanLanes(w) != 0 {
			for j, b := range s {
				d[j] = uint16(codec.BFloat16FromFloat32(math.Float32frombits(b)))
			}
			continue
		}
		x, y, z, w = roundBF16Lanes(x), roundBF16Lanes(y), roundBF16Lanes(z), roundBF16Lanes(w)
		d[0], d[1] = uint16(x>>16), uint16(x>>48)
		d[2], d[3] = uint16(y>>16), uint16(y>>48)
		d[4], d[5] = uint16(z>>16), uint16(z>>48)
		d[6], d[7] = uint16(w>>16), uint16(w>>48)
	}
	for ; i < len(src); i++ {
		dst[i] = uint16(codec.BFloat16FromFloat32(math.Float32frombits(src[i])))
	}
}

// encodeRoundBF16F32 is encodeBF16F32 that also sets each src[i] to the
// float32 bits of dst[i], what the peer decodes: in one pass with the
// AVX2 kernel where it runs, else, and for the last elements, encoding
// and then decoding.
func encodeRoundBF16F32(dst []uint16, src []uint32) {
	dst = dst[:len(src)]
	i := encodeRoundBF16Asm(dst, src)
	encodeBF16F32(dst[i:], src[i:])
	decodeBF16F32(src[i:], dst[i:])
}

// roundBF16F32 is codec.BFloat16FromFloat32(v).Float32() in place on float32 bits,
// the way encodeBF16F32 goes.
func roundBF16F32(buf []uint32) {
	i := 0
	for ; i+8 <= len(buf); i += 8 {
		s := buf[i : i+8 : i+8]
		x, y, z, w := lanes2(s[0:2]), lanes2(s[2:4]), lanes2(s[4:6]), lanes2(s[6:8])
		if nanLanes(x)|nanLanes(y)|nanLanes(z)|nanLanes(w) != 0 {
			for j, b := range s {
				s[j] = math.Float32bits(codec.BFloat16FromFloat32(math.Float32frombits(b)).Float32())
			}
			continue
		}
		x, y = roundBF16Lanes(x)&lanesKept, roundBF16Lanes(y)&lanesKept
		z, w = roundBF16Lanes(z)&lanesKept, roundBF16Lanes(w)&lanesKept
		s[0], s[1], s[2], s[3] = uint32(x), uint32(x>>32), uint32(y), uint32(y>>32)
		s[4], s[5], s[6], s[7] = uint32(z), uint32(z>>32), uint32(w), uint32(w>>32)
	}
	for ; i < len(buf); i++ {
		buf[i] = math.Float32bits(codec.BFloat16FromFloat32(math.Float32frombits(buf[i])).Float32())
	}
}

// decodeBF16F32 is codec.BFloat16.Float32 into float32 bits: with the
// AVX2 kernel where it runs, else, and for the last elements, unrolled
// by eight like the reduction loops: the shift is one instruction, so a
// plain loop spends most of its time on its own index, compare and
// branch.
func decodeBF16F32(dst []uint32, src []uint16) {
	src = src[:len(dst)]
	n := decodeBF16Asm(dst, src) // where there is an assembly kernel
	dst, src = dst[n:], src[n:]
	for len(dst) >= 8 && len(src) >= 8 {
		dst[0], dst[1] = uint32(src[0])<<16, uint32(src[1])<<16
		dst[2], dst[3] = uint32(src[2])<<16, uint32(src[3])<<16
		dst[4], dst[5] = uint32(src[4])<<16, uint32(src[5])<<16
		dst[6], dst[7] = uint32(src[6])<<16, uint32(src[7])<<16
		dst, src = dst[8:], src[8:]
	}
	for i := range dst {
		dst[i] = uint32(src[i]) << 16
	}
}

// The binary16 and float64 kernels take four elements at a time, and when
// all four are in the target's normal range (what real data nearly always
// is) round them with the normal-range step of the conversion alone: one
// predictable branch per four elements instead of the three conditional
// moves per element that the full conversion needs to cover zeros, tiny
// values, overflow and NaN. Other groups take the full conversion.

// allBelow4 reports whether each of a0..a3 is below span. With ai = |x| -
// lo, which wraps for |x| < lo, that says every |x| is in [lo, lo+span).
// max compiles to conditional moves, so there is one branch.
func allBelow4[U uint32 | uint64](a0, a1, a2, a3, span U) bool {
	return max(a0, a1, a2, a3) < span
}

// encodeFP16F32 is codec.Float16FromFloat32 of each src[i] as float32 bits:
// with the F16C kernel (kernels_amd64.s) where it runs, else, and for the
// last elements, four at a time.
func encodeFP16F32(dst []uint16, src []uint32) {
	dst = dst[:len(src)]
	const lo, span = half.F32HalfMinNormal, half.F32HalfOverflow - half.F32HalfMinNormal
	i := encodeFP16Asm(dst, src) // where there is an assembly kernel
	for ; i+4 <= len(src); i += 4 {
		s, d := src[i:i+4:i+4], dst[i:i+4:i+4]
		a0, a1, a2, a3 := s[0]&0x7fffffff, s[1]&0x7fffffff, s[2]&0x7fffffff, s[3]&0x7fffffff
		if allBelow4(a0-lo, a1-lo, a2-lo, a3-lo, span) {
			d[0], d[1] = half.FP16Normal32(s[0], a0), half.FP16Normal32(s[1], a1)
			d[2], d[3] = half.FP16Normal32(s[2], a2), half.FP16Normal32(s[3], a3)
			continue
		}
		for j, b := range s {
			d[j] = half.FP16FromBits32(b)
		}
	}
	for ; i < len(src); i++ {
		dst[i] = half.FP16FromBits32(src[i])
	}
}

// roundFP16F32 is codec.Float16FromFloat32(v).Float32() in place on float32
// bits. In the normal range that is rounding the mantissa to 10 bits in
// place: the rounding step of half.FP16Normal32 without the rebias, with the
// dropped bits cleared.
func roundFP16F32(buf []uint32) {
	const lo, span = half.F32HalfMinNormal, half.F32HalfOverflow - half.F32HalfMinNormal
	const dropped = 1<<13 - 1
	i := 0
	for ; i+4 <= len(buf); i += 4 {
		s := buf[i : i+4 : i+4]
		a0, a1, a2, a3 := s[0]&0x7fffffff, s[1]&0x7fffffff, s[2]&0x7fffffff, s[3]&0x7fffffff
		if allBelow4(a0-lo, a1-lo, a2-lo, a3-lo, span) {
			s[0] = (s[0] + 0xfff + a0>>13&1) &^ dropped
			s[1] = (s[1] + 0xfff + a1>>13&1) &^ dropped
			s[2] = (s[2] + 0xfff + a2>>13&1) &^ dropped
			s[3] = (s[3] + 0xfff + a3>>13&1) &^ dropped
			continue
		}
		for j, b := range s {
			s[j] = math.Float32bits(codec.Float16(half.FP16FromBits32(b)).Float32())
		}
	}
	for ; i < len(buf); i++ {
		buf[i] = math.Float32bits(codec.Float16(half.FP16FromBits32(buf[i])).Float32())
	}
}

// decodeFP16F32 is codec.Float16.Float32 into float32 bits: with the F16C
// kernel where it runs, else, and for the last elements, one at a time.
// The conversion has no branch and inlines; a fast path for normal values
// gains little.
func decodeFP16F32(dst []uint32, src []uint16) {
	src = src[:len(dst)]
	for i := decodeFP16Asm(dst, src); i < len(dst); i++ {
		dst[i] = math.Float32bits(codec.Float16(src[i]).Float32())
	}
}

// decodeBF16F32Around is decodeBF16F32 whose vector kernel, where the
// CPU has one, stores around the caches: from dst's first 64-byte
// boundary on, since non-temporal stores need their vector's alignment.
func decodeBF16F32Around(dst []uint32, src []uint16) {
	src = src[:len(dst)]
	lo, hi := decodeBF16AroundAsm(dst, src)
	decodeBF16F32(dst[:lo], src[:lo])
	decodeBF16F32(dst[hi:], src[hi:])
}

// decodeFP16F32Around is decodeBF16F32Around for decodeFP16F32.
func decodeFP16F32Around(dst []uint32, src []uint16) {
	src = src[:len(dst)]
	lo, hi := decodeFP16AroundAsm(dst, src)
	decodeFP16F32(dst[:lo], src[:lo])
	decodeFP16F32(dst[hi:], src[hi:])
}

// encodeBF16F64 is codec.BFloat16FromFloat64 of each src[i] as float64 bits.
func encodeBF16F64(dst []uint16, src []uint64) {
	dst = dst[:len(src)]
	const lo, span = half.F64BF16MinNormal, half.F64BF16Overflow - half.F64BF16MinNormal
	i := 0
	for ; i+4 <= len(src); i += 4 {
		s, d := src[i:i+4:i+4], dst[i:i+4:i+4]
		a0, a1, a2, a3 := s[0]&^half.F64SignMask, s[1]&^half.F64SignMask, s[2]&^half.F64SignMask, s[3]&^half.F64SignMask
		if allBelow4(a0-lo, a1-lo, a2-lo, a3-lo, span) {
			d[0], d[1] = half.BF16Normal64(s[0], a0), half.BF16Normal64(s[1], a1)
			d[2], d[3] = half.BF16Normal64(s[2], a2), half.BF16Normal64(s[3], a3)
			continue
		}
		for j, b := range s {
			d[j] = half.BF16FromBits64(b)
		}
	}
	for ; i < len(src); i++ {
		dst[i] = half.BF16FromBits64(src[i])
	}
}

// encodeFP16F64 is codec.Float16FromFloat64 of each src[i] as float64 bits.
func encodeFP16F64(dst []uint16, src []uint64) {
	dst = dst[:len(src)]
	const lo, span = half.F64HalfMinNormal, half.F64HalfOverflow - half.F64HalfMinNormal
	i := 0
	for ; i+4 <= len(src); i += 4 {
		s, d := src[i:i+4:i+4], dst[i:i+4:i+4]
		a0, a1, a2, a3 := s[0]&^half.F64SignMask, s[1]&^half.F64SignMask, s[2]&^half.F64SignMask, s[3]&^half.F64SignMask
		if allBelow4(a0-lo, a1-lo, a2-lo, a3-lo, span) {
			d[0], d[1] = half.FP16Normal64(s[0], a0), half.FP16Normal64(s[1], a1)
			d[2], d[3] = half.FP16Normal64(s[2], a2), half.FP16Normal64(s[3], a3)
			continue
		}
		for j, b := range s {
			d[j] = half.FP16FromBits64(b)
		}
	}
	for ; i < len(src); i++ {
		dst[i] = half.FP16FromBits64(src[i])
	}
}

// roundBF16F64 is codec.BFloat16FromFloat64(v).Float64() in place on float64 bits.
// A normal codec.BFloat16 is a float64 with a 7-bit mantissa, so in the normal
// range rounding happens in place, as in roundFP16F32.
func roundBF16F64(buf []uint64) {
	const lo, span = half.F64BF16MinNormal, half.F64BF16Overflow - half.F64BF16MinNormal
	const dropped = 1<<45 - 1
	i := 0
	for ; i+4 <= len(buf); i += 4 {
		s := buf[i : i+4 : i+4]
		a0, a1, a2, a3 := s[0]&^half.F64SignMask, s[1]&^half.F64SignMask, s[2]&^half.F64SignMask, s[3]&^half.F64SignMask
		if allBelow4(a0-lo, a1-lo, a2-lo, a3-lo, span) {
			s[0] = (s[0] + (1<<44 - 1) + a0>>45&1) &^ dropped
			s[1] = (s[1] + (1<<44 - 1) + a1>>45&1) &^ dropped
			s[2] = (s[2] + (1<<44 - 1) + a2>>45&1) &^ dropped
			s[3] = (s[3] + (1<<44 - 1) + a3>>45&1) &^ dropped
			continue
		}
		for j, b := range s {
			s[j] = math.Float64bits(codec.BFloat16(half.BF16FromBits64(b)).Float64())
		}
	}
	for ; i < len(buf); i++ {
		buf[i] = math.Float64bits(codec.BFloat16(half.BF16FromBits64(buf[i])).Float64())
	}
}

// roundFP16F64 is codec.Float16FromFloat64(v).Float64() in place on float64
// bits, the way roundBF16F64 goes.
func roundFP16F64(buf []uint64) {
	const lo, span = half.F64HalfMinNormal, half.F64HalfOverflow - half.F64HalfMinNormal
	const dropped = 1<<42 - 1
	i := 0
	for ; i+4 <= len(buf); i += 4 {
		s := buf[i : i+4 : i+4]
		a0, a1, a2, a3 := s[0]&^half.F64SignMask, s[1]&^half.F64SignMask, s[2]&^half.F64SignMask, s[3]&^half.F64SignMask
		if allBelow4(a0-lo, a1-lo, a2-lo, a3-lo, span) {
			s[0] = (s[0] + (1<<41 - 1) + a0>>42&1) &^ dropped
			s[1] = (s[1] + (1<<41 - 1) + a1>>42&1) &^ dropped
			s[2] = (s[2] + (1<<41 - 1) + a2>>42&1) &^ dropped
			s[3] = (s[3] + (1<<41 - 1) + a3>>42&1) &^ dropped
			continue
		}
		for j, b := range s {
			s[j] = math.Float64bits(codec.Float16(half.FP16FromBits64(b)).Float64())
		}
	}
	for ; i < len(buf); i++ {
		buf[i] = math.Float64bits(codec.Float16(half.FP16FromBits64(buf[i])).Float64())
	}
}

// decodeBF16F64 is codec.BFloat16.Float64.
func decodeBF16F64(dst []float64, src []uint16) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = codec.BFloat16(src[i]).Float64()
	}
}

// decodeFP16F64 is codec.Float16.Float64.
func decodeFP16F64(dst []float64, src []uint16) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = codec.Float16(src[i]).Float64()
	}
}

// The portable loops: one conversion of half.go per element, reading and
// writing the payload with encoding/binary. They need no view of memory.

func encodeHalfPortable[F float](c codec.ID, dst []byte, src []F) {
	dst = dst[:2*len(src)]
	switch s := any(src).(type) {
	case []float32:
		if c == codec.BF16 {
			for i, v := range s {
				binary.LittleEndian.PutUint16(dst[2*i:], uint16(codec.BFloat16FromFloat32(v)))
			}
		} else {
			for i, v := range s {
				binary.LittleEndian.PutUint16(dst[2*i:], uint16(codec.Float16FromFloat32(v)))
			}
		}
	case []float64:
		if c == codec.BF16 {
			for i, v := range s {
				binary.LittleEndian.PutUint16(dst[2*i:], uint16(codec.BFloat16FromFloat64(v)))
			}
		} else {
			for i, v := range s {
				binary.LittleEndian.PutUint16(dst[2*i:], uint16(codec.Float16FromFloat64(v)))
			}
		}
	}
}

func decodeHalfPortable[F float](c codec.ID, dst []F, src []byte) {
	src = src[:2*len(dst)]
	switch d := any(dst).(type) {
	case []float32:
		if c == codec.BF16 {
			for i := range d {
				d[i] = codec.BFloat16(binary.LittleEndian.Uint16(src[2*i:])).Float32()
			}
		} else {
			for i := range d {
				d[i] = codec.Float16(binary.LittleEndian.Uint16(src[2*i:])).Float32()
			}
		}
	case []float64:
		if c == codec.BF16 {
			for i := range d {
				d[i] = codec.BFloat16(binary.LittleEndian.Uint16(src[2*i:])).Float64()
			}
		} else {
			for i := range d {
				d[i] = codec.Float16(binary.LittleEndian.Uint16(src[2*i:])).Float64()
			}
		}
	}
}

func roundHalfPortable[F float](c codec.ID, buf []F) {
	switch b := any(buf).(type) {
	case []float32:
		if c == codec.BF16 {
			for i, v := range b {
				b[i] = codec.BFloat16FromFloat32(v).Float32()
			}
		} else {
			for i, v := range b {
				b[i] = codec.Float16FromFloat32(v).Float32()
			}
		}
	case []float64:
		if c == codec.BF16 {
			for i, v := range b {
				b[i] = codec.BFloat16FromFloat64(v).Float64()
			}
		} else {
			for i, v := range b {
				b[i] = codec.Float16FromFloat64(v).Float64()
			}
		}
	}
}
