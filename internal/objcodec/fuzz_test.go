package objcodec

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// fuzzTypes are the types FuzzDecode decodes into: those of the round
// trip cases and a few more.
var fuzzTypes = func() []reflect.Type {
	var ts []reflect.Type
	for _, tc := range cases() {
		ts = append(ts, reflect.TypeOf(tc.v).Elem())
	}
	return append(ts,
		reflect.TypeFor[fuzzValue](),
		reflect.TypeFor[map[string]map[int8][]string](),
		reflect.TypeFor[[][][]float32](),
		reflect.TypeFor[*[2][]*string](),
		reflect.TypeFor[[]map[uint16]point](),
		reflect.TypeFor[task](),
		reflect.TypeFor[wrapped](),
		reflect.TypeFor[framed](),
	)
}()

// FuzzDecode decodes arbitrary bytes into each type: Decode must never
// panic, nor allocate more than a small multiple of its input (gob's
// decoder, which has bounds of its own, aside), and neither must Place
// or View, taking them for a head. The first byte chooses
// the type; with the low bit of the second clear the rest follows the
// type's true header, so that the fuzzer explores the value's decoding
// and not only the header check. What decodes must encode and decode
// again to the same value.
func FuzzDecode(f *testing.F) {
	for i, t := range fuzzTypes {
		v := reflect.New(t)
		if tc := cases(); i < len(tc) {
			v = reflect.ValueOf(tc[i].v)
		}
		b, err := Append(nil, v.Interface())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{byte(i), 0}, b[headerLen:]...))
		f.Add(append([]byte{byte(i), 1}, b...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		typ := fuzzTypes[int(data[0])%len(fuzzTypes)]
		p := planOf(typ)
		in := data[2:]
		if data[1]&1 == 0 {
			in = append(p.appendHeader(nil), in...)
		}
		bodyLen := 4 * int(data[1]>>1)
		dst, ok, err := Place(in, bodyLen, reflect.New(typ).Interface())
		switch {
		case err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrType):
			t.Fatalf("placing into %s: an error without a sentinel: %v", typ, err)
		case ok && len(dst) != bodyLen:
			t.Fatalf("placing %d bytes into %s gave %d", bodyLen, typ, len(dst))
		}
		if _, err := View(in, make([]byte, bodyLen), reflect.New(typ).Interface()); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrType) {
			t.Fatalf("viewing into %s: an error without a sentinel: %v", typ, err)
		}
		v := reflect.New(typ)
		alloc := allocated(func() { err = Decode(in, v.Interface()) })
		if limit := 64*uint64(len(in)) + 64<<10; !p.gob && alloc > limit {
			t.Fatalf("decoding %d bytes into %s allocated %d bytes", len(in), typ, alloc)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrType) {
				t.Fatalf("decoding into %s: an error without a sentinel: %v", typ, err)
			}
			return
		}
		b, err := Append(nil, v.Interface())
		if err != nil {
			if strings.Contains(err.Error(), "deeper") || p.gob {
				return
			}
			t.Fatalf("re-encoding a decoded %s: %v", typ, err)
		}
		w := reflect.New(typ)
		if err := Decode(b, w.Interface()); err != nil {
			t.Fatalf("decoding a re-encoded %s: %v", typ, err)
		}
		if p.gob {
			return // gob does not tell nil from empty
		}
		if err := equalBits(w.Elem(), v.Elem()); err != nil {
			t.Fatalf("%s: decoded %+v, then %+v: %v", typ, v.Elem(), w.Elem(), err)
		}
	})
}

// fuzzValue is what FuzzRoundTrip builds from its input.
type fuzzValue struct {
	N     int64
	I     int
	U16   uint16
	B     bool
	S     string
	F32   []float32
	F64   []float64
	I8    []int8
	U64   []uint64
	Bools []bool
	C64   []complex64
	C128  [2]complex128
	Strs  []string
	M     map[string]int32
	P     *point
	Pts   []point
	Pad   []padded
	Arr   [3]float32
	Nest  [][]uint16
	Stamp stamp
	Inner *fuzzValue
	skip  int
}

