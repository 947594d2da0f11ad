//go:build purego || nounsafe || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

// The copying build: chosen by the purego or nounsafe tag, and on every
// big-endian host, where a slice's memory is not its wire encoding.

package codec

import "encoding/binary"

// Aliasing is true when Bytes returns a view of its argument's memory, so
// that bytes received into Bytes(s) are already in s and Store is free. In
// this build (purego or nounsafe tag, or a big-endian host) it is false.
const Aliasing = false

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
	b, err := binary.Append(make([]byte, 0, len(s)*sizeOf[T]()), binary.LittleEndian, s)
	if err != nil {
		// Every Elem has a fixed size, which is all binary.Append needs.
		panic("codec: encoding a slice of fixed-size elements: " + err.Error())
	}
	return b
}

// FromBytes returns the elements whose little-endian encoding is b. It is
// an error, wrapping ErrInvalid, if len(b) is not a multiple of the
// element size.
//
// When Aliasing is true and b's address is aligned for T, the result is a
// view of b's memory and FromBytes does not allocate; in this build it is
// always a copy. Treat the result as read-only unless you know it is a
// view, or copy it back with copy(b, Bytes(t)).
func FromBytes[T Elem](b []byte) ([]T, error) {
	if len(b)%sizeOf[T]() != 0 {
		return nil, lengthError[T](len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	t := make([]T, len(b)/sizeOf[T]())
	decode(t, b)
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
// portable: in this build it is what fills s.
func Store[T Elem](dst []T, b []byte) {
	if n := storeCount(dst, b); n > 0 {
		decode(dst[:n], b[:n*sizeOf[T]()])
	}
}

// decode fills t from exactly len(t) little-endian elements in b.
func decode[T Elem](t []T, b []byte) {
	if _, err := binary.Decode(b, binary.LittleEndian, t); err != nil {
		panic("codec: decoding whole fixed-size elements: " + err.Error())
	}
}
