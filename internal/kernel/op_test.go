package kernel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/elemtest"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/stretchr/testify/require"
)

var allOps = []codec.Op{codec.Sum, codec.Prod, codec.Min, codec.Max, codec.Avg, codec.And, codec.Or, codec.Xor}

func TestReduce(t *testing.T) {
	elemtest.ForEachType(t, []elemtest.Typed{
		{Name: "int8", Run: testReduce[int8]},
		{Name: "int16", Run: testReduce[int16]},
		{Name: "int32", Run: testReduce[int32]},
		{Name: "int64", Run: testReduce[int64]},
		{Name: "uint8", Run: testReduce[uint8]},
		{Name: "uint16", Run: testReduce[uint16]},
		{Name: "uint32", Run: testReduce[uint32]},
		{Name: "uint64", Run: testReduce[uint64]},
		{Name: "float32", Run: testReduce[float32]},
		{Name: "float64", Run: testReduce[float64]},
		{Name: "bf16", Run: testReduce[codec.BFloat16]},
		{Name: "fp16", Run: testReduce[codec.Float16]},
	})
}

// specials are the values where ops are most often wrong: for floats the
// zeros, infinities, NaNs with different signs and payloads, the largest
// finite and the smallest subnormal value; for integers zero, one, all
// ones and the extremes.
func specials[T codec.Elem]() []T {
	var bits []uint64
	switch DTypeOf[T]() {
	case Float32:
		bits = []uint64{0, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000, 0x7fc00001, 0xffc00002, 0x7f7fffff, 1}
	case Float64:
		bits = []uint64{0, 1 << 63, 0x3ff0000000000000, 0xbff0000000000000, 0x7ff0000000000000, 0xfff0000000000000,
			0x7ff8000000000001, 0xfff8000000000002, 0x7fefffffffffffff, 1}
	case BFloat16:
		bits = []uint64{0, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc1, 0xffc2, 0x7f7f, 1}
	case Float16:
		bits = []uint64{0, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e01, 0xfe02, 0x7bff, 1}
	default:
		w := uint(DTypeOf[T]().Size() * 8)
		bits = []uint64{0, 1, math.MaxUint64, 1 << (w - 1), 1<<(w-1) - 1, 2, 3}
	}
	s := make([]T, len(bits))
	for i, b := range bits {
		s[i] = elemtest.FromBits[T](b)
	}
	return s
}

// reduceInputs returns operands: every pair of specials, then random bit
// patterns, then small values (random floats are mostly huge or tiny, and
// products of random integers mostly wrap to zero bits). The length is odd
// so that unrolled loops run their tails.
func reduceInputs[T codec.Elem](r *rand.Rand) (dst, src []T) {
	sp := specials[T]()
	for _, a := range sp {
		for _, b := range sp {
			dst, src = append(dst, a), append(src, b)
		}
	}
	dst, src = append(dst, elemtest.RandElems[T](r, 67)...), append(src, elemtest.RandElems[T](r, 67)...)
	for range 67 {
		dst, src = append(dst, small[T](r)), append(src, small[T](r))
	}
	return dst, src
}

// small returns a random value that every type holds exactly: a multiple
// of 1/4 in [-8, 8) for floats, an integer in [-128, 128) for integers
// (wrapped for unsigned ones).
func small[T codec.Elem](r *rand.Rand) T {
	x := float32(r.IntN(64)-32) / 4
	switch DTypeOf[T]() {
	case BFloat16:
		return any(codec.BFloat16FromFloat32(x)).(T)
	case Float16:
		return any(codec.Float16FromFloat32(x)).(T)
	case Float32, Float64:
		return T(x)
	}
	return T(int64(x * 4))
}

