package objcodec

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"testing"
)

// grad is the struct of the benchmarks: a little metadata and a gradient.
type grad struct {
	ID   int
	Name string
	Grad []float32
}

var benchSizes = []int{64 << 10, 1 << 20}

// BenchmarkFloat32s encodes and decodes a []float32 with this package
// and with gob (a new encoder and decoder per value, as the object
// collectives use it: every value self-describing), and copies it, the
// floor this package should reach.
func BenchmarkFloat32s(b *testing.B) {
	for _, size := range benchSizes {
		v := make([]float32, size/4)
		for i := range v {
			v[i] = float32(i)
		}
		benchCodecs(b, fmt.Sprintf("%dKiB", size>>10), size, &v, func() any { return new([]float32) })
		b.Run(fmt.Sprintf("%dKiB/copy", size>>10), func(b *testing.B) {
			dst := make([]float32, len(v))
			b.SetBytes(int64(size))
			for b.Loop() {
				copy(dst, v)
			}
		})
	}
}

// BenchmarkStruct is BenchmarkFloat32s for a grad.
func BenchmarkStruct(b *testing.B) {
	for _, size := range benchSizes {
		v := grad{ID: 7, Name: "layer3.weight", Grad: make([]float32, size/4)}
		for i := range v.Grad {
			v.Grad[i] = float32(i)
		}
		benchCodecs(b, fmt.Sprintf("%dKiB", size>>10), size, &v, func() any { return new(grad) })
	}
}

// benchCodecs runs name/{objcodec,gob}/{encode,decode} for the value v
// points to; into makes the value decoded into, reused across
// iterations as a caller's variable would be.
func benchCodecs(b *testing.B, name string, size int, v any, into func() any) {
	b.Run(name+"/objcodec/encode", func(b *testing.B) {
		dst, err := Append(nil, v)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			dst, _ = Append(dst[:0], v)
		}
	})
	b.Run(name+"/objcodec/decode", func(b *testing.B) {
		enc, _ := Append(nil, v)
		w := into()
		if err := Decode(enc, w); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			if err := Decode(enc, w); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(name+"/gob/encode", func(b *testing.B) {
		var buf bytes.Buffer
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := gob.NewEncoder(&buf).Encode(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(name+"/gob/decode", func(b *testing.B) {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(v); err != nil {
			b.Fatal(err)
		}
		enc := buf.Bytes()
		w := into()
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			if err := gob.NewDecoder(bytes.NewReader(enc)).Decode(w); err != nil {
				b.Fatal(err)
			}
		}
	})
}
