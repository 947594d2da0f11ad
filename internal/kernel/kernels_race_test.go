//go:build race

package kernel

import (
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/race/racetest"
)

// sink keeps the plain reads of TestRaceReports from being dropped.
var sink float32

// TestRaceReports: a slice that Go code touches while an assembly
// kernel uses it, unsynchronised, is a race the detector reports, naming
// the function that reports the kernel's accesses; the same accesses in
// order are not. Each kernel here does all of the work on the element
// touched, so the detector would see nothing without the reports.
func TestRaceReports(t *testing.T) {
	if !sumAsm[float32](nil, nil) {
		t.Skip("the CPU has no AVX2: the Go loops run, which the detector sees")
	}
	const n = 1024
	racetest.Run(t, []racetest.Case{
		{
			Name:  "sum/float32",
			Frame: "kernel.kernelAVX2",
			Prepare: func(*testing.T) (touch, hidden func()) {
				dst, src := make([]float32, n), make([]float32, n)
				return func() { src[n/2] = 1 }, func() { Reduce(codec.Sum, dst, src) }
			},
		},
		{
			Name:  "encode/bf16",
			Frame: "kernel.inChunks",
			Prepare: func(*testing.T) (touch, hidden func()) {
				dst, src := make([]byte, 2*n), make([]float32, n)
				return func() { src[n/2] = 1 }, func() { Encode(codec.BF16, dst, src) }
			},
		},
		{
			Name:  "decode/bf16",
			Frame: "kernel.inChunks",
			Prepare: func(*testing.T) (touch, hidden func()) {
				dst, src := make([]float32, n), make([]byte, 2*n)
				return func() { sink = dst[n/2] }, func() { Decode(codec.BF16, dst, src) }
			},
		},
		{
			Name:  "sumdecoded/bf16",
			Frame: "kernel.sumDecodedAsm",
			Prepare: func(*testing.T) (touch, hidden func()) {
				dst, src, enc := make([]float32, n), make([]byte, 2*n), make([]byte, 2*n)
				return func() { sink = dst[n/2] }, func() { SumDecoded(codec.BF16, dst, dst, src, enc) }
			},
		},
		{
			Name:  "sumdecoded/fp16",
			Frame: "kernel.sumDecodedAsm",
			Prepare: func(*testing.T) (touch, hidden func()) {
				dst, src := make([]float32, n), make([]byte, 2*n)
				return func() { sink = dst[n/2] }, func() { SumDecoded(codec.FP16, dst, dst, src, nil) }
			},
		},
		{
			Name:  "copyaround",
			Frame: "kernel.copyAroundAsm",
			Prepare: func(*testing.T) (touch, hidden func()) {
				dst, src := make([]byte, 64<<10), make([]byte, 64<<10)
				return func() { src[32<<10] = 1 }, func() { CopyAround(dst, src) }
			},
		},
	})
}
