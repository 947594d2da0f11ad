//go:build amd64 && gc && !purego && !noasm

package kernel

import (
	"testing"
	"unsafe"

	"github.com/gocoll/gocoll/codec"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"
)

// TestAsmSwitch makes sure that the other kernel tests exercise the
// assembly in this build whenever the CPU has AVX2, rather than comparing
// the Go loops with themselves.
func TestAsmSwitch(t *testing.T) {
	require.Equal(t, cpu.X86.HasAVX2, useAVX2)
	for _, tc := range []struct {
		name string
		has  bool
	}{
		{"sum/float32", sumAsm[float32](nil, nil)},
		{"sum/float64", sumAsm[float64](nil, nil)},
		{"sum/int32", sumAsm[int32](nil, nil)},
		{"sum/int64", sumAsm[int64](nil, nil)},
		{"prod/float32", prodAsm[float32](nil, nil)},
		{"prod/float64", prodAsm[float64](nil, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, useAVX2, tc.has) })
	}
	require.False(t, sumAsm[uint32](nil, nil), "a kernel for a type without one")

	require.Equal(t, cpu.X86.HasAVX2 && cpu.X86.HasF16C, useF16C)
	want := 0
	if useF16C {
		want = 16
	}
	require.Equal(t, want, encodeFP16Asm(make([]uint16, 17), make([]uint32, 17)), "binary16 encoding kernel")
	require.Equal(t, want, decodeFP16Asm(make([]uint32, 17), make([]uint16, 17)), "binary16 decoding kernel")
}

// TestBF16AsmSwitch: the bfloat16 kernels run in 512-bit registers
// whenever the CPU has AVX-512, 32 elements at a time, and in 256-bit ones
// otherwise, 16 at a time. Of 48 elements the first convert 32, the
// second all 48. (With 33 both convert 32, which is how this test once
// expected 16 of AVX2 and passed only on CPUs with AVX-512.)
func TestBF16AsmSwitch(t *testing.T) {
	require.Equal(t, cpu.X86.HasAVX512F, useAVX512)
	const n = 48
	want := 0
	switch {
	case useAVX512:
		want = 32
	case useAVX2:
		want = 48
	}
	require.Equal(t, want, encodeBF16Asm(make([]uint16, n), make([]uint32, n)), "encoding kernel")
	require.Equal(t, want, encodeRoundBF16Asm(make([]uint16, n), make([]uint32, n)), "rounding encoding kernel")
	require.Equal(t, want, decodeBF16Asm(make([]uint32, n), make([]uint16, n)), "decoding kernel")
	for _, enc := range [][]byte{nil, make([]byte, 2*n)} {
		require.Equal(t, useAVX2, SumDecoded(codec.BF16, make([]float32, n), make([]float32, n), make([]byte, 2*n), enc), "fused bfloat16 sum, encoding %v", enc != nil)
		require.Equal(t, useF16C || useAVX512, SumDecoded(codec.FP16, make([]float32, n), make([]float32, n), make([]byte, 2*n), enc), "fused binary16 sum, encoding %v", enc != nil)
	}
}

// TestDecodeAroundAsm: DecodeAround's kernels run where the CPU has the
// decoding kernels they are twins of, from dst's first 64-byte boundary
// on, with as many elements as those would take; TestDecodeAround, which
// checks their results, runs them (and, in
// TestKernelsMatchScalarWithoutAVX512, the AVX2 one where there is
// AVX-512).
func TestDecodeAroundAsm(t *testing.T) {
	buf := make([]uint32, 16+48)
	for off := range 16 {
		dst := buf[off : off+48]
		lo := boundary64(dst)
		require.Zero(t, uintptr(unsafe.Pointer(&dst[lo]))%64, "offset %d", off)
		lo, hi := decodeBF16AroundAsm(dst, make([]uint16, 48))
		require.Equal(t, lo+decodeBF16Asm(dst[lo:], make([]uint16, 48-lo)), hi, "bfloat16, offset %d", off)
		lo, hi = decodeFP16AroundAsm(dst, make([]uint16, 48))
		require.Equal(t, lo+decodeFP16Asm(dst[lo:], make([]uint16, 48-lo)), hi, "binary16, offset %d", off)
		if useAVX2 {
			require.Less(t, lo, hi, "offset %d", off)
		}
	}
}

// TestKernelsMatchScalarWithoutAVX512 runs TestKernelsMatchScalar on the
// AVX2 kernels where the CPU would otherwise take the AVX-512 ones.
func TestKernelsMatchScalarWithoutAVX512(t *testing.T) {
	if !useAVX512 {
		t.Skip("the CPU has no AVX-512: TestKernelsMatchScalar runs the AVX2 kernels already")
	}
	useAVX512 = false
	defer func() { useAVX512 = true }()
	TestKernelsMatchScalar(t)
	TestDecodeAround(t)
}

// TestCopyAroundAsm: CopyAround goes around the caches in this build
// whenever the CPU has AVX2.
func TestCopyAroundAsm(t *testing.T) {
	require.Equal(t, useAVX2, copyAroundAsm(make([]byte, 4096), make([]byte, 4096)))
}
