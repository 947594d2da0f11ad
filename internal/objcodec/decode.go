package objcodec

import (
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"
	"reflect"
)

// decoder reads an encoding; b is what remains of it.
type decoder struct {
	b []byte
	// budget is what remains of the memory the decoding may allocate.
	// Each length is checked against the bytes that remain, but nested
	// lengths each check against the same bytes, so that a hostile input
	// of nested slices that fails deep down would otherwise allocate the
	// square of its length.
	budget int
}

// allocFactor and allocSlack set a decoding's budget: allocFactor times
// its input, plus allocSlack. A valid encoding allocates at most 24 times
// its length (a slice header for each byte of a [][]T) and a little more
// for maps, so that only hostile input exhausts the budget.
const (
	allocFactor = 48
	allocSlack  = 32 << 10
)

func newDecoder(b []byte) decoder {
	return decoder{b: b, budget: min(len(b), maxLen/allocFactor)*allocFactor + allocSlack}
}

// spend takes n elements of size bytes from the budget.
func (d *decoder) spend(n, size int, t reflect.Type) error {
	if size > 0 && n > d.budget/size {
		return corrupt("%d elements of %s would take more memory than %d times the input", n, t, allocFactor)
	}
	d.budget -= n * size
	return nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func (d *decoder) byte(t reflect.Type) (byte, error) {
	if len(d.b) == 0 {
		return 0, corrupt("the data ends inside a %s", t)
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c, nil
}

func (d *decoder) take(n int, t reflect.Type) ([]byte, error) {
	if n > len(d.b) {
		return nil, corrupt("%s needs %d bytes; %d remain", t, n, len(d.b))
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s, nil
}

func (d *decoder) uvarint(t reflect.Type) (uint64, error) {
	x, k := binary.Uvarint(d.b)
	if k <= 0 {
		return 0, corrupt("a bad varint in a %s", t)
	}
	d.b = d.b[k:]
	return x, nil
}

// bytes reads a length and as many bytes.
func (d *decoder) bytes(t reflect.Type) ([]byte, error) {
	x, err := d.uvarint(t)
	if err != nil {
		return nil, err
	}
	if x > uint64(len(d.b)) {
		return nil, corrupt("%s needs %d bytes; %d remain", t, x, len(d.b))
	}
	return d.take(int(x), t)
}

// length reads the length of a slice or map whose elements take at
// least min bytes each (0 for zero-size elements): -1 for nil. A length
// whose elements cannot fit in the bytes that remain is an error, so
// that no hostile length makes Decode allocate more than a small multiple
// of its input.
func (d *decoder) length(t reflect.Type, min int) (int, error) {
	x, err := d.uvarint(t)
	if err != nil || x == 0 {
		return -1, err
	}
	x--
	if x > maxLen || (min > 0 && x > uint64(len(d.b)/min)) {
		return 0, corrupt("%d elements of %s cannot fit in the %d bytes that remain", x, t, len(d.b))
	}
	return int(x), nil
}

// decode sets v, which is addressable, from the encoding.
func (n *node) decode(d *decoder, v reflect.Value, depth int) error {
	le := binary.LittleEndian
	switch n.kind {
	case kBool:
		c, err := d.byte(n.t)
		if err != nil {
			return err
		}
		if c > 1 {
			return corrupt("bool byte %d", c)
		}
		v.SetBool(c == 1)
		return nil
	case kInt8:
		c, err := d.byte(n.t)
		v.SetInt(int64(int8(c)))
		return err
	case kUint8:
		c, err := d.byte(n.t)
		v.SetUint(uint64(c))
		return err
	case kInt16, kInt32, kInt64:
		x, k := binary.Varint(d.b)
		if k <= 0 {
			return corrupt("a bad varint in a %s", n.t)
		}
		if v.OverflowInt(x) {
			return corrupt("%d overflows %s", x, n.t)
		}
		d.b = d.b[k:]
		v.SetInt(x)
		return nil
	case kUint16, kUint32, kUint64:
		x, err := d.uvarint(n.t)
		if err != nil {
			return err
		}
		if v.OverflowUint(x) {
			return corrupt("%d overflows %s", x, n.t)
		}
		v.SetUint(x)
		return nil
	case kFloat32, kFloat64, kComplex64, kComplex128:
		s, err := d.take(n.size, n.t)
		if err != nil {
			return err
		}
		switch n.kind {
		case kFloat32:
			setFloat32Bits(v, le.Uint32(s))
		case kFloat64:
			v.SetFloat(math.Float64frombits(le.Uint64(s)))
		case kComplex64:
			setComplex64Bits(v, le.Uint32(s), le.Uint32(s[4:]))
		default:
			v.SetComplex(complex(math.Float64frombits(le.Uint64(s)), math.Float64frombits(le.Uint64(s[8:]))))
		}
		return nil
	case kString:
		s, err := d.bytes(n.t)
		if err != nil {
			return err
		}
		if err := d.spend(len(s), 1, n.t); err != nil {
			return err
		}
		v.SetString(string(s))
		return nil
	case kGob, kBinary, kText:
		s, err := d.bytes(n.t)
		if err != nil {
			return err
		}
		return n.unmarshal(v, s)
	}
	if n.kind == kSlice || n.kind == kMap || n.kind == kPtr {
		if depth++; depth > maxDepth {
			return corrupt("nesting deeper than %d levels", maxDepth)
		}
	}
	switch n.kind {
	case kRawSlice:
		x, err := d.length(n.t, n.elem.size)
		if err != nil {
			return err
		}
		if x < 0 {
			v.SetZero()
			return nil
		}
		src, _ := d.take(x*n.elem.size, n.t)
		if err := checkBools(n.elem, src, x); err != nil {
			return err
		}
		if err := d.resize(v, n, x); err != nil {
			return err
		}
		getRaw(n.elem, v, x, src)
	case kRawArray:
		src, err := d.take(n.size, n.t)
		if err != nil {
			return err
		}
		if err := checkBools(n.elem, src, n.n); err != nil {
			return err
		}
		getRaw(n.elem, v, n.n, src)
	case kSlice:
		x, err := d.length(n.t, n.elem.min)
		if err != nil {
			return err
		}
		if x < 0 {
			v.SetZero()
			return nil
		}
		if err := d.resize(v, n, x); err != nil {
			return err
		}
		for i := range x {
			if err := n.elem.decode(d, v.Index(i), depth); err != nil {
				return err
			}
		}
	case kArray:
		for i := range n.n {
			if err := n.elem.decode(d, v.Index(i), depth); err != nil {
				return err
			}
		}
	case kStruct:
		if n.skips {
			v.SetZero()
		}
		for _, f := range n.fields {
			if err := f.n.decode(d, v.Field(f.index), depth); err != nil {
				return err
			}
		}
	case kMap:
		x, err := d.length(n.t, n.key.min+n.elem.min)
		if err != nil {
			return err
		}
		if x < 0 {
			v.SetZero()
			return nil
		}
		if err := d.spend(x, int(n.key.t.Size()+n.elem.t.Size())+16, n.t); err != nil {
			return err
		}
		m := reflect.MakeMapWithSize(n.t, x)
		key, val := reflect.New(n.key.t).Elem(), reflect.New(n.elem.t).Elem()
		for range x {
			// Zeroed each time, so that no entry reuses the memory
			// of the one before.
			key.SetZero()
			val.SetZero()
			if err := n.key.decode(d, key, depth); err != nil {
				return err
			}
			if err := n.elem.decode(d, val, depth); err != nil {
				return err
			}
			m.SetMapIndex(key, val)
		}
		v.Set(m)
	case kPtr:
		c, err := d.byte(n.t)
		if err != nil {
			return err
		}
		switch {
		case c == 0:
			v.SetZero()
		case c > 1:
			return corrupt("pointer byte %d", c)
		case len(d.b) < n.elem.min:
			return corrupt("%s needs at least %d bytes; %d remain", n.elem.t, n.elem.min, len(d.b))
		default:
			if err := d.spend(1, int(n.elem.t.Size()), n.t); err != nil {
				return err
			}
			p := reflect.New(n.elem.t)
			if err := n.elem.decode(d, p.Elem(), depth); err != nil {
				return err
			}
			v.Set(p)
		}
	default:
		panic(fmt.Sprintf("objcodec: decoding kind %d", n.kind))
	}
	return nil
}

// resize sets the slice v of node n to x elements, reusing its array
// when its capacity suffices, and else allocating from the budget.
func (d *decoder) resize(v reflect.Value, n *node, x int) error {
	if !v.IsNil() && v.Cap() >= x {
		v.SetLen(x)
		return nil
	}
	if err := d.spend(x, int(n.elem.t.Size()), n.t); err != nil {
		return err
	}
	v.Set(reflect.MakeSlice(n.t, x, x))
	return nil
}

// resize sets the slice v to x elements, reusing its array when its
// capacity suffices.
func resize(v reflect.Value, t reflect.Type, x int) {
	if !v.IsNil() && v.Cap() >= x {
		v.SetLen(x)
		return
	}
	v.Set(reflect.MakeSlice(t, x, x))
}

// getRaw sets count fixed-size elements of the slice or addressable
// array v from src, their little-endian memory.
func getRaw(elem *node, v reflect.Value, count int, src []byte) {
	if len(src) == 0 {
		return
	}
	if rawMemory {
		copy(memOf(v, len(src)), src)
		return
	}
	for i := range count {
		getFixed(elem, v.Index(i), src[i*elem.size:])
	}
}

// getFixed sets the fixed-size value v from the little-endian encoding
// at the start of src, whose bools checkBools has checked.
func getFixed(n *node, v reflect.Value, src []byte) {
	le := binary.LittleEndian
	switch n.kind {
	case kBool:
		v.SetBool(src[0] == 1)
	case kInt8, kInt16, kInt32, kInt64:
		x := getUint(src[:n.size])
		shift := 64 - 8*n.size
		v.SetInt(int64(x<<shift) >> shift)
	case kUint8, kUint16, kUint32, kUint64:
		v.SetUint(getUint(src[:n.size]))
	case kFloat32:
		setFloat32Bits(v, le.Uint32(src))
	case kFloat64:
		v.SetFloat(math.Float64frombits(le.Uint64(src)))
	case kComplex64:
		setComplex64Bits(v, le.Uint32(src), le.Uint32(src[4:]))
	case kComplex128:
		v.SetComplex(complex(math.Float64frombits(le.Uint64(src)), math.Float64frombits(le.Uint64(src[8:]))))
	case kRawArray:
		for i := range n.n {
			getFixed(n.elem, v.Index(i), src[i*n.elem.size:])
		}
	case kStruct:
		off := 0
		for _, f := range n.fields {
			getFixed(f.n, v.Field(f.index), src[off:])
			off += f.n.size
		}
	default:
		panic(fmt.Sprintf("objcodec: kind %d is not fixed-size", n.kind))
	}
}

func getUint(src []byte) uint64 {
	var x uint64
	for i, c := range src {
		x |= uint64(c) << (8 * i)
	}
	return x
}

// checkBools checks that every bool among count fixed-size elements in
// src is 0 or 1: any other byte in a bool's memory is not a Go value.
func checkBools(elem *node, src []byte, count int) error {
	if !elem.bools {
		return nil
	}
	for i := range count {
		if err := checkBool(elem, src[i*elem.size:]); err != nil {
			return err
		}
	}
	return nil
}

func checkBool(n *node, src []byte) error {
	switch n.kind {
	case kBool:
		if src[0] > 1 {
			return corrupt("bool byte %d", src[0])
		}
	case kRawArray:
		if n.elem.bools {
			for i := range n.n {
				if err := checkBool(n.elem, src[i*n.elem.size:]); err != nil {
					return err
				}
			}
		}
	case kStruct:
		off := 0
		for _, f := range n.fields {
			if f.n.bools {
				if err := checkBool(f.n, src[off:]); err != nil {
					return err
				}
			}
			off += f.n.size
		}
	}
	return nil
}

// unmarshal sets v, which is addressable, from the bytes its type's
// marshaler wrote.
func (n *node) unmarshal(v reflect.Value, data []byte) error {
	var err error
	switch m := v.Addr().Interface(); n.kind {
	case kGob:
		err = m.(gob.GobDecoder).GobDecode(data)
	case kBinary:
		err = m.(encoding.BinaryUnmarshaler).UnmarshalBinary(data)
	default:
		err = m.(encoding.TextUnmarshaler).UnmarshalText(data)
	}
	if err != nil {
		return corrupt("decoding %s: %v", n.t, err)
	}
	return nil
}
