package objcodec

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

type point struct {
	X, Y float32
	ID   int32
	OK   bool
	Tag  [3]uint8
}

type padded struct {
	A int8
	B int64
}

type inner struct {
	Name   string
	Scores []float64
	When   *int
}

type outer struct {
	ID       int
	In       inner
	Ins      []inner
	Ptr      *inner
	PtrPtr   **int
	Points   []point
	Grid     [2][3]float64
	Words    map[string][]string
	ByPair   map[[2]int]string
	Flags    map[float64]bool
	Nested   [][]int16
	Arrays   map[string][4]float32
	Complex  []complex64
	unexport int
}

// stamp marshals itself through MarshalBinary, with pointer receivers.
type stamp struct{ sec, nsec int64 }

func (s *stamp) MarshalBinary() ([]byte, error) {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(s.sec)), uint64(s.nsec)), nil
}

func (s *stamp) UnmarshalBinary(b []byte) error {
	if len(b) != 16 {
		return fmt.Errorf("stamp: %d bytes", len(b))
	}
	s.sec, s.nsec = int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
	return nil
}

type withMarshalers struct {
	S     stamp
	SP    *stamp
	Many  []stamp
	ByKey map[string]stamp
	T     time.Time
	IP    net.IP
}

type withInterface struct {
	Name string
	V    any
	Vs   []any
}

type tree struct {
	Val  int
	Kids []tree
	Next *tree
}

type celsius float32

type named struct {
	Temps []celsius
	Temp  celsius
}

func intp(x int) *int { return &x }

// cases are values of many types, each through a pointer.
func cases() []struct {
	name string
	v    any
} {
	i := 7
	pi := &i
	return []struct {
		name string
		v    any
	}{
		{"bool", ptr(true)},
		{"int8", ptr(int8(-128))},
		{"int16", ptr(int16(-30000))},
		{"int32", ptr(int32(math.MinInt32))},
		{"int64", ptr(int64(math.MinInt64))},
		{"int", ptr(math.MinInt)},
		{"uint8", ptr(uint8(255))},
		{"uint16", ptr(uint16(65535))},
		{"uint32", ptr(uint32(math.MaxUint32))},
		{"uint64", ptr(uint64(math.MaxUint64))},
		{"uint", ptr(uint(math.MaxUint))},
		{"uintptr", ptr(uintptr(12345))},
		{"float32", ptr(float32(math.Pi))},
		{"float32 sNaN", ptr(math.Float32frombits(0x7f800001))},
		{"float64", ptr(-math.MaxFloat64)},
		{"float64 NaN", ptr(math.NaN())},
		{"complex64", ptr(complex64(complex(1.5, -2)))},
		{"complex128", ptr(complex(math.Inf(1), math.Copysign(0, -1)))}, // -0.0 would be +0
		{"string", ptr("héllo")},
		{"empty string", ptr("")},
		{"[]bool", ptr([]bool{true, false, true})},
		{"[]int8", ptr([]int8{-1, 0, 127})},
		{"[]int16", ptr([]int16{-1, 0, 32767})},
		{"[]int32", ptr([]int32{-1, 0, 1 << 30})},
		{"[]int64", ptr([]int64{-1, 0, 1 << 62})},
		{"[]int", ptr([]int{-1, 0, math.MaxInt})},
		{"[]uint8", ptr([]uint8{0, 1, 255})},
		{"[]uint16", ptr([]uint16{0, 1, 65535})},
		{"[]uint32", ptr([]uint32{0, 1, 1 << 31})},
		{"[]uint64", ptr([]uint64{0, 1, 1 << 63})},
		{"[]float32", ptr([]float32{0, -1.5, float32(math.Inf(-1)), math.Float32frombits(0x7fc00001)})},
		{"[]float64", ptr([]float64{0, -1.5, math.NaN()})},
		{"[]complex64", ptr([]complex64{1 + 2i, -3i})},
		{"[]complex128", ptr([]complex128{1 + 2i, -3i})},
		{"[]string", ptr([]string{"a", "", "ccc"})},
		{"nil []float32", ptr([]float32(nil))},
		{"empty []float32", ptr([]float32{})},
		{"nil []string", ptr([]string(nil))},
		{"empty []string", ptr([]string{})},
		{"nil map", ptr(map[string]int(nil))},
		{"empty map", ptr(map[string]int{})},
		{"map", ptr(map[string]int{"a": 1, "b": -2})},
		{"set", ptr(map[string]struct{}{"a": {}, "b": {}})},
		{"[4]float32", ptr([4]float32{1, 2, 3, 4})},
		{"[3]string", ptr([3]string{"x", "", "z"})},
		{"[0]int", ptr([0]int{})},
		{"[]struct{}", ptr(make([]struct{}, 5))},
		{"[]point", ptr([]point{{1, 2, 3, true, [3]uint8{4, 5, 6}}, {X: -1}})},
		{"[]padded", ptr([]padded{{-1, 1 << 40}, {2, -3}})},
		{"[][2]float64", ptr([][2]float64{{1, 2}, {3, 4}})},
		{"*int", ptr(pi)},
		{"nil *int", ptr((*int)(nil))},
		{"**int", ptr(&pi)},
		{"outer", ptr(outer{
			ID:      42,
			In:      inner{Name: "in", Scores: []float64{1, 2}, When: intp(3)},
			Ins:     []inner{{Name: "a"}, {Name: "b", Scores: []float64{}}},
			Ptr:     &inner{Name: "p"},
			PtrPtr:  &pi,
			Points:  []point{{X: 1, OK: true}},
			Grid:    [2][3]float64{{1, 2, 3}, {4, 5, 6}},
			Words:   map[string][]string{"x": {"y", "z"}, "e": nil, "f": {}},
			ByPair:  map[[2]int]string{{1, 2}: "a", {3, 4}: "b"},
			Flags:   map[float64]bool{1.5: true, -2: false},
			Nested:  [][]int16{{1}, nil, {}, {2, 3}},
			Arrays:  map[string][4]float32{"v": {1, 2, 3, math.Float32frombits(0x7f800002)}},
			Complex: []complex64{complex(math.Float32frombits(0x7fc00003), 1)},
		})},
		{"marshalers", ptr(withMarshalers{
			S:     stamp{1, 2},
			SP:    &stamp{3, 4},
			Many:  []stamp{{5, 6}, {7, 8}},
			ByKey: map[string]stamp{"k": {9, 10}},
			T:     time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC),
			IP:    net.IPv4(10, 1, 2, 3),
		})},
		{"time.Time", ptr(time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC))},
		{"gob fallback", ptr(withInterface{Name: "n", V: 3.5, Vs: []any{"a", int64(2)}})},
		{"recursive", ptr(tree{Val: 1, Kids: []tree{{Val: 2}, {Val: 3, Next: &tree{Val: 4}}}})},
		{"named", ptr(named{Temps: []celsius{1, celsius(math.Float32frombits(0x7f800001))}, Temp: celsius(math.Float32frombits(0xff800001))})},
		{"struct{ID int; Name string; Grad []float32}", ptr(struct {
			ID   int
			Name string
			Grad []float32
		}{1, "w", []float32{1, 2, 3}})},
	}
}