// FuzzRoundTrip builds values from the fuzzer's input and checks that
// they decode as they were, bit for bit, through Append and Decode and
// through Split and Place.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{}, "", int64(0), uint8(0))
	f.Add([]byte("0123456789abcdefghijklmnopqrstuvwxyz"), "a,b,,c", int64(-1), uint8(0xff))
	f.Add([]byte{0xff, 0xff, 0x80, 0x7f, 1, 0, 0, 0}, ",", int64(math.MinInt64), uint8(0x55))
	f.Fuzz(func(t *testing.T, data []byte, s string, n int64, flags uint8) {
		v := build(data, s, n, flags)
		if flags&0x80 != 0 {
			inner := build(data[len(data)/2:], s, -n, ^flags&0x7f)
			v.Inner = &inner
		}
		b, err := Append(nil, &v)
		if err != nil {
			t.Fatal(err)
		}
		var got fuzzValue
		if err := Decode(b, &got); err != nil {
			t.Fatal(err)
		}
		if err := equalBits(reflect.ValueOf(got), reflect.ValueOf(v)); err != nil {
			t.Fatalf("decoded %+v, want %+v: %v", got, v, err)
		}
		// A struct that ends with the raw slice, through Split and Place.
		tv := task{Name: s, ID: int(n), Data: v.F32}
		head, body, ok, err := Split(nil, &tv)
		if err != nil || ok != rawMemory {
			t.Fatalf("Split of a task: ok %v, %v", ok, err)
		}
		if ok {
			got := task{Data: make([]float32, int(flags)%5)}
			dst, ok, err := Place(head, len(body), &got)
			if err != nil || !ok {
				t.Fatalf("Place of a task: ok %v, %v", ok, err)
			}
			copy(dst, body)
			if err := equalBits(reflect.ValueOf(got), reflect.ValueOf(tv)); err != nil {
				t.Fatal(err)
			}
		}
		// A raw slice on its own, through Split and Place too.
		whole, err := Append(nil, &v.F32)
		if err != nil {
			t.Fatal(err)
		}
		var f32 []float32
		if err := Decode(whole, &f32); err != nil {
			t.Fatal(err)
		}
		if err := equalBits(reflect.ValueOf(f32), reflect.ValueOf(v.F32)); err != nil {
			t.Fatal(err)
		}
		head, body, ok, err = Split(nil, &v.F32)
		if err != nil || ok != rawMemory {
			t.Fatalf("Split: ok %v, %v", ok, err)
		}
		if !ok {
			return
		}
		f32 = make([]float32, int(flags)%5)
		dst, ok, err := Place(head, len(body), &f32)
		if err != nil || !ok {
			t.Fatalf("Place: ok %v, %v", ok, err)
		}
		copy(dst, body)
		if err := equalBits(reflect.ValueOf(f32), reflect.ValueOf(v.F32)); err != nil {
			t.Fatal(err)
		}
	})
}

// build makes a fuzzValue out of the input; flags choose nil or empty
// for the slices and maps that the input leaves empty.
func build(data []byte, s string, n int64, flags uint8) fuzzValue {
	le := binary.LittleEndian
	v := fuzzValue{N: n, I: int(n >> 3), U16: uint16(n), B: flags&1 != 0, S: s, skip: 0}
	empty := flags&2 != 0
	mk := func(l int) bool { return l > 0 || empty }
	if mk(len(data) / 4) {
		v.F32 = make([]float32, len(data)/4)
		for i := range v.F32 {
			v.F32[i] = math.Float32frombits(le.Uint32(data[4*i:]))
		}
	}
	if mk(len(data) / 8) {
		v.F64 = make([]float64, len(data)/8)
		v.U64 = make([]uint64, len(data)/8)
		v.C64 = make([]complex64, len(data)/8)
		for i := range v.F64 {
			x := le.Uint64(data[8*i:])
			v.F64[i], v.U64[i] = math.Float64frombits(x), x
			v.C64[i] = complex(math.Float32frombits(uint32(x)), math.Float32frombits(uint32(x>>32)))
		}
	}
	if mk(len(data)) {
		v.I8 = make([]int8, len(data))
		v.Bools = make([]bool, len(data))
		for i, c := range data {
			v.I8[i], v.Bools[i] = int8(c), c&1 != 0
		}
	}
	if len(data) >= 32 {
		for i := range v.C128 {
			v.C128[i] = complex(math.Float64frombits(le.Uint64(data[16*i:])), math.Float64frombits(le.Uint64(data[16*i+8:])))
		}
	}
	if s != "" || empty {
		v.Strs = strings.Split(s, ",")
		v.M = make(map[string]int32)
		for i, w := range v.Strs {
			v.M[w] = int32(i) * int32(n)
		}
	}
	if flags&4 != 0 {
		v.P = &point{X: float32(n), OK: flags&8 != 0}
	}
	for i := 0; i+13 <= len(data); i += 13 {
		v.Pts = append(v.Pts, point{
			X: math.Float32frombits(le.Uint32(data[i:])), Y: math.Float32frombits(le.Uint32(data[i+4:])),
			ID: int32(data[i+8]), OK: data[i+9]&1 != 0, Tag: [3]uint8{data[i+10], data[i+11], data[i+12]},
		})
		v.Pad = append(v.Pad, padded{A: int8(data[i]), B: int64(le.Uint64(data[i+1:]))})
	}
	if flags&16 != 0 {
		v.Arr = [3]float32{float32(n), math.Float32frombits(uint32(n)), -1}
	}
	for i := 0; i < len(data); i += 3 {
		var row []uint16
		if flags&32 != 0 {
			row = []uint16{}
		}
		for _, c := range data[i:min(i+3, len(data))] {
			if c%4 != 0 {
				row = append(row, uint16(c)<<8|uint16(n))
			}
		}
		v.Nest = append(v.Nest, row)
	}
	v.Stamp = stamp{n, int64(flags)}
	return v
}
