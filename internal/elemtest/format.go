package elemtest

import (
	"math"
	"math/big"
	"testing"
)

// The reference model of the 16-bit float formats below is written
// independently of codec's conversions and internal/half: it works on
// float64 values with math.Frexp, math.Ldexp and math.RoundToEven (and,
// for RoundBig, math/big) instead of bit tricks, so an error in one is not
// repeated in the other.

// Format describes a binary floating-point format narrower than float32.
type Format struct {
	Name    string
	ManBits int // stored mantissa bits
	ExpBits int
	Bias    int
}

// The two formats: bfloat16 and IEEE binary16.
var (
	BF16Format = Format{Name: "bf16", ManBits: 7, ExpBits: 8, Bias: 127}
	FP16Format = Format{Name: "fp16", ManBits: 10, ExpBits: 5, Bias: 15}
)

// EachStep calls visit for each non-negative finite value lo of f, in
// increasing order, with hi the next value up: for the largest finite
// value, 2^(Emax+1), where rounding overflows to Inf.
func (f Format) EachStep(visit func(lo, hi float64)) {
	inf := uint16(1<<f.ExpBits-1) << f.ManBits
	for k := range inf {
		hi := math.Ldexp(1, f.Emax()+1)
		if k+1 < inf {
			hi = f.Decode(k + 1)
		}
		visit(f.Decode(k), hi)
	}
}

// Emin is the exponent of the smallest normal value.
func (f Format) Emin() int { return 1 - f.Bias }

// Emax is the exponent of the largest finite value.
func (f Format) Emax() int { return 1<<f.ExpBits - 2 - f.Bias }

// Decode returns the value of bit pattern x in format f, NaN for NaNs.
func (f Format) Decode(x uint16) float64 {
	sign := 1.0
	if x>>(f.ManBits+f.ExpBits)&1 == 1 {
		sign = -1
	}
	exp := int(x>>f.ManBits) & (1<<f.ExpBits - 1)
	man := float64(int(x) & (1<<f.ManBits - 1))
	switch exp {
	case 1<<f.ExpBits - 1:
		if man != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(man, f.Emin()-f.ManBits)
	}
	return sign * math.Ldexp(1+math.Ldexp(man, -f.ManBits), exp-f.Bias)
}