// refOp is the reference for a ∘ b, a being the left operand, written out
// plainly: integers in 64 bits and truncated (which is two's complement
// wrapping), floats in float64 rounded once to the type, half precision as
// the package defines it (in float32, rounded to the type).
func refOp[T codec.Elem](id ops.ID, a, b T) T {
	dt := DTypeOf[T]()
	if !dt.IsFloat() {
		switch dt {
		case Uint8, Uint16, Uint32, Uint64:
			return T(refInt(id, uint64(a), uint64(b)))
		}
		return T(refInt(id, int64(a), int64(b)))
	}
	x, y := refValue(a), refValue(b)
	switch id {
	case ops.Min, ops.Max:
		return refPick(id, a, b, x, y)
	case ops.Sum, ops.Avg:
		return refRound[T](x + y)
	case ops.Prod:
		return refRound[T](x * y)
	}
	panic("no reference for " + id.String())
}

func refInt[I int64 | uint64](id ops.ID, a, b I) I {
	switch id {
	case ops.Sum, ops.Avg:
		return a + b
	case ops.Prod:
		return a * b
	case ops.Min:
		if b < a {
			return b
		}
		return a
	case ops.Max:
		if b > a {
			return b
		}
		return a
	case ops.And:
		return a & b
	case ops.Or:
		return a | b
	case ops.Xor:
		return a ^ b
	}
	panic("no reference for " + id.String())
}

// refValue is a float's value, decoded for half precision by the
// reference decoder of half_test.go.
func refValue[T codec.Elem](v T) float64 {
	switch x := any(v).(type) {
	case codec.BFloat16:
		return elemtest.BF16Format.Decode(uint16(x))
	case codec.Float16:
		return elemtest.FP16Format.Decode(uint16(x))
	}
	return float64(v)
}

// refRound rounds x to T: float32 and the half types round to float32
// first (for a single sum, product or quotient of float32s, rounding the
// exact float64 result to float32 is the correctly rounded float32
// operation, since 53 >= 2*24+2), then the half types round again.
func refRound[T codec.Elem](x float64) T {
	f := float32(x)
	var v any
	switch DTypeOf[T]() {
	case BFloat16:
		v = codec.BFloat16FromFloat32(float32(elemtest.BF16Format.Round(float64(f)))) // exact: already a bf16 value
	case Float16:
		v = codec.Float16FromFloat32(float32(elemtest.FP16Format.Round(float64(f))))
	case Float32:
		v = f
	default:
		return T(x)
	}
	return v.(T)
}

// refPick is codec.Min and codec.Max on floats as documented: the left NaN, else the
// right NaN, else the smaller (larger) value, with -0 < +0.
func refPick[T codec.Elem](id ops.ID, a, b T, x, y float64) T {
	switch {
	case math.IsNaN(x):
		return a
	case math.IsNaN(y):
		return b
	case x == y && x == 0:
		if math.Signbit(x) == (id == ops.Min) {
			return a
		}
		return b
	case x == y:
		return a
	case (x < y) == (id == ops.Min):
		return a
	}
	return b
}

// requireReduced compares results bit for bit, except that where the
// reference is a NaN made by arithmetic any NaN will do: Go does not
// define which operand's payload + and * keep.
func requireReduced[T codec.Elem](t *testing.T, op codec.Op, want, got []T) {
	t.Helper()
	require.Len(t, got, len(want))
	anyNaN := ID(op) == ops.Sum || ID(op) == ops.Prod || ID(op) == ops.Avg
	for i := range want {
		if anyNaN && elemtest.IsNaN(want[i]) && elemtest.IsNaN(got[i]) {
			continue
		}
		if elemtest.ToBits(want[i]) != elemtest.ToBits(got[i]) {
			t.Fatalf("element %d: got %v (%#x), want %v (%#x)", i, got[i], elemtest.ToBits(got[i]), want[i], elemtest.ToBits(want[i]))
		}
	}
}

