package codec_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/elemtest"
	"github.com/stretchr/testify/require"
)

// The reference conversions below are written independently of half.go:
// they work on float64 values with math.Frexp, math.Ldexp and
// math.RoundToEven instead of bit tricks, so an error in one is not
// repeated in the other.

// checkConv requires that converting in gave a result whose value (decoded
// by the reference) is want, including the sign of zero; a NaN want asks
// for a NaN of the same sign.
func checkConv(t *testing.T, f elemtest.Format, in float32, got uint16, want float64) {
	t.Helper()
	v := f.Decode(got)
	switch {
	case math.IsNaN(want):
		if !math.IsNaN(v) || math.Signbit(float64(in)) != (got&0x8000 != 0) {
			t.Fatalf("%s(%v = %#08x) = %#04x, want a NaN of the same sign", f.Name, in, math.Float32bits(in), got)
		}
	case v != want || math.Signbit(v) != math.Signbit(want):
		t.Fatalf("%s(%v = %#08x) = %#04x (%v), want %v", f.Name, in, math.Float32bits(in), got, v, want)
	}
}

func TestHalfDecode(t *testing.T) {
	for x := range 1 << 16 {
		b, h := codec.BFloat16(x), codec.Float16(x)
		for _, tc := range []struct {
			f    elemtest.Format
			got  float32
			want float64
		}{
			{elemtest.BF16Format, b.Float32(), elemtest.BF16Format.Decode(uint16(x))},
			{elemtest.FP16Format, h.Float32(), elemtest.FP16Format.Decode(uint16(x))},
		} {
			if math.IsNaN(tc.want) {
				require.True(t, tc.got != tc.got, "%s %#04x: got %v, want NaN", tc.f.Name, x, tc.got)
				continue
			}
			if float64(tc.got) != tc.want || math.Signbit(float64(tc.got)) != math.Signbit(tc.want) {
				t.Fatalf("%s %#04x: got %v, want %v", tc.f.Name, x, tc.got, tc.want)
			}
		}
		require.Equal(t, math.Float64bits(float64(b.Float32())), math.Float64bits(b.Float64()))
		require.Equal(t, math.Float64bits(float64(h.Float32())), math.Float64bits(h.Float64()))
	}
	// Widening keeps a NaN's sign and payload in the top mantissa bits.
	require.Equal(t, uint32(0xffa10000), math.Float32bits(codec.BFloat16(0xffa1).Float32()))
	require.Equal(t, uint32(0xff802000)|0x3ff<<13, math.Float32bits(codec.Float16(0xffff).Float32()))
}

func TestHalfRoundTrip(t *testing.T) {
	// Every pattern of each type comes back unchanged through float32,
	// except that NaNs come back quiet (signalling NaNs gain the quiet
	// bit, as IEEE conversions do).
	for x := range 1 << 16 {
		b := codec.BFloat16(x)
		want := b
		if elemtest.IsNaN(b) {
			want |= 0x0040
		}
		if got := codec.BFloat16FromFloat32(b.Float32()); got != want {
			t.Fatalf("bf16 %#04x -> %v -> %#04x, want %#04x", x, b.Float32(), got, want)
		}

		h := codec.Float16(x)
		wantH := h
		if elemtest.IsNaN(h) {
			wantH |= 0x0200
		}
		if got := codec.Float16FromFloat32(h.Float32()); got != wantH {
			t.Fatalf("fp16 %#04x -> %v -> %#04x, want %#04x", x, h.Float32(), got, wantH)
		}
	}
}

func TestBF16FromFloat32(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want codec.BFloat16
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
			got := codec.BFloat16FromFloat32(math.Float32frombits(tc.in))
			require.Equal(t, tc.want, got, "got %#04x, want %#04x", uint16(got), uint16(tc.want))
		})
	}
}