func ptr[T any](v T) *T { return &v }

func TestRoundTrip(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Append([]byte("prefix"), tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b[:6]) != "prefix" {
				t.Fatalf("Append overwrote its prefix: %q", b[:6])
			}
			got := reflect.New(reflect.TypeOf(tc.v).Elem())
			if err := Decode(b[6:], got.Interface()); err != nil {
				t.Fatal(err)
			}
			if err := equalBits(got.Elem(), reflect.ValueOf(tc.v).Elem()); err != nil {
				t.Fatalf("decoded %+v, want %+v: %v", got.Elem(), reflect.ValueOf(tc.v).Elem(), err)
			}
		})
	}
}

// TestGobFallbackMarked: a type with an interface goes through gob, and
// the header says so.
func TestGobFallbackMarked(t *testing.T) {
	b, err := Append(nil, &withInterface{V: 1})
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != formatGob {
		t.Fatalf("format %d, want gob's %d", b[0], formatGob)
	}
	b, err = Append(nil, &outer{})
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != formatNative {
		t.Fatalf("format %d, want %d", b[0], formatNative)
	}
}

// TestUnexportedZeroed: Decode sets unexported fields to zero, whatever
// the value held.
func TestUnexportedZeroed(t *testing.T) {
	b, err := Append(nil, &outer{ID: 1, unexport: 5})
	if err != nil {
		t.Fatal(err)
	}
	got := outer{unexport: 9}
	if err := Decode(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != 1 || got.unexport != 0 {
		t.Fatalf("decoded ID %d and unexport %d, want 1 and 0", got.ID, got.unexport)
	}
}

func TestDecodeReusesCapacity(t *testing.T) {
	src := []float32{1, 2, 3}
	b, err := Append(nil, &src)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 1, 10)
	array := &dst[:1][0]
	if err := Decode(b, &dst); err != nil {
		t.Fatal(err)
	}
	if &dst[0] != array || !reflect.DeepEqual(dst, src) {
		t.Fatalf("decoded %v at a new array; want %v in the old one", dst, src)
	}
	strs := []string{"a", "b"}
	b, _ = Append(nil, &strs)
	into := make([]string, 0, 2)
	if err := Decode(b, &into); err != nil || &into[0] != &into[:1][0] || !reflect.DeepEqual(into, strs) {
		t.Fatalf("decoded %v, %v", into, err)
	}
}

