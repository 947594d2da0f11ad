package codec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// typed is one instantiation of a generic test, run as a subtest named
// after its element type.
type typed struct {
	name string
	run  func(t *testing.T)
}

// forEachType runs every instantiation as a subtest. Generic functions
// cannot be passed uninstantiated, so each test lists its twelve
// instantiations through allTypes.
func forEachType(t *testing.T, tests []typed) {
	t.Helper()
	if len(tests) != int(numDTypes)-1 {
		t.Fatalf("%d typed cases, want one per DType (%d)", len(tests), numDTypes-1)
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// fromBits returns the T whose bit pattern is the low bits of x.
func fromBits[T Elem](x uint64) T {
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
	case BF16:
		v = BF16(x)
	case Float16:
		v = Float16(x)
	}
	return v.(T)
}

// toBits returns the bit pattern of v, zero-extended.
func toBits[T Elem](v T) uint64 {
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
	case BF16:
		return uint64(x)
	case Float16:
		return uint64(x)
	}
	panic("unreachable")
}

// isNaN reports whether v is a floating-point NaN of its type.
func isNaN[T Elem](v T) bool {
	switch x := any(v).(type) {
	case float32:
		return x != x
	case float64:
		return x != x
	case BF16:
		return x&0x7fff > 0x7f80
	case Float16:
		return x&0x7fff > 0x7c00
	}
	return false
}

// randElems returns n elements with uniformly random bit patterns, which
// for floats covers every exponent, subnormals, infinities and NaNs.
func randElems[T Elem](r *rand.Rand, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = fromBits[T](r.Uint64())
	}
	return s
}

// newRand is seeded from the test's name, so every run and every subtest
// sees the same inputs and a failure reproduces.
func newRand(t testing.TB) *rand.Rand {
	var h uint64 = 14695981039346656037
	for _, c := range []byte(t.Name()) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(h, 0x9e3779b97f4a7c15))
}