func testReduce[T codec.Elem](t *testing.T) {
	dt := DTypeOf[T]()
	dst0, src0 := reduceInputs[T](elemtest.NewRand(t))
	for _, op := range allOps {
		t.Run(op.String(), func(t *testing.T) {
			dst := slices.Clone(dst0)
			src := slices.Clone(src0)
			if ID(op).Bitwise() && dt.IsFloat() {
				err := Reduce(op, dst, src)
				require.ErrorIs(t, err, codec.ErrInvalid)
				require.EqualError(t, err, "invalid input: op "+op.String()+" is not defined for "+dt.String())
				require.ErrorIs(t, ReduceLeft(op, src, dst, nil), codec.ErrInvalid)
				elemtest.RequireSameBits(t, dst0, dst)
				return
			}

			want := make([]T, len(dst0))
			for i := range want {
				want[i] = refOp(ID(op), dst0[i], src0[i])
			}
			require.NoError(t, Reduce(op, dst, src))
			requireReduced(t, op, want, dst)
			elemtest.RequireSameBits(t, src0, src)

			// ReduceLeft makes src the left operand.
			for i := range want {
				want[i] = refOp(ID(op), src0[i], dst0[i])
			}
			dst = slices.Clone(dst0)
			require.NoError(t, ReduceLeft(op, src, dst, nil))
			requireReduced(t, op, want, dst)
			elemtest.RequireSameBits(t, src0, src)

			// dst and src may be the same slice.
			for i := range want {
				want[i] = refOp(ID(op), dst0[i], dst0[i])
			}
			dst = slices.Clone(dst0)
			require.NoError(t, Reduce(op, dst, dst))
			requireReduced(t, op, want, dst)

			require.Zero(t, testing.AllocsPerRun(20, func() {
				_ = Reduce(op, dst, src)
				_ = ReduceLeft(op, src, dst, nil)
				Finish(op, dst, 3)
			}), "reducing allocates")
		})
	}
}

// TestReduceLengths runs every length up to a few unrolled blocks, so that
// each tail length of the unrolled loops is checked.
func TestReduceLengths(t *testing.T) {
	r := elemtest.NewRand(t)
	for n := range 40 {
		a32, b32 := make([]float32, n), make([]float32, n)
		a64, b64 := make([]float64, n), make([]float64, n)
		for i := range n {
			a32[i], b32[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			a64[i], b64[i] = r.NormFloat64(), r.NormFloat64()
		}
		for _, op := range []codec.Op{codec.Sum, codec.Prod} {
			want32, want64 := make([]float32, n), make([]float64, n)
			for i := range n {
				want32[i] = refOp(ID(op), a32[i], b32[i])
				want64[i] = refOp(ID(op), a64[i], b64[i])
			}
			got32, got64 := slices.Clone(a32), slices.Clone(a64)
			require.NoError(t, Reduce(op, got32, b32))
			require.NoError(t, Reduce(op, got64, b64))
			require.Equal(t, want32, got32, "%s of %d float32s", op, n)
			require.Equal(t, want64, got64, "%s of %d float64s", op, n)
		}
	}
}

func TestReduceErrors(t *testing.T) {
	affine := codec.NewOp("affine", func(dst, src []int64) {
		for i := range dst {
			dst[i] = 2*dst[i] + src[i]
		}
	}, false)
	tests := []struct {
		name string
		call func(dst []float32) error
		want string
	}{
		{"dst longer", func(dst []float32) error { return Reduce(codec.Sum, dst, make([]float32, 3)) },
			"invalid input: sum: dst has 4 elements, src has 3"},
		{"src longer", func(dst []float32) error { return Reduce(codec.Max, dst, make([]float32, 5)) },
			"invalid input: max: dst has 4 elements, src has 5"},
		{"left lengths", func(dst []float32) error { return ReduceLeft(codec.Min, make([]float32, 0), dst, nil) },
			"invalid input: min: dst has 4 elements, src has 0"},
		{"zero op", func(dst []float32) error { return Reduce(codec.Op{}, dst, make([]float32, 4)) },
			"invalid input: reduction of float32 without an op"},
		{"zero op left", func(dst []float32) error { return ReduceLeft(codec.Op{}, make([]float32, 4), dst, nil) },
			"invalid input: reduction of float32 without an op"},
		{"bitwise on float", func(dst []float32) error { return Reduce(codec.And, dst, make([]float32, 4)) },
			"invalid input: op and is not defined for float32"},
		{"user op of another type", func(dst []float32) error { return Reduce(affine, dst, make([]float32, 4)) },
			`invalid input: user op "affine" reduces int64, not float32`},
		{"user op of another type left", func(dst []float32) error { return ReduceLeft(affine, make([]float32, 4), dst, nil) },
			`invalid input: user op "affine" reduces int64, not float32`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []float32{1, 2, 3, 4}
			err := tc.call(dst)
			require.ErrorIs(t, err, codec.ErrInvalid)
			require.EqualError(t, err, tc.want)
			require.Equal(t, []float32{1, 2, 3, 4}, dst, "a failed reduction changed dst")
		})
	}

	t.Run("scratch too short", func(t *testing.T) {
		dst := []int64{1, 2, 3, 4}
		err := ReduceLeft(affine, make([]int64, 4), dst, make([]int64, 2))
		require.ErrorIs(t, err, codec.ErrInvalid)
		require.EqualError(t, err, "invalid input: affine: dst has 4 elements, scratch has 2")
		require.Equal(t, []int64{1, 2, 3, 4}, dst)
	})
}

