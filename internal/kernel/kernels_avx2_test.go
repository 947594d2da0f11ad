//go:build amd64 && gc && !purego && !noasm && !race

package kernel

import (
	"testing"

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

// TestCopyAroundAsm: CopyAround goes around the caches in this build
// whenever the CPU has AVX2.
func TestCopyAroundAsm(t *testing.T) {
	require.Equal(t, useAVX2, copyAroundAsm(make([]byte, 4096), make([]byte, 4096)))
}
