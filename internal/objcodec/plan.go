package objcodec

import (
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// kind is how a node encodes its values.
type kind uint8

const (
	kBool kind = iota + 1
	kInt8
	kInt16
	kInt32
	kInt64
	kUint8
	kUint16
	kUint32
	kUint64
	kFloat32
	kFloat64
	kComplex64
	kComplex128
	kString
	kSlice    // length, then the elements one by one
	kRawSlice // length, then the elements' memory as one block
	kArray    // the elements one by one
	kRawArray // the elements' memory as one block
	kStruct   // the exported fields in order
	kMap      // length, then key and value of each entry
	kPtr      // 0 for nil, else 1 and the value pointed to
	kGob      // gob.GobEncoder: length-prefixed GobEncode bytes
	kBinary   // encoding.BinaryMarshaler: length-prefixed MarshalBinary bytes
	kText     // encoding.TextMarshaler: length-prefixed MarshalText bytes
)

// node is the encoding of one type. Nodes of a recursive type point back
// to themselves.
type node struct {
	kind kind
	t    reflect.Type
	// elem is the element of a slice or array, the value of a map and the
	// value a pointer points to; key is a map's key.
	elem, key *node
	// fields are a struct's exported fields, in order; skips says it has
	// others, which are not encoded and which Decode sets to zero.
	fields []field
	skips  bool
	// n is an array's length.
	n int
	// fixed says that a value's memory is its encoding inside a raw block
	// (on a little-endian host): a number, a bool, or an array or struct
	// of such with every field exported and no padding. size is then its
	// size in bytes, and bools says it holds bools, whose bytes Decode
	// checks (a bool's byte must be 0 or 1).
	fixed bool
	size  int
	bools bool
	// min is the fewest bytes any value's encoding takes: a decoder
	// refuses a length whose elements cannot fit in what remains.
	min int
	// addr says that a marshaler's methods have pointer receivers.
	addr bool
}

type field struct {
	index int
	name  string
	n     *node
}

// plan is how the values of one type are encoded, found once per type.
type plan struct {
	t    reflect.Type
	root *node
	// gob says that the type holds kinds that only gob encodes
	// (interfaces, channels, functions): the whole value is gob's, and
	// why says which type made it so.
	gob bool
	why string
	// fp is the fingerprint of the type's description.
	fp uint64
	// err is why values of the type cannot be encoded at all.
	err error
	// tail says that the type's encodings end with a raw block of its
	// memory, which Split and Place leave in place (tailRaw).
	tail bool
}

// plans caches a *plan per reflect.Type.
var plans sync.Map

func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := newPlan(t)
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*plan)
}

func newPlan(t reflect.Type) *plan {
	p := &plan{t: t}
	var d strings.Builder
	d.WriteString("objcodec/1 ")
	describe(&d, t, nil)
	h := fnv.New64a()
	h.Write([]byte(d.String()))
	p.fp = h.Sum64()
	b := builder{top: t, nodes: make(map[reflect.Type]*node)}
	root, err := b.build(t)
	if err == nil {
		err = b.check()
	}
	switch {
	case errors.Is(err, errNeedsGob):
		p.gob, p.why = true, strings.TrimPrefix(err.Error(), errNeedsGob.Error()+": ")
	case err != nil:
		p.err = err
	default:
		p.root, p.tail = root, tailRaw(root)
	}
	return p
}

// errNeedsGob is the builder's signal that a type holds a kind only gob
// encodes.
var errNeedsGob = errors.New("needs gob")

type builder struct {
	top   reflect.Type
	nodes map[reflect.Type]*node
}

var (
	gobEncoderType  = reflect.TypeFor[gob.GobEncoder]()
	gobDecoderType  = reflect.TypeFor[gob.GobDecoder]()
	binMarshalType  = reflect.TypeFor[encoding.BinaryMarshaler]()
	binUnmarshType  = reflect.TypeFor[encoding.BinaryUnmarshaler]()
	textMarshalType = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// marshaler says whether t encodes itself, as gob checks: with
// GobEncode, else MarshalBinary, else MarshalText, each only with its
// decoding method on *t. addr says that the encoding method needs *t.
func marshaler(t reflect.Type) (k kind, addr, ok bool) {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		return 0, false, false
	}
	pt := reflect.PointerTo(t)
	for _, m := range [...]struct {
		k        kind
		enc, dec reflect.Type
	}{
		{kGob, gobEncoderType, gobDecoderType},
		{kBinary, binMarshalType, binUnmarshType},
		{kText, textMarshalType, textUnmarshType},
	} {
		if !pt.Implements(m.dec) {
			continue
		}
		if t.Implements(m.enc) {
			return m.k, false, true
		}
		if pt.Implements(m.enc) {
			return m.k, true, true
		}
	}
	return 0, false, false
}

