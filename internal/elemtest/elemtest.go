// Package elemtest helps the tests of codec and internal/kernel run one
// check on every element type with reproducible random inputs.
package elemtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/stretchr/testify/require"
)

// Typed is one instantiation of a generic test, run as a subtest named
// after its element type.
type Typed struct {
	Name string
	Run  func(t *testing.T)
}

// NumTypes is the number of types in codec.codec.Elem.
const NumTypes = 12

// ForEachType runs every instantiation as a subtest. Generic functions
// cannot be passed uninstantiated, so each test lists its twelve
// instantiations, and ForEachType fails a test that misses one.
func ForEachType(t *testing.T, tests []Typed) {
	t.Helper()
	if len(tests) != NumTypes {
		t.Fatalf("%d typed cases, want one per element type (%d)", len(tests), NumTypes)
	}
	for _, tc := range tests {
		t.Run(tc.Name, tc.Run)
	}
}

// FromBits returns the T whose bit pattern is the low bits of x.
func FromBits[T codec.Elem](x uint64) T {
	var v any
	switch any(*new(T)).(type) {
	case int8:
		v = int8(x)
	case int16:
		v = int16(x)
	case int32:
		v = int32(x)
	case int64:
		v = int64(x)
	case uint8:
		v = uint8(x)
	case uint16:
		v = uint16(x)
	case uint32:
		v = uint32(x)
	case uint64:
		v = x
	case float32:
		v = math.Float32frombits(uint32(x))
	case float64:
		v = math.Float64frombits(x)
	case codec.BFloat16:
		v = codec.BFloat16(x)
	case codec.Float16:
		v = codec.Float16(x)
	}
	return v.(T)
}

// ToBits returns the bit pattern of v, zero-extended.
func ToBits[T codec.Elem](v T) uint64 {
	switch x := any(v).(type) {
	case int8:
		return uint64(uint8(x))
	case int16:
		return uint64(uint16(x))
	case int32:
		return uint64(uint32(x))
	case int64:
		return uint64(x)
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	case uint64:
		return x
	case float32:
		return uint64(math.Float32bits(x))
	case float64:
		return math.Float64bits(x)
	case codec.BFloat16:
		return uint64(x)
	case codec.Float16:
		return uint64(x)
	}
	panic("unreachable")
}

// IsNaN reports whether v is a floating-point NaN of its type.
func IsNaN[T codec.Elem](v T) bool {
	switch x := any(v).(type) {
	case float32:
		return x != x
	case float64:
		return x != x
	case codec.BFloat16:
		return x&0x7fff > 0x7f80
	case codec.Float16:
		return x&0x7fff > 0x7c00
	}
	return false
}

// RandElems returns n elements with uniformly random bit patterns, which
// for floats covers every exponent, subnormals, infinities and NaNs.
func RandElems[T codec.Elem](r *rand.Rand, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = FromBits[T](r.Uint64())
	}
	return s
}

// NewRand is seeded from the test's name, so every run and every subtest
// sees the same inputs and a failure reproduces.
func NewRand(t testing.TB) *rand.Rand {
	var h uint64 = 14695981039346656037
	for _, c := range []byte(t.Name()) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(h, 0x9e3779b97f4a7c15))
}

// RequireSameBits compares element bit patterns, so that NaNs compare
// equal to themselves.
func RequireSameBits[T codec.Elem](t *testing.T, want, got []T) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if ToBits(want[i]) != ToBits(got[i]) {
			t.Fatalf("element %d: got %v (%#x), want %v (%#x)", i, got[i], ToBits(got[i]), want[i], ToBits(want[i]))
		}
	}
}