func TestCheck(t *testing.T) {
	user := codec.NewOp("first", func(dst, src []uint16) {}, true)
	for _, op := range append(slices.Clone(allOps), user) {
		for dt := DType(1); dt < numDTypes; dt++ {
			err := Check(op, dt)
			switch {
			case op == user && dt != Uint16:
				require.ErrorIs(t, err, codec.ErrInvalid, "%s on %s", op, dt)
				require.ErrorContains(t, err, dt.String())
				require.ErrorContains(t, err, "uint16")
			case ID(op).Bitwise() && dt.IsFloat():
				require.ErrorIs(t, err, codec.ErrInvalid, "%s on %s", op, dt)
				require.ErrorContains(t, err, op.String())
				require.ErrorContains(t, err, dt.String())
			default:
				require.NoError(t, err, "%s on %s", op, dt)
			}
		}
		require.ErrorIs(t, Check(op, 0), codec.ErrInvalid)
		require.ErrorIs(t, Check(op, numDTypes), codec.ErrInvalid)
	}
	require.ErrorIs(t, Check(codec.Op{}, Float32), codec.ErrInvalid)
}

func TestOpIdentity(t *testing.T) {
	tests := []struct {
		op          codec.Op
		id          ops.ID
		name        string
		commutative bool
	}{
		{codec.Sum, ops.Sum, "sum", true},
		{codec.Prod, ops.Prod, "prod", true},
		{codec.Min, ops.Min, "min", true},
		{codec.Max, ops.Max, "max", true},
		{codec.Avg, ops.Avg, "avg", true},
		{codec.And, ops.And, "and", true},
		{codec.Or, ops.Or, "or", true},
		{codec.Xor, ops.Xor, "xor", true},
		{codec.Op{}, ops.None, "none", false},
		{codec.NewOp("matmul", func(dst, src []float64) {}, false), ops.User, "matmul", false},
		{codec.NewOp("gcd", func(dst, src []uint32) {}, true), ops.User, "gcd", true},
		{codec.NewOp("", func(dst, src []uint32) {}, true), ops.User, "user", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.id, ID(tc.op))
			require.Equal(t, tc.name, tc.op.String())
			require.Equal(t, tc.commutative, tc.op.Commutative())
		})
	}

	// Ops compare with == without panicking, and a user op equals only
	// itself, even against another op made from the same function.
	f := func(dst, src []int32) {}
	a, b := codec.NewOp("f", f, true), codec.NewOp("f", f, true)
	same := a
	require.True(t, a == same)
	require.False(t, a == b)
	require.False(t, a == codec.Sum)
	sum := codec.Sum
	require.True(t, sum == codec.Sum)

	// An op without a function is refused where it is used, not by a
	// panic where it is made.
	none := codec.NewOp[int8]("nil", nil, true)
	require.ErrorIs(t, Check(none, Int8), codec.ErrInvalid)
	require.ErrorContains(t, Check(none, Int8), `user op "nil" has no function`)
	dst := []int8{1, 2}
	require.ErrorIs(t, Reduce(none, dst, []int8{3, 4}), codec.ErrInvalid)
	require.ErrorIs(t, ReduceLeft(none, []int8{3, 4}, dst, nil), codec.ErrInvalid)
	require.Equal(t, []int8{1, 2}, dst)
}