func TestFloat16FromFloat32(t *testing.T) {
	pow2 := func(e int) float32 { return float32(math.Ldexp(1, e)) }
	tests := []struct {
		name string
		in   float32
		want codec.Float16
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
			got := codec.Float16FromFloat32(tc.in)
			require.Equal(t, tc.want, got, "got %#04x, want %#04x", uint16(got), uint16(tc.want))
		})
	}
}

// TestHalfFromFloat32Reference compares both conversions against the
// reference on the inputs where rounding is decided: every value of the
// elemtest.Format, the midpoint between each pair of neighbours (the ties) and the
// float32s just either side of it, then on random float32 patterns.
func TestHalfFromFloat32Reference(t *testing.T) {
	tests := []struct {
		f       elemtest.Format
		convert func(float32) uint16
	}{
		{elemtest.BF16Format, func(x float32) uint16 { return uint16(codec.BFloat16FromFloat32(x)) }},
		{elemtest.FP16Format, func(x float32) uint16 { return uint16(codec.Float16FromFloat32(x)) }},
	}
	for _, tc := range tests {
		t.Run(tc.f.Name, func(t *testing.T) {
			check := func(in float32) {
				checkConv(t, tc.f, in, tc.convert(in), tc.f.Round(float64(in)))
			}
			inf := uint16(1<<tc.f.ExpBits-1) << tc.f.ManBits
			for k := range inf {
				lo := tc.f.Decode(k)
				hi := math.Ldexp(1, tc.f.Emax()+1) // where the step past max finite lands
				if k+1 < inf {
					hi = tc.f.Decode(k + 1)
				}
				mid := float32((lo + hi) / 2) // exact: one more bit than the elemtest.Format has
				require.Equal(t, (lo+hi)/2, float64(mid))
				for _, in := range []float32{float32(lo), mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1)))} {
					check(in)
					check(-in)
				}
			}
			r := elemtest.NewRand(t)
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
		{codec.BFloat16(0x3f80), "1"},
		{codec.BFloat16(0xc040), "-3"},
		{codec.BFloat16FromFloat32(0.1), "0.100097656"},
		{codec.BFloat16(0x7f80), "+Inf"},
		{codec.BFloat16(0xffc0), "NaN"},
		{codec.Float16(0x3c00), "1"},
		{codec.Float16(0x7bff), "65504"},
		{codec.Float16FromFloat32(0.1), "0.099975586"},
		{codec.Float16(0x0001), "5.9604645e-08"},
		{codec.Float16(0xfc00), "-Inf"},
		{codec.Float16(0x7e00), "NaN"},
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
	r := elemtest.NewRand(b)
	for i := range in {
		in[i] = float32(r.NormFloat64())
	}
	out := make([]codec.Float16, len(in))
	b.SetBytes(int64(len(in) * 4))
	b.ReportAllocs()
	for b.Loop() {
		for i, x := range in {
			out[i] = codec.Float16FromFloat32(x)
		}
	}
}

// checkConv64 requires that converting in gave want (a value from the
// reference) exactly, including the sign of zero, and for a NaN in the
// NaN that nanFromFloat64 says.
func checkConv64(t *testing.T, f elemtest.Format, in float64, got uint16, want float64) {
	t.Helper()
	if math.IsNaN(in) {
		if wantBits := f.NaNFromFloat64(math.Float64bits(in)); got != wantBits {
			t.Fatalf("%s(NaN %#016x) = %#04x, want %#04x", f.Name, math.Float64bits(in), got, wantBits)
		}
		return
	}
	if v := f.Decode(got); v != want || math.Signbit(v) != math.Signbit(want) {
		t.Fatalf("%s(%v = %#016x) = %#04x (%v), want %v", f.Name, in, math.Float64bits(in), got, v, want)
	}
}