func TestTypeMismatch(t *testing.T) {
	b, err := Append(nil, &[]float32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	var into []int32
	err = Decode(b, &into)
	if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "[]int32") || !strings.Contains(err.Error(), "fingerprint") {
		t.Fatalf("decoding []float32 into []int32: %v", err)
	}
	// Different field names are different types.
	b, _ = Append(nil, &struct{ X, Y float64 }{})
	if err := Decode(b, &struct{ A, B float64 }{}); !errors.Is(err, ErrType) {
		t.Fatalf("decoding struct{X, Y} into struct{A, B}: %v", err)
	}
	// Same structure, other names of types: the same type.
	b, _ = Append(nil, &[]celsius{1})
	var f []float32
	if err := Decode(b, &f); err != nil || f[0] != 1 {
		t.Fatalf("decoding []celsius into []float32: %v, %v", f, err)
	}
}

func TestEncodeErrors(t *testing.T) {
	type noExported struct{ a, b int }
	if _, err := Append(nil, &noExported{a: 1, b: 2}); err == nil || !strings.Contains(err.Error(), "no exported fields") {
		t.Fatalf("a struct without exported fields: %v", err)
	}
	if _, err := Append(nil, &struct{ C chan int }{}); err == nil {
		t.Fatal("a struct with a channel encoded")
	}
	if _, err := Append(nil, (*int)(nil)); err == nil {
		t.Fatal("a nil pointer encoded")
	}
	if _, err := Append(nil, 5); err == nil {
		t.Fatal("a non-pointer encoded")
	}
	if err := Decode([]byte{}, nil); err == nil {
		t.Fatal("decoded into nil")
	}
	// A cycle of pointers.
	c := &tree{Val: 1}
	c.Next = c
	if _, err := Append(nil, c); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Fatalf("a cycle: %v", err)
	}
}

// chain builds n nested *tree.
func chain(n int) *tree {
	var t *tree
	for i := range n {
		t = &tree{Val: i, Next: t}
	}
	return t
}

func TestDepth(t *testing.T) {
	ok := chain(maxDepth - 10)
	b, err := Append(nil, ok)
	if err != nil {
		t.Fatal(err)
	}
	var got tree
	if err := Decode(b, &got); err != nil {
		t.Fatal(err)
	}
	if _, err := Append(nil, chain(maxDepth+1)); err == nil {
		t.Fatal("encoded a chain deeper than maxDepth")
	}
	// A hostile encoding of 20000 nested pointers: each tree is Val,
	// Kids (nil), Next (1, then the next tree).
	h := planOf(reflect.TypeFor[tree]()).appendHeader(nil)
	for range 20000 {
		h = append(h, 0, 0, 1)
	}
	if err := Decode(h, &got); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "deeper") {
		t.Fatalf("20000 nested pointers: %v", err)
	}
}

// header returns the header of T.
func header[T any]() []byte { return planOf(reflect.TypeFor[T]()).appendHeader(nil) }