// TestUserOpOrder checks that user ops see their operands in rank order:
// Reduce makes dst the left operand and ReduceLeft makes src the left one.
func TestUserOpOrder(t *testing.T) {
	calls := 0
	affine := codec.NewOp("affine", func(dst, src []int64) {
		calls++
		src = src[:len(dst)]
		for i := range dst {
			dst[i] = 2*dst[i] + src[i]
		}
	}, false)

	dst, src := []int64{1, 10, -3}, []int64{5, 7, 100}
	require.NoError(t, Reduce(affine, dst, src))
	require.Equal(t, []int64{2*1 + 5, 2*10 + 7, 2*-3 + 100}, dst)

	dst = []int64{1, 10, -3}
	scratch := make([]int64, 8) // longer than needed is fine
	require.NoError(t, ReduceLeft(affine, src, dst, scratch))
	require.Equal(t, []int64{2*5 + 1, 2*7 + 10, 2*100 - 3}, dst)
	require.Equal(t, []int64{5, 7, 100}, src, "ReduceLeft changed src")

	require.Zero(t, testing.AllocsPerRun(20, func() {
		_ = Reduce(affine, dst, src)
		_ = ReduceLeft(affine, src, dst, scratch)
	}))
	require.Positive(t, calls)

	// Empty slices are reduced without calling the op.
	calls = 0
	require.NoError(t, Reduce(affine, []int64{}, nil))
	require.NoError(t, ReduceLeft(affine, nil, []int64{}, nil))
	require.Zero(t, calls)

	// A commutative user op needs no scratch: ReduceLeft calls it as is.
	add := codec.NewOp("add", func(dst, src []int64) {
		for i := range dst {
			dst[i] += src[i]
		}
	}, true)
	dst = []int64{1, 2, 3}
	require.NoError(t, ReduceLeft(add, []int64{10, 20, 30}, dst, nil))
	require.Equal(t, []int64{11, 22, 33}, dst)
}

// TestUserOpMatrixProduct reduces 2×2 integer matrices, packed as float64
// quadruples, with the matrix product: associative, not commutative, and
// exact in float64. Grouping the ranks in different ways with Reduce and
// ReduceLeft must give the rank-order product r0·r1·r2·r3, and the
// reversed order must not.
func TestUserOpMatrixProduct(t *testing.T) {
	matmul := codec.NewOp("matmul", func(dst, src []float64) {
		for i := 0; i+4 <= len(dst); i += 4 {
			a, b := dst[i:i+4:i+4], src[i:i+4:i+4]
			a[0], a[1], a[2], a[3] = a[0]*b[0]+a[1]*b[2], a[0]*b[1]+a[1]*b[3], a[2]*b[0]+a[3]*b[2], a[2]*b[1]+a[3]*b[3]
		}
	}, false)
	ranks := [][]float64{
		{1, 2, 3, 4, 0, 1, 1, 0},
		{2, 0, 1, 1, 1, 1, 0, 1},
		{0, 1, 5, 2, 3, 0, 0, 2},
		{1, 1, 0, 3, 1, 4, 2, 1},
	}
	rank := func(i int) []float64 { return slices.Clone(ranks[i]) }
	scratch := make([]float64, 8)

	// Left to right, as a chain passes the partial product up the ranks.
	chain := rank(0)
	for i := 1; i < 4; i++ {
		require.NoError(t, Reduce(matmul, chain, ranks[i]))
	}

	// Right to left, each rank folding its own matrix in on the left.
	fold := rank(3)
	for i := 2; i >= 0; i-- {
		require.NoError(t, ReduceLeft(matmul, ranks[i], fold, scratch))
	}
	require.Equal(t, chain, fold)

	// Pairs, as recursive doubling groups them: (r0·r1)·(r2·r3), where
	// the right pair is built by its higher rank.
	left, right := rank(0), rank(3)
	require.NoError(t, Reduce(matmul, left, ranks[1]))
	require.NoError(t, ReduceLeft(matmul, ranks[2], right, scratch))
	require.NoError(t, Reduce(matmul, left, right))
	require.Equal(t, chain, left)

	reversed := rank(3)
	for i := 2; i >= 0; i-- {
		require.NoError(t, Reduce(matmul, reversed, ranks[i]))
	}
	require.NotEqual(t, chain, reversed, "the test op is commutative on this data, so it proves nothing")
}

