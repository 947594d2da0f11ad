//go:build amd64 && gc && !purego && !noasm

package kernel

import (
	"unsafe"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/gocoll/gocoll/internal/race"
	"golang.org/x/sys/cpu"
)

// useAVX2 selects the assembly kernels of kernels_amd64.s. x/sys/cpu
// reports AVX2 only if the OS also saves the YMM registers.
var useAVX2 = cpu.X86.HasAVX2

// useAVX512 selects the 512-bit bfloat16 kernels over the AVX2 ones.
// x/sys/cpu reports AVX512F only if the OS also saves the ZMM registers.
// Tests turn it off to check the AVX2 kernels on CPUs that have both.
var useAVX512 = cpu.X86.HasAVX512F

// useF16C selects the binary16 conversion kernels, which use F16C's
// conversions beside AVX2's integer instructions.
var useF16C = useAVX2 && cpu.X86.HasF16C

// chunkBytes is the most of dst that one call of an assembly kernel
// reduces. The scheduler cannot preempt a goroutine inside an assembly
// function, so a long slice is cut into calls of a few microseconds each
// (64 KiB in cache, longer from memory); a call costs a few nanoseconds.
const chunkBytes = 64 << 10

// sumAsm sets dst[i] += src[i] with an assembly kernel if there is one for
// T and the CPU can run it, and reports whether it did. Empty slices report
// the same, which tells tests and benchmarks which path Reduce takes.
func sumAsm[T codec.Elem](dst, src []T) bool { return reduceAsm(ops.Sum, dst, src) }

// prodAsm is sumAsm for dst[i] *= src[i].
func prodAsm[F float](dst, src []F) bool { return reduceAsm(ops.Prod, dst, src) }

// reduceAsm is sumAsm for op ops.Sum or ops.Prod. It calls the kernel chunk by
// chunk.
func reduceAsm[T codec.Elem](op ops.ID, dst, src []T) bool {
	if !useAVX2 {
		return false
	}
	src = src[:len(dst)]
	n := chunkBytes / int(unsafe.Sizeof(dst[0]))
	for {
		k := min(n, len(dst))
		if !kernelAVX2(op, dst[:k], src[:k]) {
			return false // on the first chunk: it is the same kernel for all
		}
		if k == len(dst) {
			return true
		}
		dst, src = dst[k:], src[k:]
	}
}

// kernelAVX2 runs the assembly kernel for op and T on dst and src, of
// equal length, and reports whether there is one. Calls are direct, so
// with the kernels' go:noescape nothing escapes. It tells the race
// detector what the kernel read and wrote.
func kernelAVX2[T codec.Elem](op ops.ID, dst, src []T) bool {
	switch d := any(dst).(type) {
	case []float32:
		if op == ops.Prod {
			mulFloat32AVX2(d, any(src).([]float32))
		} else {
			addFloat32AVX2(d, any(src).([]float32))
		}
	case []float64:
		if op == ops.Prod {
			mulFloat64AVX2(d, any(src).([]float64))
		} else {
			addFloat64AVX2(d, any(src).([]float64))
		}
	case []int32:
		if op == ops.Prod {
			return false
		}
		addInt32AVX2(d, any(src).([]int32))
	case []int64:
		if op == ops.Prod {
			return false
		}
		addInt64AVX2(d, any(src).([]int64))
	default:
		return false
	}
	if race.Enabled {
		race.ReadSlice(src)
		race.WriteSlice(dst)
	}
	return true
}

// encodeBF16Asm encodes the largest multiple of 32 (AVX-512) or 16
// (AVX2) elements of src into dst with encodeBF16F32AVX512 or
// encodeBF16F32AVX2 and returns how many it encoded: 0 without either.
func encodeBF16Asm(dst []uint16, src []uint32) int {
	return bf16InChunks(dst, src, encodeBF16F32AVX512, encodeBF16F32AVX2)
}

