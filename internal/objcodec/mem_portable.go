//go:build purego || nounsafe || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

// The portable build: chosen by the purego or nounsafe tag, and on every
// big-endian host, where a value's memory is not its encoding. Raw blocks
// are written and read element by element, little-endian, through
// reflect; the bytes are the same as mem_unsafe.go's.

package objcodec

import (
	"math"
	"reflect"
)

// rawMemory says that a fixed-size value's memory is its encoding: false
// in this build.
const rawMemory = false

func memOf(v reflect.Value, n int) []byte {
	panic("objcodec: memOf in the portable build")
}

func viewOf(v reflect.Value, t reflect.Type, b []byte, x int) bool {
	panic("objcodec: viewOf in the portable build")
}

var float32Type = reflect.TypeFor[float32]()

// float32Bits and setFloat32Bits convert between float32 types, which
// reflect does without the detour through float64 that would quiet
// signalling NaNs (Go issue 36400).
func float32Bits(v reflect.Value) uint32 {
	return math.Float32bits(v.Convert(float32Type).Interface().(float32))
}

func setFloat32Bits(v reflect.Value, x uint32) {
	v.Set(reflect.ValueOf(math.Float32frombits(x)).Convert(v.Type()))
}

var complex64Type = reflect.TypeFor[complex64]()

// complex64Bits and setComplex64Bits take a complex64 whole, which is
// exact; reflect converts other complex64 types through complex128,
// which quiets signalling NaNs in their parts.
func complex64Bits(v reflect.Value) (re, im uint32) {
	var c complex64
	if v.Type() == complex64Type {
		c = v.Interface().(complex64)
	} else {
		c = complex64(v.Complex())
	}
	return math.Float32bits(real(c)), math.Float32bits(imag(c))
}

func setComplex64Bits(v reflect.Value, re, im uint32) {
	c := complex(math.Float32frombits(re), math.Float32frombits(im))
	if v.Type() == complex64Type {
		v.Set(reflect.ValueOf(c))
		return
	}
	v.SetComplex(complex128(c))
}
