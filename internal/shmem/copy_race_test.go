//go:build race

package shmem

import (
	"testing"

	"github.com/gocoll/gocoll/internal/race/racetest"
)

// TestCopyRaceReports: a slice that Go code touches while Copy's string
// moves use it, unsynchronised, is a race the detector reports, naming
// copyMoves, which reports the moves' accesses; the same accesses in
// order are not.
func TestCopyRaceReports(t *testing.T) {
	if !copyMoves(make([]byte, 1), make([]byte, 1)) {
		t.Skip("no string moves here: Copy uses copy, which the detector sees")
	}
	const n = 64 << 10
	racetest.Run(t, []racetest.Case{
		{
			Name:  "src",
			Frame: "shmem.copyMoves",
			Prepare: func(*testing.T) (touch, hidden func()) {
				dst, src := make([]byte, n), make([]byte, n)
				return func() { src[n/2] = 1 }, func() { Copy(dst, src) }
			},
		},
		{
			Name:  "dst",
			Frame: "shmem.copyMoves",
			Prepare: func(*testing.T) (touch, hidden func()) {
				dst, src := make([]byte, n), make([]byte, n)
				return func() { dst[n/2] = 1 }, func() { Copy(dst, src) }
			},
		},
	})
}
