//go:build !purego && !nounsafe && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

// The views below reinterpret memory, which is only the little-endian wire
// encoding on little-endian hosts: this list is every little-endian GOARCH
// that Go supports, and view_purego.go builds on all others.

package codec

import "unsafe"

// Aliasing is true when Bytes returns a view of its argument's memory, so
// that bytes received into Bytes(s) are already in s and Store is free. It
// is true on little-endian hosts unless the purego or nounsafe build tag is
// set.
const Aliasing = true

// Bytes returns the wire encoding of s: its elements' little-endian bytes,
// len(s) times the element size. When Aliasing is true the result is a
// view of s's memory (writing to one changes the other) and Bytes does not
// allocate; otherwise it is a copy, and a caller that writes into it must
// call Store(s, b) to get the values into s. A nil or empty s gives an
// empty result.
func Bytes[T Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// FromBytes returns the elements whose little-endian encoding is b. It is
// an error, wrapping ErrInvalid, if len(b) is not a multiple of the
// element size.
//
// When Aliasing is true and b's address is aligned for T, the result is a
// view of b's memory and FromBytes does not allocate. Buffers from make,
// from Bytes and any sub-slice at a multiple of 8 bytes are aligned. A
// misaligned b is copied instead, because several architectures fault or
// trap on misaligned multi-byte loads. Treat the result as read-only unless
// you know it is a view, or copy it back with copy(b, Bytes(t)).
func FromBytes[T Elem](b []byte) ([]T, error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b)%size != 0 {
		return nil, lengthError[T](len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%uintptr(size) == 0 {
		return unsafe.Slice((*T)(p), len(b)/size), nil
	}
	t := make([]T, len(b)/size)
	copy(Bytes(t), b)
	return t, nil
}

// Store copies the elements encoded in b into dst: the first
// min(len(dst), len(b)/size) of them, leaving the rest of dst as it was.
// When b is a view of dst's memory (as Bytes(dst) or a prefix of it is
// when Aliasing is true) the values are already in place and Store does
// nothing. Receive whole elements: a trailing partial element of b is not
// stored by the copying build.
//
// Code that receives into Bytes(s) must call Store(s, b) afterwards to be
// portable: it costs nothing here and is what fills s in the copying
// build.
func Store[T Elem](dst []T, b []byte) {
	n := storeCount(dst, b)
	if n == 0 {
		return
	}
	d := Bytes(dst[:n])
	if unsafe.SliceData(d) == unsafe.SliceData(b) {
		return // b is dst's own memory: the bytes are already there
	}
	copy(d, b[:len(d)])
}