func uv(x uint64) []byte { return binary.AppendUvarint(nil, x) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// nestedKids is a hostile tree: every level declares as many Kids as
// the bytes that remain can hold, and its first kid does the same, so
// that without a budget the declared slices add up to the square of the
// input's length.
func nestedKids(levels int) []byte {
	b := header[tree]()
	n := levels * 3 // each level: Val, a one- or two-byte length
	for i := range levels {
		remaining := n - 3*(i+1)
		b = append(b, 0)
		kids := binary.AppendUvarint(nil, uint64(remaining/3)+1)
		b = append(b, kids...)
		if len(kids) == 1 {
			b = append(b, 0) // pad: a nil Next
		}
	}
	return b
}

func TestHostile(t *testing.T) {
	huge := uint64(1) << 61
	tests := []struct {
		name string
		b    []byte
		into any
	}{
		{"empty", nil, new([]float32)},
		{"short header", []byte{1, 2, 3}, new([]float32)},
		{"unknown format", cat([]byte{9}, header[[]float32]()[1:]), new([]float32)},
		{"huge []float32", cat(header[[]float32](), uv(huge)), new([]float32)},
		{"huge []float32 with data", cat(header[[]float32](), uv(1<<40), make([]byte, 64)), new([]float32)},
		{"max uvarint", cat(header[[]float32](), uv(math.MaxUint64)), new([]float32)},
		{"huge []string", cat(header[[]string](), uv(huge)), new([]string)},
		{"huge []*int", cat(header[[]*int](), uv(1<<40), make([]byte, 100)), new([]*int)},
		{"huge [][]int", cat(header[[][]int](), uv(1<<40), make([]byte, 100)), new([][]int)},
		{"huge map", cat(header[map[string]int](), uv(huge)), new(map[string]int)},
		{"huge string", cat(header[string](), uv(huge)), new(string)},
		{"huge marshaled", cat(header[stamp](), uv(huge)), new(stamp)},
		{"huge []struct{}", cat(header[[]struct{}](), uv(math.MaxUint64)), new([]struct{})},
		{"pointer to a huge array", cat(header[*[1 << 20]int64](), []byte{1}, make([]byte, 8)), new(*[1 << 20]int64)},
		{"bad varint", cat(header[int](), bytes.Repeat([]byte{0xff}, 11)), new(int)},
		{"int16 overflow", cat(header[int16](), binary.AppendVarint(nil, 1<<20)), new(int16)},
		{"bool byte", cat(header[bool](), []byte{2}), new(bool)},
		{"raw bool byte", cat(header[[]bool](), uv(3), []byte{1, 0, 7}), new([]bool)},
		{"raw struct bool byte", cat(header[[]point](), uv(2), make([]byte, 12), []byte{2}, make([]byte, 3)), new([]point)},
		{"pointer byte", cat(header[*int](), []byte{2, 0}), new(*int)},
		{"left over", cat(header[int8](), []byte{1, 2}), new(int8)},
		{"marshaler refuses", cat(header[stamp](), uv(3), []byte{1, 2, 3}), new(stamp)},
		{"gob short", cat(header[withInterface](), []byte{0x7f, 1}), new(withInterface)},
		{"gob huge message", cat(header[withInterface](), []byte{0xfc, 0x00, 0x90, 0x00, 0x00}), new(withInterface)},
		{"gob garbage", cat(header[withInterface](), []byte{3, 1, 2, 3}), new(withInterface)},
		{"nested kids", nestedKids(400), new(tree)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			alloc := allocated(func() { err = Decode(tt.b, tt.into) })
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode gave %v, want ErrCorrupt", err)
			}
			if limit := 64*uint64(len(tt.b)) + 16<<10; alloc > limit {
				t.Fatalf("Decode of %d bytes allocated %d bytes, more than %d", len(tt.b), alloc, limit)
			}
		})
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTruncated: every prefix of every case's encoding is an error, and
// so is every encoding with a byte more.
func TestTruncated(t *testing.T) {
	for _, tc := range cases() {
		b, err := Append(nil, tc.v)
		if err != nil {
			t.Fatal(err)
		}
		into := reflect.New(reflect.TypeOf(tc.v).Elem()).Interface()
		for i := range b {
			if err := Decode(b[:i], into); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: decoding %d of %d bytes gave %v", tc.name, i, len(b), err)
			}
		}
		if err := Decode(append(b, 0), into); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: decoding with a byte more gave %v", tc.name, err)
		}
	}
}

// Types whose encodings end with a raw block, and some that do not.
type (
	task struct {
		Name string
		ID   int
		Data []float32
	}
	framed struct {
		Seq   uint64
		Frame [4]int16
	}
	wrapped struct {
		Tag  string
		Task *task
	}
	listNode struct {
		N    int
		Next *listNode
	}
	rawFirst struct {
		Data []float32
		Name string
	}
	hidden struct {
		Data []float32
		note string
	}
)

