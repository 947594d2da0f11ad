//go:build !purego && !nounsafe && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

// The same build constraint as view_unsafe.go: on little-endian hosts,
// without the purego and nounsafe tags, a []uint16 is its own wire
// encoding, and the lossy codecs run the word kernels of
// compress_kernels.go on views of the payload and of the floats' bits.

package kernel

import (
	"unsafe"

	"github.com/gocoll/gocoll/codec"
)

// wordsOf returns b's memory as 16-bit words, or ok == false when b is not
// 2-byte aligned: several architectures fault on misaligned loads.
// Payloads in buffers from make, and at even offsets in them, are aligned.
func wordsOf(b []byte) (w []uint16, ok bool) {
	p := unsafe.SliceData(b)
	if uintptr(unsafe.Pointer(p))%2 != 0 {
		return nil, false
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(p)), len(b)/2), true
}

// bitsOf returns the memory of s as unsigned integers of the same size:
// float32 bits or float64 bits. A float and its bits have the same size
// and alignment, so the view is always valid.
func bitsOf[F float, U uint32 | uint64](s []F) []U {
	return unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// encodeHalf writes the 16-bit encodings of src to dst[:2*len(src)].
func encodeHalf[F float](c codec.ID, dst []byte, src []F) {
	w, ok := wordsOf(dst[:2*len(src)])
	if !ok {
		encodeHalfPortable(c, dst, src)
		return
	}
	switch s := any(src).(type) {
	case []float32:
		if c == codec.BF16 {
			encodeBF16F32(w, bitsOf[float32, uint32](s))
		} else {
			encodeFP16F32(w, bitsOf[float32, uint32](s))
		}
	case []float64:
		if c == codec.BF16 {
			encodeBF16F64(w, bitsOf[float64, uint64](s))
		} else {
			encodeFP16F64(w, bitsOf[float64, uint64](s))
		}
	}
}

// decodeHalf sets dst to the values of the 16-bit encodings in
// src[:2*len(dst)]; with around, the float32 kernels store around the
// caches (DecodeAround).
func decodeHalf[F float](c codec.ID, dst []F, src []byte, around bool) {
	w, ok := wordsOf(src[:2*len(dst)])
	if !ok {
		decodeHalfPortable(c, dst, src)
		return
	}
	switch d := any(dst).(type) {
	case []float32:
		bits := bitsOf[float32, uint32](d)
		switch {
		case c == codec.BF16 && around:
			decodeBF16F32Around(bits, w)
		case c == codec.BF16:
			decodeBF16F32(bits, w)
		case around:
			decodeFP16F32Around(bits, w)
		default:
			decodeFP16F32(bits, w)
		}
	case []float64:
		if c == codec.BF16 {
			decodeBF16F64(d, w)
		} else {
			decodeFP16F64(d, w)
		}
	}
}

// encodeRoundHalf is encodeHalf that also sets src to what dst decodes
// to.
func encodeRoundHalf[F float](c codec.ID, dst []byte, src []F) {
	w, ok := wordsOf(dst[:2*len(src)])
	if s, f32 := any(src).([]float32); ok && f32 && c == codec.BF16 {
		encodeRoundBF16F32(w, bitsOf[float32, uint32](s))
		return
	}
	encodeHalf(c, dst, src)
	decodeHalf(c, src, dst, false)
}

// roundHalf sets every value of buf to what it becomes after a trip
// through c.
func roundHalf[F float](c codec.ID, buf []F) {
	switch b := any(buf).(type) {
	case []float32:
		if c == codec.BF16 {
			roundBF16F32(bitsOf[float32, uint32](b))
		} else {
			roundFP16F32(bitsOf[float32, uint32](b))
		}
	case []float64:
		if c == codec.BF16 {
			roundBF16F64(bitsOf[float64, uint64](b))
		} else {
			roundFP16F64(bitsOf[float64, uint64](b))
		}
	}
}

// sumDecodedHalf is SumDecoded on its payloads viewed as words, false
// where either is misaligned or no assembly kernel runs: the caller's
// separate passes, unrolled Go loops, then do the work.
func sumDecodedHalf(c codec.ID, dst, mine []float32, src, encode []byte) bool {
	w, ok := wordsOf(src)
	var e []uint16
	if ok && encode != nil {
		e, ok = wordsOf(encode[:len(src)])
	}
	if !ok {
		return false
	}
	n, ok := sumDecodedAsm(c, dst, mine, w, e)
	if !ok {
		return false
	}
	// The last elements, fewer than a kernel's pass.
	for i := n; i < len(dst); i++ {
		dst[i] = sumWord(c, mine[i], w[i])
	}
	if e != nil {
		encodeRoundHalf(c, encode[2*n:len(src)], dst[n:])
	}
	return true
}

// sumEncodedHalf is SumEncoded on its payloads viewed as words, false
// where either is misaligned or no assembly kernel runs.
func sumEncodedHalf(c codec.ID, encode []byte, mine []float32, src []byte) bool {
	w, ok := wordsOf(src)
	e, eok := wordsOf(encode)
	if !ok || !eok {
		return false
	}
	n, ok := sumDecodedAsm(c, nil, mine, w, e)
	if !ok {
		return false
	}
	// The last elements, fewer than a kernel's pass, one at a time.
	for i := n; i < len(mine); i++ {
		v := sumWord(c, mine[i], w[i])
		if c == codec.BF16 {
			e[i] = uint16(codec.BFloat16FromFloat32(v))
		} else {
			e[i] = uint16(codec.Float16FromFloat32(v))
		}
	}
	return true
}

// sumWord is mine plus the value that w, a word of the lossy codec c,
// decodes to: one element of what the fused kernels compute.
func sumWord(c codec.ID, mine float32, w uint16) float32 {
	if c == codec.BF16 {
		return mine + codec.BFloat16(w).Float32()
	}
	return mine + codec.Float16(w).Float32()
}
