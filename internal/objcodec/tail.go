package objcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
)

// A value whose encoding ends with a raw block (a slice or array of
// fixed-size elements that is the value itself, its last field, or the
// last field of what its last pointer points to, and so on) can travel
// in two parts: the head, every byte before that block, and the block as
// the value's own memory. Split and Place work on that split; a transport
// that moves both parts then copies the block once, from the sender's
// value straight into the receiver's, as a typed slice travels.

// tailRaw reports whether every encoding of n's values that is not cut
// short by a nil pointer ends with a raw block that is a value's memory:
// a raw slice or array without bools (whose bytes Decode must check), or
// a struct or pointer that ends with one.
func tailRaw(n *node) bool {
	seen := make(map[*node]bool)
	for n != nil && !seen[n] {
		seen[n] = true
		switch n.kind {
		case kRawSlice, kRawArray:
			return !n.elem.bools
		case kStruct:
			if len(n.fields) == 0 {
				return false
			}
			n = n.fields[len(n.fields)-1].n
		case kPtr:
			n = n.elem
		default:
			return false
		}
	}
	return false
}

// split is encode for a node that tailRaw accepts: it appends to b all
// of v's encoding but the final raw block, and returns that block's
// memory (nil when a nil pointer or slice ends the encoding first). v is
// addressable.
func (n *node) split(b []byte, v reflect.Value, depth int) ([]byte, []byte, error) {
	switch n.kind {
	case kRawSlice:
		if v.IsNil() {
			return append(b, 0), nil, nil
		}
		return binary.AppendUvarint(b, uint64(v.Len())+1), memOf(v, v.Len()*n.elem.size), nil
	case kRawArray:
		return b, memOf(v, n.size), nil
	case kStruct:
		last := len(n.fields) - 1
		for _, f := range n.fields[:last] {
			var err error
			if b, err = f.n.encode(b, v.Field(f.index), depth); err != nil {
				return b, nil, err
			}
		}
		f := n.fields[last]
		return f.n.split(b, v.Field(f.index), depth)
	case kPtr:
		if depth++; depth > maxDepth {
			return b, nil, errDepth(n.t)
		}
		if v.IsNil() {
			return append(b, 0), nil, nil
		}
		return n.elem.split(append(b, 1), v.Elem(), depth)
	}
	panic(fmt.Sprintf("objcodec: splitting kind %d", n.kind))
}

// errNotHead says that what place was given is not exactly a head, and
// errNoView that the raw block it was given cannot be viewed in place.
var (
	errNotHead = errors.New("objcodec: not a head")
	errNoView  = errors.New("objcodec: no view")
)

// place is decode for a node that tailRaw accepts, from a head (d) whose
// final raw block, bodyLen bytes, is still to come: it sets v but that
// block, sizing a slice for it, and returns the block's memory in v. With
// a view (the block itself, bodyLen bytes), it makes the final slice view
// it instead, or returns errNoView when it cannot. It returns errNotHead
// when d is not exactly a head, having perhaps set some of v, and an
// error wrapping ErrCorrupt when the head's lengths disagree with bodyLen.
func (n *node) place(d *decoder, v reflect.Value, bodyLen int, view []byte, depth int) ([]byte, error) {
	switch n.kind {
	case kRawSlice:
		x, k := binary.Uvarint(d.b)
		if k <= 0 || k != len(d.b) {
			return nil, errNotHead
		}
		d.b = nil
		if x == 0 {
			if bodyLen != 0 {
				return nil, fmt.Errorf("%w: %d bytes after a nil %s", ErrCorrupt, bodyLen, n.t)
			}
			v.SetZero()
			return []byte{}, nil
		}
		x--
		size := uint64(n.elem.size)
		if bodyLen < 0 || (size == 0 && bodyLen != 0) || (size > 0 && (x > uint64(bodyLen)/size || x*size != uint64(bodyLen))) || x > maxLen {
			return nil, fmt.Errorf("%w: %d elements of %s in %d bytes", ErrCorrupt, x, n.t, bodyLen)
		}
		if view != nil && x > 0 {
			if !viewOf(v, n.t, view, int(x)) {
				return nil, errNoView
			}
			return view, nil
		}
		resize(v, n.t, int(x))
		return memOf(v, bodyLen), nil
	case kRawArray:
		if len(d.b) != 0 {
			return nil, errNotHead
		}
		if view != nil {
			return nil, errNoView // an array's memory is v's own
		}
		if bodyLen != n.size {
			return nil, fmt.Errorf("%w: %d bytes for %s, which takes %d", ErrCorrupt, bodyLen, n.t, n.size)
		}
		return memOf(v, n.size), nil
	case kStruct:
		if n.skips {
			v.SetZero()
		}
		last := len(n.fields) - 1
		for _, f := range n.fields[:last] {
			// A field that does not decode is a head cut short (the
			// start of an encoding sent whole): the caller decodes the
			// whole, which names what is wrong if anything is.
			if f.n.decode(d, v.Field(f.index), depth) != nil {
				return nil, errNotHead
			}
		}
		f := n.fields[last]
		return f.n.place(d, v.Field(f.index), bodyLen, view, depth)
	case kPtr:
		if depth++; depth > maxDepth {
			return nil, errNotHead
		}
		c, err := d.byte(n.t)
		switch {
		case err != nil || c > 1 || c == 0 && len(d.b) != 0:
			return nil, errNotHead
		case c == 0:
			if bodyLen != 0 {
				return nil, fmt.Errorf("%w: %d bytes after a nil %s", ErrCorrupt, bodyLen, n.t)
			}
			v.SetZero()
			return []byte{}, nil
		}
		// A new value, as Decode makes, so that nothing the caller kept
		// of the old one changes.
		p := reflect.New(n.elem.t)
		dst, err := n.elem.place(d, p.Elem(), bodyLen, view, depth)
		if err == nil {
			v.Set(p)
		}
		return dst, err
	}
	panic(fmt.Sprintf("objcodec: placing kind %d", n.kind))
}