// encodeRoundBF16Asm is encodeBF16Asm for encodeRoundBF16F32AVX512 and
// encodeRoundBF16F32AVX2.
func encodeRoundBF16Asm(dst []uint16, src []uint32) int {
	n := bf16InChunks(dst, src, encodeRoundBF16F32AVX512, encodeRoundBF16F32AVX2)
	if race.Enabled {
		race.WriteSlice(src[:n]) // rounded in place, besides what inChunks reports
	}
	return n
}

// decodeBF16Asm is encodeBF16Asm for decodeBF16F32AVX512 and
// decodeBF16F32AVX2.
func decodeBF16Asm(dst []uint32, src []uint16) int {
	return bf16InChunks(dst, src, decodeBF16F32AVX512, decodeBF16F32AVX2)
}

// decodeBF16AroundAsm is decodeBF16Asm with the kernels that store
// around the caches, decodeBF16F32AVX512Around and
// decodeBF16F32AVX2Around, which need dst aligned to their vectors: it
// decodes dst[lo:hi], from dst's first 64-byte boundary lo on, and
// nothing (lo == hi) without either kernel.
func decodeBF16AroundAsm(dst []uint32, src []uint16) (lo, hi int) {
	lo = boundary64(dst)
	return lo, lo + bf16InChunks(dst[lo:], src[lo:], decodeBF16F32AVX512Around, decodeBF16F32AVX2Around)
}

// decodeFP16AroundAsm is decodeBF16AroundAsm for decodeFP16F32F16CAround.
func decodeFP16AroundAsm(dst []uint32, src []uint16) (lo, hi int) {
	lo = boundary64(dst)
	return lo, lo + inChunks(useF16C, 16, dst[lo:], src[lo:], decodeFP16F32F16CAround)
}

// boundary64 is the index of dst's first element at a 64-byte boundary,
// or len(dst) when there is none.
func boundary64(dst []uint32) int {
	return min(len(dst), bytesToBoundary(unsafe.Pointer(unsafe.SliceData(dst)), 64)/4)
}

// bytesToBoundary is how many bytes lie from p to the next multiple of
// align, a power of two (0 if p is one).
func bytesToBoundary(p unsafe.Pointer, align uintptr) int { return int(-uintptr(p) & (align - 1)) }

// bf16InChunks runs a bfloat16 kernel with inChunks: wide, 32 elements
// at a time, where the CPU has AVX-512, else narrow, 16 at a time.
func bf16InChunks[D, S uint16 | uint32](dst []D, src []S, wide, narrow func([]D, []S)) int {
	if useAVX512 {
		return inChunks(true, 32, dst, src, wide)
	}
	return inChunks(useAVX2, 16, dst, src, narrow)
}

// encodeFP16Asm is encodeBF16Asm for encodeFP16F32F16C: 0 without F16C.
func encodeFP16Asm(dst []uint16, src []uint32) int {
	return inChunks(useF16C, 16, dst, src, encodeFP16F32F16C)
}

// decodeFP16Asm is encodeBF16Asm for decodeFP16F32F16C.
func decodeFP16Asm(dst []uint32, src []uint16) int {
	return inChunks(useF16C, 16, dst, src, decodeFP16F32F16C)
}

// inChunks runs a conversion kernel, which converts group elements at a
// time (16 or 32), on the first len(dst) rounded down to group elements
// of dst and src, at most chunkBytes of dst a call as reduceAsm does, and
// returns how many elements it converted: none unless the CPU can run the
// kernel (can). It tells the race detector that the kernel reads those
// elements of src and writes those of dst.
func inChunks[D, S uint16 | uint32](can bool, group int, dst []D, src []S, kernel func([]D, []S)) int {
	if !can {
		return 0
	}
	n := len(dst) &^ (group - 1)
	if race.Enabled {
		race.ReadSlice(src[:n])
		race.WriteSlice(dst[:n])
	}
	step := chunkBytes / int(unsafe.Sizeof(dst[0])) // a multiple of group
	for i := 0; i < n; i += step {
		k := min(step, n-i)
		kernel(dst[i:i+k], src[i:i+k])
	}
	return n
}