// Round returns the value of Format f nearest to x, ties to even, ±Inf
// beyond the range; zeros keep their sign.
func (f Format) Round(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	a := math.Abs(x)
	_, exp := math.Frexp(a) // a is in [2^(exp-1), 2^exp)
	quantum := math.Ldexp(1, max(exp-1, f.Emin())-f.ManBits)
	r := math.RoundToEven(a/quantum) * quantum
	if r >= math.Ldexp(1, f.Emax()+1) {
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

// RoundBig is a second reference, for float64 inputs, in integer
// arithmetic on math/big: it writes |x| as m·2^e with an integer m, divides
// by the Format's quantum at x's exponent (the spacing of the Format's
// values there, fixed at the bottom of the range: subnormals) and rounds
// the quotient to the nearest integer, ties to even, by comparing the
// remainder with half the divisor. It shares nothing with Format.Round or
// with half.go beyond the Format's parameters. Zeros, infinities and NaNs
// come back as they are.
func (f Format) RoundBig(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	frac, exp := math.Frexp(math.Abs(x)) // |x| = frac·2^exp, frac in [0.5, 1)
	m := new(big.Int).SetInt64(int64(math.Ldexp(frac, 53)))
	e := exp - 53 // |x| = m·2^e exactly
	// The quantum is 2^q: the unit in the last place of a value in
	// [2^(exp-1), 2^exp), or of the subnormals below 2^emin.
	q := max(exp-1, f.Emin()) - f.ManBits
	n := new(big.Int)
	if e >= q {
		n.Lsh(m, uint(e-q)) // a multiple of the quantum already
	} else {
		shift := uint(q - e)
		n.Rsh(m, shift)
		rem := new(big.Int).Sub(m, new(big.Int).Lsh(n, shift))
		half := new(big.Int).Lsh(big.NewInt(1), shift-1)
		if c := rem.Cmp(half); c > 0 || c == 0 && n.Bit(0) == 1 {
			n.Add(n, big.NewInt(1))
		}
	}
	// n·2^q is the rounded value: exact in a float64, since n has at most
	// manBits+2 bits, unless x is near MaxFloat64 and it overflows even
	// float64 (then Float64 says +Inf). Either way it is beyond f's range
	// when it reaches 2^(emax+1).
	r, acc := new(big.Float).SetMantExp(new(big.Float).SetInt(n), q).Float64()
	if acc != big.Exact && !math.IsInf(r, 1) {
		panic("reference result not exact")
	}
	if r >= math.Ldexp(1, f.Emax()+1) {
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

// NaNFromFloat64 is the NaN that converting the float64 NaN with bits b to
// Format f must give: the sign, all exponent bits, and the top manBits bits
// of the payload with the top one (the quiet bit) set.
func (f Format) NaNFromFloat64(b uint64) uint16 {
	sign := uint16(b>>63) << (f.ManBits + f.ExpBits)
	exp := uint16(1<<f.ExpBits-1) << f.ManBits
	payload := uint16(b>>(52-f.ManBits)) & (1<<f.ManBits - 1)
	return sign | exp | payload | 1<<(f.ManBits-1)
}

// ForEachRoundingInput64 calls check with the float64 inputs where
// rounding to f is decided, with both signs: every finite value of f, the
// midpoint between it and the next one up (the tie; the step past the
// largest finite value is to 2^(emax+1), the overflow threshold) and the
// float64s one and two units either side of each midpoint, which a
// conversion that rounds twice (through float32) gets wrong; then edge
// cases and 2^18 random float64s, half with uniformly random bits and half
// within and around f's range.
func ForEachRoundingInput64(t *testing.T, f Format, check func(float64)) {
	both := func(x float64) {
		check(x)
		check(-x)
	}
	f.EachStep(func(lo, hi float64) {
		mid := (lo + hi) / 2 // exact: one more bit than the format has
		both(lo)
		both(mid)
		down, up := math.Nextafter(mid, 0), math.Nextafter(mid, math.Inf(1))
		both(down)
		both(up)
		both(math.Nextafter(down, 0))
		both(math.Nextafter(up, math.Inf(1)))
	})
	for _, x := range []float64{
		0, math.Inf(1), math.MaxFloat64, math.SmallestNonzeroFloat64, 0x1p-1022, math.Nextafter(0x1p-1022, 0),
		math.MaxFloat32, math.Nextafter(math.MaxFloat32, math.Inf(1)), 0x1p128, 0x1p-149, 0x1p-150, 0x1p-151,
		math.Nextafter(0x1p-150, 1), 0x1p-126, math.Nextafter(0x1p-126, 0), 1e-50, 1e-300, 1e300,
		0x1p-133, 0x1p-134, math.Nextafter(0x1p-134, 1), math.Nextafter(0x1p-134, 0), 0x1p-135,
		0x1p-24, 0x1p-25, math.Nextafter(0x1p-25, 1), 0x1p-26, 0x1p-14, math.Nextafter(0x1p-14, 0),
		65504, 65519, 65519.999, 65520, math.Nextafter(65520, 0), 65536,
		0x1.fep127, 0x1.ffp127, math.Nextafter(0x1.ffp127, 0), 0x1p128,
	} {
		both(x)
	}
	for _, b := range []uint64{
		0x7ff8000000000000, 0x7ff0000000000001, 0x7ff4000000000000, 0x7fffffffffffffff,
		0x7ff0200000000000, 0x7ff0040000000000, 0x7ff00000000fffff,
	} {
		both(math.Float64frombits(b))
	}
	r := NewRand(t)
	for range 1 << 17 {
		check(math.Float64frombits(r.Uint64()))
		// A random mantissa at an exponent from just below the smallest
		// subnormal of f to just above its overflow.
		e := f.Emin() - f.ManBits - 3 + r.IntN(f.Emax()-f.Emin()+f.ManBits+6)
		both(math.Ldexp(1+r.Float64(), e))
	}
}