// halfFromFloat64 are the two conversions from float64, with their formats.
var halfFromFloat64 = []struct {
	f       elemtest.Format
	convert func(float64) uint16
	// from32 is the conversion from float32, which must agree with
	// convert on every float32.
	from32 func(float32) uint16
}{
	{elemtest.BF16Format, func(x float64) uint16 { return uint16(codec.BFloat16FromFloat64(x)) }, func(x float32) uint16 { return uint16(codec.BFloat16FromFloat32(x)) }},
	{elemtest.FP16Format, func(x float64) uint16 { return uint16(codec.Float16FromFloat64(x)) }, func(x float32) uint16 { return uint16(codec.Float16FromFloat32(x)) }},
}

// TestHalfReferencesAgree checks the two references against each other on
// the inputs TestHalfFromFloat64Reference uses, so that neither can be
// wrong in a way the tests of the conversions would inherit.
func TestHalfReferencesAgree(t *testing.T) {
	for _, tc := range halfFromFloat64 {
		t.Run(tc.f.Name, func(t *testing.T) {
			elemtest.ForEachRoundingInput64(t, tc.f, func(in float64) {
				a, b := tc.f.Round(in), tc.f.RoundBig(in)
				if math.Float64bits(a) != math.Float64bits(b) && !(math.IsNaN(a) && math.IsNaN(b)) {
					t.Fatalf("%s(%v = %#016x): round says %v, roundBig %v", tc.f.Name, in, math.Float64bits(in), a, b)
				}
			})
		})
	}
}

// TestHalfFromFloat64Reference compares codec.BFloat16FromFloat64 and
// codec.Float16FromFloat64 with the math/big reference: they must round once,
// directly, not through float32.
func TestHalfFromFloat64Reference(t *testing.T) {
	for _, tc := range halfFromFloat64 {
		t.Run(tc.f.Name, func(t *testing.T) {
			elemtest.ForEachRoundingInput64(t, tc.f, func(in float64) {
				checkConv64(t, tc.f, in, tc.convert(in), tc.f.RoundBig(in))
			})
		})
	}
}

// TestHalfFromFloat64MatchesFloat32 checks that on a float32 the float64
// conversions give the float32 ones' result bit for bit (float64(x) is
// exact, so one correct rounding of each is the same), NaN payloads
// included.
func TestHalfFromFloat64MatchesFloat32(t *testing.T) {
	for _, tc := range halfFromFloat64 {
		t.Run(tc.f.Name, func(t *testing.T) {
			check := func(x float32) {
				if got, want := tc.convert(float64(x)), tc.from32(x); got != want {
					t.Fatalf("%s(float64(%v = %#08x)) = %#04x, from float32 %#04x", tc.f.Name, x, math.Float32bits(x), got, want)
				}
			}
			r := elemtest.NewRand(t)
			for range 1 << 20 {
				check(math.Float32frombits(r.Uint32()))
			}
			for b := uint32(0); b < 1<<16; b++ {
				// Every float32 at the bottom of the range, and at the
				// top, with NaNs.
				check(math.Float32frombits(b))
				check(math.Float32frombits(0x7f800000 - 1<<15 + b))
				check(math.Float32frombits(0xffff0000 + b))
			}
		})
	}
}