func TestSplitPlace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v     any
		split bool // the encoding ends with a raw block that Place fills
		view  bool // and View views it (it is a slice's)
	}{
		{"slice", ptr([]float32{1, 2, 3}), true, true},
		{"nil slice", ptr([]float32(nil)), true, true},
		{"empty slice", ptr([]float32{}), true, true},
		{"array", ptr([4]int16{1, -2, 3, -4}), true, false},
		{"struct ending with a slice", &task{Name: "t", ID: -7, Data: []float32{1, 2, 3, 4}}, true, true},
		{"struct ending with a nil slice", &task{Name: "t"}, true, true},
		{"struct ending with an array", &framed{Seq: 9, Frame: [4]int16{5, 6, 7, 8}}, true, false},
		{"pointer to a struct ending with a slice", &wrapped{Tag: "w", Task: &task{Data: []float32{5, 6}}}, true, true},
		{"nil pointer at the end", &wrapped{Tag: "w"}, true, true},
		{"struct with unexported fields", &hidden{Data: []float32{1}, note: "dropped"}, true, true},
		{"slice of structs with bools", ptr([]point{{X: 1, ID: 2}}), false, false},
		{"slice of strings", ptr([]string{"a"}), false, false},
		{"raw slice first", &rawFirst{Data: []float32{1}, Name: "n"}, false, false},
		{"recursive type", &listNode{N: 1, Next: &listNode{N: 2}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := Append(nil, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			head, body, ok, err := Split([]byte("prefix"), tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.split && rawMemory; ok != want {
				t.Fatalf("Split: ok %v, want %v", ok, want)
			}
			if !ok {
				if string(head) != "prefix" || body != nil {
					t.Fatalf("Split refused but gave %q + %x", head, body)
				}
				return
			}
			head = head[len("prefix"):]
			if !bytes.Equal(cat(head, body), whole) {
				t.Fatalf("Split gave %x + %x; Append %x", head, body, whole)
			}
			into := reflect.New(reflect.TypeOf(tc.v).Elem())
			dst, ok, err := Place(head, len(body), into.Interface())
			if err != nil || !ok {
				t.Fatalf("Place: ok %v, %v", ok, err)
			}
			copy(dst, body)
			want := reflect.New(into.Elem().Type())
			if err := Decode(whole, want.Interface()); err != nil {
				t.Fatal(err)
			}
			if err := equalBits(into.Elem(), want.Elem()); err != nil {
				t.Fatalf("placed %+v, decoded %+v: %v", into.Elem(), want.Elem(), err)
			}
			viewed := reflect.New(into.Elem().Type())
			if ok, err := View(head, bytes.Clone(body), viewed.Interface()); err != nil || ok != tc.view {
				t.Fatalf("View: ok %v, %v; want ok %v", ok, err, tc.view)
			} else if ok {
				if err := equalBits(viewed.Elem(), want.Elem()); err != nil {
					t.Fatalf("viewed %+v, decoded %+v: %v", viewed.Elem(), want.Elem(), err)
				}
			}
			// Every shorter head is not a head: ok false, no error,
			// whatever Place set of the value along the way.
			for i := range head {
				if _, ok, err := Place(head[:i], len(whole)-i, reflect.New(into.Elem().Type()).Interface()); ok || err != nil && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Place of %d of the head's %d bytes: ok %v, %v", i, len(head), ok, err)
				}
			}
		})
	}
	if !rawMemory {
		return
	}
	// The receiver's slice keeps its array when it is large enough.
	head, body, _, _ := Split(nil, &task{Data: []float32{1, 2}})
	into := task{Data: make([]float32, 8)}
	array := &into.Data[:1][0]
	if dst, ok, err := Place(head, len(body), &into); err != nil || !ok || len(dst) != 8 || &into.Data[0] != array {
		t.Fatalf("Place into a slice of capacity 8: ok %v, %v, %d bytes, array kept %v", ok, err, len(dst), &into.Data[0] == array)
	}
	// View shares the block's memory, with the capacity of its elements
	// only; it refuses a block not aligned for them.
	body = make([]byte, 16)
	view := task{Data: make([]float32, 8)}
	if ok, err := View(head, body[:8], &view); err != nil || !ok || &view.Data[0] != (*float32)(unsafe.Pointer(&body[0])) || cap(view.Data) != 2 {
		t.Fatalf("View: ok %v, %v, %d elements of capacity %d, shared %v", ok, err, len(view.Data), cap(view.Data), &view.Data[0] == (*float32)(unsafe.Pointer(&body[0])))
	}
	if ok, err := View(head, body[1:9], &view); ok || err != nil {
		t.Fatalf("View of a block at an odd address: ok %v, %v", ok, err)
	}
	// Place refuses what is not exactly a head, and lengths that disagree.
	whole, _ := Append(nil, ptr([]float32{1, 2}))
	var f []float32
	if _, ok, err := Place(whole[:len(whole)-1], 1, &f); ok || err != nil {
		t.Fatalf("Place of more than a head: ok %v, %v", ok, err)
	}
	head, _, _, _ = Split(nil, ptr([]float32{1, 2}))
	if _, _, err := Place(head, 7, &f); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Place of 2 float32 in 7 bytes: %v", err)
	}
	var i []int32
	if _, _, err := Place(head, 8, &i); !errors.Is(err, ErrType) {
		t.Fatalf("Place of []float32 into []int32: %v", err)
	}
	head, _, _, _ = Split(nil, &wrapped{Tag: "w"})
	if _, _, err := Place(head, 4, &wrapped{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Place of 4 bytes after a nil pointer: %v", err)
	}
}

