package codec

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The reference conversions below are written independently of half.go:
// they work on float64 values with math.Frexp, math.Ldexp and
// math.RoundToEven instead of bit tricks, so an error in one is not
// repeated in the other.

// format describes a binary floating-point format narrower than float32.
type format struct {
	name    string
	manBits int // stored mantissa bits
	expBits int
	bias    int
}

var (
	bf16Format = format{name: "bf16", manBits: 7, expBits: 8, bias: 127}
	fp16Format = format{name: "fp16", manBits: 10, expBits: 5, bias: 15}
)

func (f format) emin() int { return 1 - f.bias }
func (f format) emax() int { return 1<<f.expBits - 2 - f.bias }

// decode returns the value of bit pattern x in format f, NaN for NaNs.
func (f format) decode(x uint16) float64 {
	sign := 1.0
	if x>>(f.manBits+f.expBits)&1 == 1 {
		sign = -1
	}
	exp := int(x>>f.manBits) & (1<<f.expBits - 1)
	man := float64(int(x) & (1<<f.manBits - 1))
	switch exp {
	case 1<<f.expBits - 1:
		if man != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(man, f.emin()-f.manBits)
	}
	return sign * math.Ldexp(1+math.Ldexp(man, -f.manBits), exp-f.bias)
}

// round returns the value of format f nearest to x, ties to even, ±Inf
// beyond the range; zeros keep their sign.
func (f format) round(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	a := math.Abs(x)
	_, exp := math.Frexp(a) // a is in [2^(exp-1), 2^exp)
	quantum := math.Ldexp(1, max(exp-1, f.emin())-f.manBits)
	r := math.RoundToEven(a/quantum) * quantum
	if r >= math.Ldexp(1, f.emax()+1) {
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

// checkConv requires that converting in gave a result whose value (decoded
// by the reference) is want, including the sign of zero; a NaN want asks
// for a NaN of the same sign.
func checkConv(t *testing.T, f format, in float32, got uint16, want float64) {
	t.Helper()
	v := f.decode(got)
	switch {
	case math.IsNaN(want):
		if !math.IsNaN(v) || math.Signbit(float64(in)) != (got&0x8000 != 0) {
			t.Fatalf("%s(%v = %#08x) = %#04x, want a NaN of the same sign", f.name, in, math.Float32bits(in), got)
		}
	case v != want || math.Signbit(v) != math.Signbit(want):
		t.Fatalf("%s(%v = %#08x) = %#04x (%v), want %v", f.name, in, math.Float32bits(in), got, v, want)
	}
}

func TestHalfDecode(t *testing.T) {
	for x := range 1 << 16 {
		b, h := BF16(x), Float16(x)
		for _, tc := range []struct {
			f    format
			got  float32
			want float64
		}{
			{bf16Format, b.Float32(), bf16Format.decode(uint16(x))},
			{fp16Format, h.Float32(), fp16Format.decode(uint16(x))},
		} {
			if math.IsNaN(tc.want) {
				require.True(t, tc.got != tc.got, "%s %#04x: got %v, want NaN", tc.f.name, x, tc.got)
				continue
			}
			if float64(tc.got) != tc.want || math.Signbit(float64(tc.got)) != math.Signbit(tc.want) {
				t.Fatalf("%s %#04x: got %v, want %v", tc.f.name, x, tc.got, tc.want)
			}
		}
		require.Equal(t, math.Float64bits(float64(b.Float32())), math.Float64bits(b.Float64()))
		require.Equal(t, math.Float64bits(float64(h.Float32())), math.Float64bits(h.Float64()))
	}
	// Widening keeps a NaN's sign and payload in the top mantissa bits.
	require.Equal(t, uint32(0xffa10000), math.Float32bits(BF16(0xffa1).Float32()))
	require.Equal(t, uint32(0xff802000)|0x3ff<<13, math.Float32bits(Float16(0xffff).Float32()))
}

func TestHalfRoundTrip(t *testing.T) {
	// Every pattern of each type comes back unchanged through float32,
	// except that NaNs come back quiet (signalling NaNs gain the quiet
	// bit, as IEEE conversions do).
	for x := range 1 << 16 {
		b := BF16(x)
		want := b
		if isNaN(b) {
			want |= 0x0040
		}
		if got := BF16FromFloat32(b.Float32()); got != want {
			t.Fatalf("bf16 %#04x -> %v -> %#04x, want %#04x", x, b.Float32(), got, want)
		}

		h := Float16(x)
		wantH := h
		if isNaN(h) {
			wantH |= 0x0200
		}
		if got := Float16FromFloat32(h.Float32()); got != wantH {
			t.Fatalf("fp16 %#04x -> %v -> %#04x, want %#04x", x, h.Float32(), got, wantH)
		}
	}
}

func TestBF16FromFloat32(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want BF16
	}{
		{"+0", 0x00000000, 0x0000},
		{"-0", 0x80000000, 0x8000},
		{"+Inf", 0x7f800000, 0x7f80},
		{"-Inf", 0xff800000, 0xff80},
		{"quiet NaN", 0x7fc00000, 0x7fc0},
		{"negative quiet NaN", 0xffc00000, 0xffc0},
		// Truncating this one gives +Inf: the classic bug.
		{"signalling NaN, payload in low bits", 0x7f800001, 0x7fc0},
		{"signalling NaN, payload in high bits", 0x7fa00000, 0x7fe0},
		{"NaN all ones", 0xffffffff, 0xffff},
		{"one", 0x3f800000, 0x3f80},
		{"-1.5", 0xbfc00000, 0xbfc0},
		{"tie rounds down to even", 0x3f808000, 0x3f80},
		{"tie rounds up to even", 0x3f818000, 0x3f82},
		{"just above tie", 0x3f808001, 0x3f81},
		{"just below tie", 0x3f817fff, 0x3f81},
		{"negative tie", 0xbf818000, 0xbf82},
		{"max finite", 0x7f7f0000, 0x7f7f},
		{"below overflow tie", 0x7f7f7fff, 0x7f7f},
		{"overflow tie rounds to Inf", 0x7f7f8000, 0x7f80},
		{"max float32 overflows", 0x7f7fffff, 0x7f80},
		{"negative overflow", 0xff7fffff, 0xff80},
		{"smallest float32 subnormal", 0x00000001, 0x0000},
		{"subnormal tie to zero", 0x00008000, 0x0000},
		{"subnormal above tie", 0x00008001, 0x0001},
		{"smallest subnormal", 0x00010000, 0x0001},
		{"subnormal tie up to even", 0x00018000, 0x0002},
		{"largest subnormal rounds to min normal", 0x007fffff, 0x0080},
		{"negative subnormal", 0x80010000, 0x8001},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := BF16FromFloat32(math.Float32frombits(tc.in))
			require.Equal(t, tc.want, got, "got %#04x, want %#04x", uint16(got), uint16(tc.want))
		})
	}
}