func TestFinish(t *testing.T) {
	elemtest.ForEachType(t, []elemtest.Typed{
		{Name: "int8", Run: testFinish[int8]},
		{Name: "int16", Run: testFinish[int16]},
		{Name: "int32", Run: testFinish[int32]},
		{Name: "int64", Run: testFinish[int64]},
		{Name: "uint8", Run: testFinish[uint8]},
		{Name: "uint16", Run: testFinish[uint16]},
		{Name: "uint32", Run: testFinish[uint32]},
		{Name: "uint64", Run: testFinish[uint64]},
		{Name: "float32", Run: testFinish[float32]},
		{Name: "float64", Run: testFinish[float64]},
		{Name: "bf16", Run: testFinish[codec.BFloat16]},
		{Name: "fp16", Run: testFinish[codec.Float16]},
	})
}

// refAvg is x/n: integers truncate toward zero, floats round once (half
// precision after float32, as the package defines it).
func refAvg[T codec.Elem](x T, n int) T {
	switch DTypeOf[T]() {
	case Int8, Int16, Int32, Int64:
		return T(int64(x) / int64(n))
	case Uint8, Uint16, Uint32, Uint64:
		return T(uint64(x) / uint64(n))
	}
	return refRound[T](refValue(x) / float64(n))
}

func testFinish[T codec.Elem](t *testing.T) {
	r := elemtest.NewRand(t)
	in, _ := reduceInputs[T](r)
	for _, n := range []int{1, 2, 3, 7, 127, 128, 200, 1000, 1 << 20} {
		want := make([]T, len(in))
		for i := range want {
			want[i] = refAvg(in[i], n)
		}
		got := slices.Clone(in)
		Finish(codec.Avg, got, n)
		requireReduced(t, codec.Avg, want, got)
	}
	for _, op := range []codec.Op{codec.Sum, codec.Prod, codec.Min, codec.Max, codec.NewOp("user", func(dst, src []T) {}, true)} {
		got := slices.Clone(in)
		Finish(op, got, 5)
		elemtest.RequireSameBits(t, in, got)
	}
	if !DTypeOf[T]().IsFloat() {
		for _, op := range []codec.Op{codec.And, codec.Or, codec.Xor} {
			got := slices.Clone(in)
			Finish(op, got, 5)
			elemtest.RequireSameBits(t, in, got)
		}
	}
	require.Panics(t, func() { Finish(codec.Avg, in, 0) })
	require.Panics(t, func() { Finish(codec.Avg, in, -2) })
	require.NotPanics(t, func() { Finish(codec.Sum, in, 0) }, "n only matters for avg")
}

func TestFinishIntegers(t *testing.T) {
	// Cases where a divisor that does not fit the type, or truncation of
	// negative values, would go wrong.
	i8 := []int8{-7, 7, -128, 127, -1}
	Finish(codec.Avg, i8, 2)
	require.Equal(t, []int8{-3, 3, -64, 63, 0}, i8)

	i8 = []int8{-128, 127, -100}
	Finish(codec.Avg, i8, 128) // int8(128) would be -128
	require.Equal(t, []int8{-1, 0, 0}, i8)

	u8 := []uint8{255, 200}
	Finish(codec.Avg, u8, 256) // uint8(256) would be 0
	require.Equal(t, []uint8{0, 0}, u8)

	u64 := []uint64{math.MaxUint64, 10}
	Finish(codec.Avg, u64, 3)
	require.Equal(t, []uint64{math.MaxUint64 / 3, 3}, u64)

	i64 := []int64{math.MinInt64, -10}
	Finish(codec.Avg, i64, 3)
	require.Equal(t, []int64{math.MinInt64 / 3, -3}, i64)
}