// TestGobCoverage: every value of the cases that gob encodes, this
// package encodes too.
func TestGobCoverage(t *testing.T) {
	for _, tc := range cases() {
		var buf bytes.Buffer
		if gob.NewEncoder(&buf).Encode(tc.v) != nil {
			continue
		}
		if _, err := Append(nil, tc.v); err != nil {
			t.Errorf("%s: gob encodes it, Append: %v", tc.name, err)
		}
	}
}

// memory returns a copy of v's memory.
func memory(v reflect.Value) []byte {
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	return bytes.Clone(unsafe.Slice((*byte)(c.UnsafePointer()), v.Type().Size()))
}

// equalBits compares two values as Decode should reproduce them: floats
// by their bits, nil and empty apart.
func equalBits(a, b reflect.Value) error {
	if a.Type() != b.Type() {
		return fmt.Errorf("types %s and %s", a.Type(), b.Type())
	}
	if _, _, ok := marshaler(a.Type()); ok {
		// Compared by their encodings: time.Time, for one, has several
		// representations of an instant.
		n := &node{t: a.Type()}
		n.kind, n.addr, _ = marshaler(a.Type())
		x, errA := n.marshal(a)
		y, errB := n.marshal(b)
		if errA != nil || errB != nil || !bytes.Equal(x, y) {
			return fmt.Errorf("marshaled %x (%v) and %x (%v)", x, errA, y, errB)
		}
		return nil
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		// Compared as memory: reflect's Float and Complex go through
		// float64, which quiets signalling NaNs.
		if !bytes.Equal(memory(a), memory(b)) {
			return fmt.Errorf("%v != %v (bits %x, %x)", a, b, memory(a), memory(b))
		}
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return fmt.Errorf("nil %v, nil %v", a.IsNil(), b.IsNil())
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Errorf("lengths %d and %d", a.Len(), b.Len())
		}
		for i := range a.Len() {
			if err := equalBits(a.Index(i), b.Index(i)); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return fmt.Errorf("maps of %d and %d", a.Len(), b.Len())
		}
		// Entries are matched by equalBits, not looked up: a NaN key
		// equals no key.
		var keys, vals []reflect.Value
		for it := b.MapRange(); it.Next(); {
			keys, vals = append(keys, it.Key()), append(vals, it.Value())
		}
	entries:
		for it := a.MapRange(); it.Next(); {
			for i := range keys {
				if keys[i].IsValid() && equalBits(it.Key(), keys[i]) == nil && equalBits(it.Value(), vals[i]) == nil {
					keys[i] = reflect.Value{}
					continue entries
				}
			}
			return fmt.Errorf("entry %v: %v missing", it.Key(), it.Value())
		}
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Errorf("nil %v, nil %v", a.IsNil(), b.IsNil())
			}
			return nil
		}
		return equalBits(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if err := equalBits(a.Field(i), b.Field(i)); err != nil {
				return fmt.Errorf(".%s: %w", a.Type().Field(i).Name, err)
			}
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Errorf("%v != %v", a.Bool(), b.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Errorf("%v != %v", a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return fmt.Errorf("%v != %v", a.Uint(), b.Uint())
		}
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Errorf("%q != %q", a.String(), b.String())
		}
	default:
		return fmt.Errorf("cannot compare %s", a.Type())
	}
	return nil
}