// TestHalfFromFloat64 pins the results where double rounding through
// float32 goes wrong, and the ends of the ranges.
func TestHalfFromFloat64(t *testing.T) {
	tests := []struct {
		name string
		in   float64
		bf16 codec.BFloat16
		fp16 codec.Float16
	}{
		{"+0", 0, 0x0000, 0x0000},
		{"-0", math.Copysign(0, -1), 0x8000, 0x8000},
		{"one", 1, 0x3f80, 0x3c00},
		{"+Inf", math.Inf(1), 0x7f80, 0x7c00},
		{"-Inf", math.Inf(-1), 0xff80, 0xfc00},
		{"quiet NaN", math.NaN(), 0x7fc0, 0x7e00},
		{"signalling NaN, payload in low bits", math.Float64frombits(0x7ff0000000000001), 0x7fc0, 0x7e00},
		{"negative NaN, payload in high bits", math.Float64frombits(0xfff5500000000000), 0xffea, 0xff54},
		// 1 + 2^-8 + 2^-40 is just above a codec.BFloat16 tie; float32 rounds it
		// onto the tie (it has 24 bits), and the tie then goes to even, 1.
		// The others are the same trap on either side and in either elemtest.Format.
		{"bf16: just above a tie, double rounding goes down", 1 + 0x1p-8 + 0x1p-40, 0x3f81, 0x3c04},
		{"bf16: just below a tie, double rounding goes up", 1 + 0x1.8p-7 - 0x1p-40, 0x3f81, 0x3c0c},
		{"fp16: just above a tie, double rounding goes down", 1 + 0x1p-11 + 0x1p-40, 0x3f80, 0x3c01},
		{"fp16: just below a tie, double rounding goes up", 1 + 0x1.8p-10 - 0x1p-40, 0x3f80, 0x3c01},
		{"bf16 tie to even down", 1 + 0x1p-8, 0x3f80, 0x3c04},
		{"fp16 tie to even up", 1 + 0x1.8p-10, 0x3f80, 0x3c02},
		{"fp16 max finite", 65504, 0x4780, 0x7bff},
		{"fp16 below overflow", 65519, 0x4780, 0x7bff},
		{"fp16 just below overflow", math.Nextafter(65520, 0), 0x4780, 0x7bff},
		{"fp16 overflow threshold", 65520, 0x4780, 0x7c00},
		{"fp16 negative overflow", -65520, 0xc780, 0xfc00},
		{"bf16 max finite", 0x1.fep127, 0x7f7f, 0x7c00},
		{"bf16 just below overflow", math.Nextafter(0x1.ffp127, 0), 0x7f7f, 0x7c00},
		{"bf16 overflow threshold", 0x1.ffp127, 0x7f80, 0x7c00},
		{"max float32 overflows bf16", math.MaxFloat32, 0x7f80, 0x7c00},
		{"max float64", -math.MaxFloat64, 0xff80, 0xfc00},
		{"fp16 smallest subnormal", 0x1p-24, 0x3380, 0x0001},
		{"fp16 half the smallest subnormal ties to zero", 0x1p-25, 0x3300, 0x0000},
		{"fp16 just above half the smallest subnormal", 0x1p-25 + 0x1p-60, 0x3300, 0x0001},
		{"fp16 subnormal tie up into normal", 1023.5 * 0x1p-24, 0x3880, 0x0400},
		{"bf16 smallest subnormal", 0x1p-133, 0x0001, 0x0000},
		{"bf16 half the smallest subnormal ties to zero", -0x1p-134, 0x8000, 0x8000},
		{"bf16 just above half the smallest subnormal", 0x1p-134 + 0x1p-180, 0x0001, 0x0000},
		{"bf16 subnormal tie up to even", 3 * 0x1p-134, 0x0002, 0x0000},
		{"bf16 largest subnormal rounds to min normal", 0x1p-126 - 0x1p-160, 0x0080, 0x0000},
		// Below float32's subnormals: float32(x) is 0 and the tie at
		// 2^-150 would decide; codec.BFloat16 has no such values, so 0.
		{"below float32 range", 1e-50, 0x0000, 0x0000},
		{"smallest float64", -math.SmallestNonzeroFloat64, 0x8000, 0x8000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := codec.BFloat16FromFloat64(tc.in)
			require.Equal(t, tc.bf16, got, "bf16: got %#04x, want %#04x", uint16(got), uint16(tc.bf16))
			got16 := codec.Float16FromFloat64(tc.in)
			require.Equal(t, tc.fp16, got16, "fp16: got %#04x, want %#04x", uint16(got16), uint16(tc.fp16))
		})
	}
}

// TestLargestFinite checks the largest finite value of each format.
func TestLargestFinite(t *testing.T) {
	require.Equal(t, 0x1.fep127, codec.BFloat16(0x7f7f).Float64(), "largest finite bfloat16")
	require.Equal(t, 65504.0, codec.Float16(0x7bff).Float64(), "largest finite binary16")
}
