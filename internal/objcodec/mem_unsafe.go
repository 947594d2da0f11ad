//go:build !purego && !nounsafe && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

// The memory views below reinterpret a value's memory as its encoding,
// which is only right on little-endian hosts: this list is every
// little-endian GOARCH that Go supports, and mem_portable.go builds on all
// others and under the purego and nounsafe tags.

package objcodec

import (
	"reflect"
	"unsafe"
)

// rawMemory says that a fixed-size value's memory is its encoding, so
// that raw blocks are copied with one memmove.
const rawMemory = true

// memOf returns the first n bytes of the elements of the slice v, or of
// the memory of v, which must be addressable.
func memOf(v reflect.Value, n int) []byte {
	if n == 0 {
		return []byte{}
	}
	var p unsafe.Pointer
	if v.Kind() == reflect.Slice {
		p = v.UnsafePointer()
	} else {
		p = v.Addr().UnsafePointer()
	}
	return unsafe.Slice((*byte)(p), n)
}

// viewOf sets the slice v, of type t, to the x elements that b holds,
// sharing b's memory, and reports whether it could: b must be aligned for
// t's elements.
func viewOf(v reflect.Value, t reflect.Type, b []byte, x int) bool {
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%uintptr(t.Elem().Align()) != 0 {
		return false
	}
	v.Set(reflect.SliceAt(t.Elem(), p, x).Convert(t))
	return true
}

// addressable returns v, or a copy of it that is addressable.
func addressable(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return v
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return c
}

// float32Bits and the other accessors read and write the bits of
// float32 and complex64 values without the detour through float64 that
// reflect takes, which would quiet signalling NaNs. The setters take
// addressable values.
func float32Bits(v reflect.Value) uint32 {
	return *(*uint32)(addressable(v).Addr().UnsafePointer())
}

func setFloat32Bits(v reflect.Value, x uint32) {
	*(*uint32)(v.Addr().UnsafePointer()) = x
}

func complex64Bits(v reflect.Value) (re, im uint32) {
	p := (*[2]uint32)(addressable(v).Addr().UnsafePointer())
	return p[0], p[1]
}

func setComplex64Bits(v reflect.Value, re, im uint32) {
	*(*[2]uint32)(v.Addr().UnsafePointer()) = [2]uint32{re, im}
}