func (b *builder) build(t reflect.Type) (*node, error) {
	if n, ok := b.nodes[t]; ok {
		return n, nil
	}
	n := &node{t: t}
	b.nodes[t] = n
	if k, addr, ok := marshaler(t); ok {
		n.kind, n.addr, n.min = k, addr, 1
		return n, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		n.kind, n.bools = kBool, true
	case reflect.Int8:
		n.kind = kInt8
	case reflect.Uint8:
		n.kind = kUint8
	case reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		n.kind = [...]kind{2: kInt16, 4: kInt32, 8: kInt64}[t.Size()]
	case reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint, reflect.Uintptr:
		n.kind = [...]kind{2: kUint16, 4: kUint32, 8: kUint64}[t.Size()]
	case reflect.Float32:
		n.kind = kFloat32
	case reflect.Float64:
		n.kind = kFloat64
	case reflect.Complex64:
		n.kind = kComplex64
	case reflect.Complex128:
		n.kind = kComplex128
	case reflect.String:
		n.kind, n.min = kString, 1
	case reflect.Slice:
		elem, err := b.build(t.Elem())
		if err != nil {
			return nil, err
		}
		n.kind, n.elem, n.min = kSlice, elem, 1
		if elem.fixed {
			n.kind = kRawSlice
		}
	case reflect.Array:
		elem, err := b.build(t.Elem())
		if err != nil {
			return nil, err
		}
		n.kind, n.elem, n.n = kArray, elem, t.Len()
		n.min = satMul(elem.min, n.n)
		if elem.fixed || n.n == 0 {
			n.kind, n.fixed, n.size, n.bools = kRawArray, true, int(t.Size()), elem.bools && n.n > 0
			n.min = n.size
		}
	case reflect.Map:
		key, err := b.build(t.Key())
		if err != nil {
			return nil, err
		}
		elem, err := b.build(t.Elem())
		if err != nil {
			return nil, err
		}
		n.kind, n.key, n.elem, n.min = kMap, key, elem, 1
	case reflect.Pointer:
		elem, err := b.build(t.Elem())
		if err != nil {
			return nil, err
		}
		n.kind, n.elem, n.min = kPtr, elem, 1
	case reflect.Struct:
		if err := b.buildStruct(n, t); err != nil {
			return nil, err
		}
	default: // Interface, Chan, Func, UnsafePointer
		return nil, fmt.Errorf("%w: %s holds %s", errNeedsGob, b.top, t)
	}
	if n.kind <= kComplex128 {
		n.fixed, n.size, n.min = true, int(t.Size()), int(t.Size())
		if n.kind != kFloat32 && n.kind != kFloat64 && n.kind != kComplex64 && n.kind != kComplex128 && n.size > 1 {
			n.min = 1 // a varint
		}
	}
	return n, nil
}

func (b *builder) buildStruct(n *node, t reflect.Type) error {
	n.kind = kStruct
	fixed, size, bools := true, 0, false
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			n.skips, fixed = true, false
			continue
		}
		fn, err := b.build(f.Type)
		if err != nil {
			return err
		}
		n.fields = append(n.fields, field{index: i, name: f.Name, n: fn})
		n.min = satAdd(n.min, fn.min)
		if fn.fixed {
			size += fn.size
			bools = bools || fn.bools
		} else {
			fixed = false
		}
	}
	if t.NumField() > 0 && len(n.fields) == 0 {
		return fmt.Errorf("objcodec: type %s has no exported fields", t)
	}
	if fixed && size == int(t.Size()) {
		n.fixed, n.size, n.bools, n.min = true, size, bools, size
	}
	return nil
}

