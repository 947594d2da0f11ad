package kernel

import (
	"fmt"

	"github.com/gocoll/gocoll/codec"
)

// DType names an element type on the wire. The zero DType is invalid, so a
// header that was never filled in is caught by the frame header's validation.
type DType uint8

// The element types, in the order of codec.Elem.
const (
	Int8 DType = iota + 1
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Float32
	Float64
	BFloat16
	Float16
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name string
	size int
}{
	Int8:     {"int8", 1},
	Int16:    {"int16", 2},
	Int32:    {"int32", 4},
	Int64:    {"int64", 8},
	Uint8:    {"uint8", 1},
	Uint16:   {"uint16", 2},
	Uint32:   {"uint32", 4},
	Uint64:   {"uint64", 8},
	Float32:  {"float32", 4},
	Float64:  {"float64", 8},
	BFloat16: {"bf16", 2},
	Float16:  {"fp16", 2},
}

// Valid reports whether d names one of the element types.
func (d DType) Valid() bool { return d > 0 && d < numDTypes }

// Size is the size of one element in bytes, or 0 for an invalid DType.
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("DType(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

// IsFloat reports whether d is a floating-point type (float32, float64,
// bf16 or fp16).
func (d DType) IsFloat() bool {
	switch d {
	case Float32, Float64, BFloat16, Float16:
		return true
	}
	return false
}

// DTypeOf returns the DType of T.
func DTypeOf[T codec.Elem]() DType { return dtypeOfValue(*new(T)) }

// dtypeOfValue returns the DType of v's type, which must be in codec.Elem.
func dtypeOfValue(v any) DType {
	switch v.(type) {
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case float32:
		return Float32
	case float64:
		return Float64
	case codec.BFloat16:
		return BFloat16
	case codec.Float16:
		return Float16
	}
	panic("unreachable: codec.Elem covers exactly the cases above")
}