func TestFloat16FromFloat32(t *testing.T) {
	pow2 := func(e int) float32 { return float32(math.Ldexp(1, e)) }
	tests := []struct {
		name string
		in   float32
		want Float16
	}{
		{"+0", 0, 0x0000},
		{"-0", float32(math.Copysign(0, -1)), 0x8000},
		{"+Inf", float32(math.Inf(1)), 0x7c00},
		{"-Inf", float32(math.Inf(-1)), 0xfc00},
		{"quiet NaN", math.Float32frombits(0x7fc00000), 0x7e00},
		{"negative quiet NaN", math.Float32frombits(0xffc00000), 0xfe00},
		{"signalling NaN, payload below fp16", math.Float32frombits(0x7f800001), 0x7e00},
		{"signalling NaN, payload kept", math.Float32frombits(0x7f802000), 0x7e01},
		{"NaN all ones", math.Float32frombits(0x7fffffff), 0x7fff},
		{"one", 1, 0x3c00},
		{"-2", -2, 0xc000},
		{"tie rounds down to even", 1 + pow2(-11), 0x3c00},
		{"tie rounds up to even", 1 + 3*pow2(-11), 0x3c02},
		{"just above tie", 1 + pow2(-11) + pow2(-23), 0x3c01},
		{"integer tie down", 2049, 0x6800},
		{"integer tie up", 2051, 0x6802},
		{"max finite", 65504, 0x7bff},
		{"below overflow threshold", math.Float32frombits(0x477fefff), 0x7bff},
		{"overflow threshold rounds to Inf", 65520, 0x7c00},
		{"large", 1e10, 0x7c00},
		{"max float32", math.MaxFloat32, 0x7c00},
		{"negative overflow", -65520, 0xfc00},
		{"min normal", pow2(-14), 0x0400},
		{"largest subnormal", 1023 * pow2(-24), 0x03ff},
		{"subnormal tie up into normal", 1023.5 * pow2(-24), 0x0400},
		{"subnormal tie down to even", 1022.5 * pow2(-24), 0x03fe},
		{"smallest subnormal", pow2(-24), 0x0001},
		{"half the smallest subnormal ties to zero", pow2(-25), 0x0000},
		{"just above half the smallest subnormal", math.Nextafter32(pow2(-25), 1), 0x0001},
		{"subnormal tie up to even", 3 * pow2(-25), 0x0002},
		{"subnormal tie down to even", 5 * pow2(-25), 0x0002},
		{"underflow", pow2(-26), 0x0000},
		{"smallest float32 subnormal", math.Float32frombits(1), 0x0000},
		{"negative subnormal", -pow2(-24), 0x8001},
		{"negative underflow keeps sign", -pow2(-26), 0x8000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Float16FromFloat32(tc.in)
			require.Equal(t, tc.want, got, "got %#04x, want %#04x", uint16(got), uint16(tc.want))
		})
	}
}