// check refuses the graph where a slice's or map's element could encode
// to no bytes (a zero-size type, or a struct of zero-size exported fields
// beside unexported ones): a hostile length would then cost time, or
// memory, without costing input. Such types go to gob, which spends a
// byte per element.
func (b *builder) check() error {
	for t, n := range b.nodes {
		switch n.kind {
		case kSlice, kRawSlice:
			if n.elem.min == 0 {
				return fmt.Errorf("%w: the elements of %s can encode to nothing", errNeedsGob, t)
			}
		case kMap:
			if n.key.min == 0 && n.elem.min == 0 {
				return fmt.Errorf("%w: the entries of %s can encode to nothing", errNeedsGob, t)
			}
		}
	}
	return nil
}

func satAdd(a, b int) int {
	if a > maxLen-b {
		return maxLen
	}
	return a + b
}

func satMul(a, n int) int {
	if n != 0 && a > maxLen/n {
		return maxLen
	}
	return a * n
}

// maxLen bounds the lengths the codec deals in.
const maxLen = math.MaxInt / 2

// describe writes the canonical description of t, whose fingerprint
// identifies the type on the wire: kinds, sizes, exported field names,
// array lengths, and the names of types that marshal themselves.
// stack holds the composite types being described, so that a recursive
// type refers back to itself ("@i", its index on the stack).
func describe(w *strings.Builder, t reflect.Type, stack []reflect.Type) {
	for i, s := range stack {
		if s == t {
			w.WriteString("@" + strconv.Itoa(i))
			return
		}
	}
	if k, _, ok := marshaler(t); ok {
		w.WriteString([...]string{kGob: "gobencoder(", kBinary: "binarymarshaler(", kText: "textmarshaler("}[k])
		w.WriteString(typeName(t))
		w.WriteString(")")
		return
	}
	bits := strconv.Itoa(int(t.Size()) * 8)
	switch t.Kind() {
	case reflect.Bool, reflect.String:
		w.WriteString(t.Kind().String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.WriteString("int" + bits)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.WriteString("uint" + bits)
	case reflect.Float32, reflect.Float64:
		w.WriteString("float" + bits)
	case reflect.Complex64, reflect.Complex128:
		w.WriteString("complex" + bits)
	case reflect.Slice:
		w.WriteString("[]")
		describe(w, t.Elem(), append(stack, t))
	case reflect.Array:
		w.WriteString("[" + strconv.Itoa(t.Len()) + "]")
		describe(w, t.Elem(), append(stack, t))
	case reflect.Pointer:
		w.WriteString("*")
		describe(w, t.Elem(), append(stack, t))
	case reflect.Map:
		w.WriteString("map[")
		describe(w, t.Key(), append(stack, t))
		w.WriteString("]")
		describe(w, t.Elem(), append(stack, t))
	case reflect.Struct:
		w.WriteString("struct{")
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			w.WriteString(f.Name + " ")
			describe(w, f.Type, append(stack, t))
			w.WriteString(";")
		}
		w.WriteString("}")
	case reflect.Interface:
		if t.NumMethod() == 0 {
			w.WriteString("any")
		} else {
			w.WriteString("interface(" + typeName(t) + ")")
		}
	default:
		w.WriteString(t.String())
	}
}

func typeName(t reflect.Type) string {
	if t.Name() != "" && t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}

// header is the format byte and the fingerprint.
const headerLen = 9

const (
	formatNative = 1
	formatGob    = 2
)

func (p *plan) appendHeader(b []byte) []byte {
	f := byte(formatNative)
	if p.gob {
		f = formatGob
	}
	return binary.LittleEndian.AppendUint64(append(b, f), p.fp)
}

// checkHeader checks that b starts with p's header and returns the rest.
func (p *plan) checkHeader(b []byte) ([]byte, error) {
	if len(b) < headerLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorrupt, len(b), headerLen)
	}
	f, fp := b[0], binary.LittleEndian.Uint64(b[1:headerLen])
	if f != formatNative && f != formatGob {
		return nil, fmt.Errorf("%w: unknown format %d", ErrCorrupt, f)
	}
	if fp != p.fp {
		return nil, fmt.Errorf("%w: the data holds a value of another type than %s: its type's fingerprint %016x differs from %s's %016x",
			ErrType, p.t, fp, p.t, p.fp)
	}
	if (f == formatGob) != p.gob {
		return nil, fmt.Errorf("%w: format %d for %s", ErrCorrupt, f, p.t)
	}
	return b[headerLen:], nil
}
