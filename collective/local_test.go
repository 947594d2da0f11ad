package collective

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
)

func TestReduceLocal(t *testing.T) {
	// dst is the left operand: digits concatenate in rank order.
	concat := codec.NewOp("concat", func(dst, src []int64) {
		for i := range dst {
			dst[i] = dst[i]*10 + src[i]
		}
	}, false)
	t.Run("float32 sum", func(t *testing.T) {
		dst, src := []float32{1, 2, 3.5}, []float32{10, 20, -3.5}
		require.NoError(t, ReduceLocal(dst, src, codec.Sum))
		require.Equal(t, []float32{11, 22, 0}, dst)
		require.Equal(t, []float32{10, 20, -3.5}, src, "src is unchanged")
	})
	t.Run("int32 max", func(t *testing.T) {
		dst := []int32{1, 5, -7}
		require.NoError(t, ReduceLocal(dst, []int32{4, 2, -8}, codec.Max))
		require.Equal(t, []int32{4, 5, -7}, dst)
	})
	t.Run("non-commutative user op", func(t *testing.T) {
		dst := []int64{1, 2}
		require.NoError(t, ReduceLocal(dst, []int64{3, 4}, concat))
		require.Equal(t, []int64{13, 24}, dst)
	})
	t.Run("same slice", func(t *testing.T) {
		s := []float64{1.5, -2}
		require.NoError(t, ReduceLocal(s, s, codec.Sum))
		require.Equal(t, []float64{3, -4}, s)
	})
	t.Run("empty", func(t *testing.T) {
		require.NoError(t, ReduceLocal([]uint8{}, nil, codec.Sum))
	})
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"lengths differ", func() error { return ReduceLocal([]float32{1, 2}, []float32{1}, codec.Sum) }, "2"},
		{"bitwise op on floats", func() error { return ReduceLocal([]float32{1}, []float32{1}, codec.And) }, "op and is not defined for float32"},
		{"user op of another type", func() error { return ReduceLocal([]int32{1}, []int32{1}, concat) }, `user op "concat" reduces int64, not int32`},
		{"no op", func() error { return ReduceLocal([]int32{1}, []int32{1}, codec.Op{}) }, "without an op"},
		{"avg", func() error { return ReduceLocal([]float32{1}, []float32{1}, codec.Avg) }, "use sum and divide"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, codec.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestReduceLocalAllocatesNothing(t *testing.T) {
	dst, src := make([]float32, 1000), make([]float32, 1000)
	allocs := testing.AllocsPerRun(100, func() {
		if err := ReduceLocal(dst, src, codec.Sum); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