// TestHalfFromFloat32Reference compares both conversions against the
// reference on the inputs where rounding is decided: every value of the
// format, the midpoint between each pair of neighbours (the ties) and the
// float32s just either side of it, then on random float32 patterns.
func TestHalfFromFloat32Reference(t *testing.T) {
	tests := []struct {
		f       format
		convert func(float32) uint16
	}{
		{bf16Format, func(x float32) uint16 { return uint16(BF16FromFloat32(x)) }},
		{fp16Format, func(x float32) uint16 { return uint16(Float16FromFloat32(x)) }},
	}
	for _, tc := range tests {
		t.Run(tc.f.name, func(t *testing.T) {
			check := func(in float32) {
				checkConv(t, tc.f, in, tc.convert(in), tc.f.round(float64(in)))
			}
			inf := uint16(1<<tc.f.expBits-1) << tc.f.manBits
			for k := range inf {
				lo := tc.f.decode(k)
				hi := math.Ldexp(1, tc.f.emax()+1) // where the step past max finite lands
				if k+1 < inf {
					hi = tc.f.decode(k + 1)
				}
				mid := float32((lo + hi) / 2) // exact: one more bit than the format has
				require.Equal(t, (lo+hi)/2, float64(mid))
				for _, in := range []float32{float32(lo), mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1)))} {
					check(in)
					check(-in)
				}
			}
			r := newRand(t)
			for range 1 << 20 {
				check(math.Float32frombits(r.Uint32()))
			}
		})
	}
}

func TestHalfString(t *testing.T) {
	tests := []struct {
		v    fmt.Stringer
		want string
	}{
		{BF16(0x3f80), "1"},
		{BF16(0xc040), "-3"},
		{BF16FromFloat32(0.1), "0.100097656"},
		{BF16(0x7f80), "+Inf"},
		{BF16(0xffc0), "NaN"},
		{Float16(0x3c00), "1"},
		{Float16(0x7bff), "65504"},
		{Float16FromFloat32(0.1), "0.099975586"},
		{Float16(0x0001), "5.9604645e-08"},
		{Float16(0xfc00), "-Inf"},
		{Float16(0x7e00), "NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, tc.v.String())
			require.Equal(t, tc.want, fmt.Sprint(tc.v))
		})
	}
}

func BenchmarkFloat16FromFloat32(b *testing.B) {
	in := make([]float32, 4096)
	r := newRand(b)
	for i := range in {
		in[i] = float32(r.NormFloat64())
	}
	out := make([]Float16, len(in))
	b.SetBytes(int64(len(in) * 4))
	b.ReportAllocs()
	for b.Loop() {
		for i, x := range in {
			out[i] = Float16FromFloat32(x)
		}
	}
}
