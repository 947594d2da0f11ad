package objcodec

import (
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"
	"reflect"
	"slices"
)

// maxDepth bounds the nesting of pointers, slices and maps that Append
// writes and Decode reads: deeper data is an error, not a stack
// overflow. (Arrays and structs nest only as deep as their type, and a
// type recurses only through pointers, slices and maps.)
const maxDepth = 10000

func errDepth(t reflect.Type) error {
	return fmt.Errorf("objcodec: a value of %s nests deeper than %d levels (a cycle of pointers?)", t, maxDepth)
}

// encode appends the encoding of v to b.
func (n *node) encode(b []byte, v reflect.Value, depth int) ([]byte, error) {
	le := binary.LittleEndian
	switch n.kind {
	case kBool:
		if v.Bool() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case kInt8:
		return append(b, byte(v.Int())), nil
	case kInt16, kInt32, kInt64:
		return binary.AppendVarint(b, v.Int()), nil
	case kUint8:
		return append(b, byte(v.Uint())), nil
	case kUint16, kUint32, kUint64:
		return binary.AppendUvarint(b, v.Uint()), nil
	case kFloat32:
		return le.AppendUint32(b, float32Bits(v)), nil
	case kFloat64:
		return le.AppendUint64(b, math.Float64bits(v.Float())), nil
	case kComplex64:
		re, im := complex64Bits(v)
		return le.AppendUint32(le.AppendUint32(b, re), im), nil
	case kComplex128:
		c := v.Complex()
		return le.AppendUint64(le.AppendUint64(b, math.Float64bits(real(c))), math.Float64bits(imag(c))), nil
	case kString:
		s := v.String()
		return append(binary.AppendUvarint(b, uint64(len(s))), s...), nil
	case kGob, kBinary, kText:
		data, err := n.marshal(v)
		if err != nil {
			return b, err
		}
		return append(binary.AppendUvarint(b, uint64(len(data))), data...), nil
	}
	if n.kind == kSlice || n.kind == kMap || n.kind == kPtr {
		if depth++; depth > maxDepth {
			return b, errDepth(n.t)
		}
	}
	var err error
	switch n.kind {
	case kRawSlice:
		if v.IsNil() {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(v.Len())+1)
		return appendRaw(b, n.elem, v, v.Len()), nil
	case kRawArray:
		return appendRaw(b, n.elem, v, n.n), nil
	case kSlice:
		if v.IsNil() {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(v.Len())+1)
		for i := range v.Len() {
			if b, err = n.elem.encode(b, v.Index(i), depth); err != nil {
				return b, err
			}
		}
	case kArray:
		for i := range n.n {
			if b, err = n.elem.encode(b, v.Index(i), depth); err != nil {
				return b, err
			}
		}
	case kStruct:
		for _, f := range n.fields {
			if b, err = f.n.encode(b, v.Field(f.index), depth); err != nil {
				return b, err
			}
		}
	case kMap:
		if v.IsNil() {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(v.Len())+1)
		it := v.MapRange()
		for it.Next() {
			if b, err = n.key.encode(b, it.Key(), depth); err != nil {
				return b, err
			}
			if b, err = n.elem.encode(b, it.Value(), depth); err != nil {
				return b, err
			}
		}
	case kPtr:
		if v.IsNil() {
			return append(b, 0), nil
		}
		return n.elem.encode(append(b, 1), v.Elem(), depth)
	default:
		panic(fmt.Sprintf("objcodec: encoding kind %d", n.kind))
	}
	return b, nil
}

// appendRaw appends the memory of count fixed-size elements of the slice
// or array v.
func appendRaw(b []byte, elem *node, v reflect.Value, count int) []byte {
	size := count * elem.size
	if size == 0 {
		return b
	}
	if rawMemory && (v.Kind() == reflect.Slice || v.CanAddr()) {
		return append(b, memOf(v, size)...)
	}
	at := len(b)
	b = slices.Grow(b, size)[:at+size]
	for i := range count {
		putFixed(elem, v.Index(i), b[at+i*elem.size:])
	}
	return b
}

// putFixed writes the little-endian encoding of the fixed-size value v
// at the start of dst: what its memory holds on a little-endian host.
func putFixed(n *node, v reflect.Value, dst []byte) {
	le := binary.LittleEndian
	switch n.kind {
	case kBool:
		dst[0] = 0
		if v.Bool() {
			dst[0] = 1
		}
	case kInt8, kInt16, kInt32, kInt64:
		putUint(dst[:n.size], uint64(v.Int()))
	case kUint8, kUint16, kUint32, kUint64:
		putUint(dst[:n.size], v.Uint())
	case kFloat32:
		le.PutUint32(dst, float32Bits(v))
	case kFloat64:
		le.PutUint64(dst, math.Float64bits(v.Float()))
	case kComplex64:
		re, im := complex64Bits(v)
		le.PutUint32(dst, re)
		le.PutUint32(dst[4:], im)
	case kComplex128:
		c := v.Complex()
		le.PutUint64(dst, math.Float64bits(real(c)))
		le.PutUint64(dst[8:], math.Float64bits(imag(c)))
	case kRawArray:
		for i := range n.n {
			putFixed(n.elem, v.Index(i), dst[i*n.elem.size:])
		}
	case kStruct:
		off := 0
		for _, f := range n.fields {
			putFixed(f.n, v.Field(f.index), dst[off:])
			off += f.n.size
		}
	default:
		panic(fmt.Sprintf("objcodec: kind %d is not fixed-size", n.kind))
	}
}

// putUint writes the len(dst) low bytes of x, little-endian.
func putUint(dst []byte, x uint64) {
	for i := range dst {
		dst[i] = byte(x >> (8 * i))
	}
}

// marshal returns the bytes of a type that encodes itself.
func (n *node) marshal(v reflect.Value) ([]byte, error) {
	if n.addr {
		if !v.CanAddr() {
			c := reflect.New(n.t).Elem()
			c.Set(v)
			v = c
		}
		v = v.Addr()
	}
	var data []byte
	var err error
	switch m := v.Interface(); n.kind {
	case kGob:
		data, err = m.(gob.GobEncoder).GobEncode()
	case kBinary:
		data, err = m.(encoding.BinaryMarshaler).MarshalBinary()
	default:
		data, err = m.(encoding.TextMarshaler).MarshalText()
	}
	if err != nil {
		return nil, fmt.Errorf("objcodec: encoding %s: %w", n.t, err)
	}
	return data, nil
}
