package half

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFloat64Thresholds checks the bit patterns of half.go against the
// values they stand for.
func TestFloat64Thresholds(t *testing.T) {
	require.Equal(t, math.Float64bits(0x1.ffp127), uint64(F64BF16Overflow))
	require.Equal(t, math.Float64bits(65520), uint64(F64HalfOverflow))
	require.Equal(t, math.Float64bits(0x1p-126), uint64(F64BF16MinNormal))
	require.Equal(t, math.Float64bits(0x1p-14), uint64(F64HalfMinNormal))
	require.Equal(t, math.Float64bits(f64BF16Tiny), uint64(f64BF16TinyBits))
	require.Equal(t, math.Float64bits(f64HalfTiny), uint64(f64HalfTinyBits))
	require.Equal(t, math.Float32bits(65520), uint32(F32HalfOverflow))
	require.Equal(t, math.Float32bits(0x1p-14), uint32(F32HalfMinNormal))
}