// sumDecodedAsm sets dst to mine plus the values of the words src in the
// lossy codec c, as SumDecoded, with
// sumDecoded{BF16,FP16}F32{AVX512,AVX2,F16C}; with enc non-nil, their
// twins that also round the sums and encode them into enc; with dst nil,
// the twins that only encode them (sumEncoded…, for SumEncoded). It
// takes the first len(mine) elements rounded down to 32 (AVX-512) or 16,
// at most chunkBytes of floats a call, as reduceAsm does. It returns how
// many elements it summed, and false, having done nothing, where the CPU
// runs none of them. It tells the race detector what the kernels read
// and write.
func sumDecodedAsm(c codec.ID, dst, mine []float32, src, enc []uint16) (int, bool) {
	k := sumKernelsOf(c)
	if k.group == 0 {
		return 0, false
	}
	n := len(mine) &^ (k.group - 1)
	if race.Enabled {
		race.ReadSlice(mine[:n])
		race.ReadSlice(src[:n])
		if dst != nil {
			race.WriteSlice(dst[:n])
		}
		if enc != nil {
			race.WriteSlice(enc[:n])
		}
	}
	for i := 0; i < n; i += sumStep {
		j := min(i+sumStep, n)
		switch {
		case dst == nil:
			k.encodeOnly(enc[i:j], mine[i:j], src[i:j])
		case enc == nil:
			k.sum(dst[i:j], mine[i:j], src[i:j])
		default:
			k.sumEncode(dst[i:j], mine[i:j], src[i:j], enc[i:j])
		}
	}
	return n, true
}

// sumStep is the float32 elements of one call of a fused kernel: a
// multiple of 32 (see chunkBytes).
const sumStep = chunkBytes / 4

// sumKernels are a lossy codec's fused kernels on this CPU, which take
// group elements a pass: 32 with AVX-512, 16 with AVX2 (F16C for FP16),
// 0 where the CPU runs none.
type sumKernels struct {
	sum        func(dst, mine []float32, src []uint16)
	sumEncode  func(dst, mine []float32, src, enc []uint16)
	encodeOnly func(enc []uint16, mine []float32, src []uint16)
	group      int
}

// sumKernelsOf returns the fused kernels of c on this CPU.
func sumKernelsOf(c codec.ID) sumKernels {
	switch {
	case useAVX512 && c == codec.BF16:
		return sumKernels{sumDecodedBF16F32AVX512, sumDecodedEncodeBF16F32AVX512, sumEncodedBF16F32AVX512, 32}
	case useAVX512:
		return sumKernels{sumDecodedFP16F32AVX512, sumDecodedEncodeFP16F32AVX512, sumEncodedFP16F32AVX512, 32}
	case useAVX2 && c == codec.BF16:
		return sumKernels{sumDecodedBF16F32AVX2, sumDecodedEncodeBF16F32AVX2, sumEncodedBF16F32AVX2, 16}
	case useF16C && c == codec.FP16:
		return sumKernels{sumDecodedFP16F32F16C, sumDecodedEncodeFP16F32F16C, sumEncodedFP16F32F16C, 16}
	}
	return sumKernels{}
}

// copyAroundAsm copies src into dst, which are as long, with copyNTAVX2
// for every 128 bytes from dst's first 32-byte boundary on, and with copy
// before and after, and reports whether it could.
func copyAroundAsm(dst, src []byte) bool {
	if !useAVX2 {
		return false
	}
	head := min(bytesToBoundary(unsafe.Pointer(unsafe.SliceData(dst)), 32), len(dst))
	copy(dst[:head], src)
	end := head + (len(dst)-head)&^127
	if race.Enabled {
		race.ReadSlice(src[head:end])
		race.WriteSlice(dst[head:end])
	}
	for at := head; at < end; at += chunkBytes {
		next := min(at+chunkBytes, end)
		copyNTAVX2(dst[at:next], src[at:next])
	}
	copy(dst[end:], src[end:])
	return true
}
