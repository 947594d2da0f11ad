package codec

// BFloat16 is a bfloat16 value: the upper 16 bits of an IEEE-754 float32
// (1 sign, 8 exponent, 7 mantissa bits). Convert with BFloat16FromFloat32
// and BFloat16.Float32.
type BFloat16 uint16

// Float16 is an IEEE-754 binary16 value (1 sign, 5 exponent, 10 mantissa
// bits). Convert with Float16FromFloat32 and Float16.Float32.
type Float16 uint16

// Elem is the set of element types that gocoll moves and reduces. Every
// type has a fixed size and no pointers, so a slice of it can go on the
// wire as its own bytes.
type Elem interface {
	int8 | int16 | int32 | int64 |
		uint8 | uint16 | uint32 | uint64 |
		float32 | float64 | BFloat16 | Float16
}
