package codec

import "fmt"

// The zero-copy views are implemented twice, with the same signatures:
// view_unsafe.go reinterprets memory and builds on little-endian hosts
// unless the purego or nounsafe tag is set; view_purego.go copies through
// encoding/binary and builds everywhere else. The wire format is the
// elements' little-endian bytes, so only on a little-endian host is a
// slice's memory already its encoding. view_unsafe.go's build constraint
// lists the little-endian GOARCH values rather than trusting a tag, so a
// big-endian host gets the copying build without being asked, instead of
// putting byte-swapped values on the wire.
//
// This file holds what both builds share.

// sizeOf is the size in bytes of one T.
func sizeOf[T Elem]() int {
	switch any(*new(T)).(type) {
	case int8, uint8:
		return 1
	case int16, uint16, BFloat16, Float16:
		return 2
	case int32, uint32, float32:
		return 4
	}
	return 8
}

// lengthError reports a byte slice that does not hold whole elements of
// type T.
func lengthError[T Elem](n int) error {
	return fmt.Errorf("%w: %d bytes is not a whole number of %d-byte %T elements",
		ErrInvalid, n, sizeOf[T](), *new(T))
}

// storeCount is the number of whole elements Store copies from b into dst.
func storeCount[T Elem](dst []T, b []byte) int {
	return min(len(dst), len(b)/sizeOf[T]())
}
