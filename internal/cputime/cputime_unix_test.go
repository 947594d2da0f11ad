//go:build unix

package cputime

import "testing"

// TestProcessCounts: work shows in the process's CPU time.
func TestProcessCounts(t *testing.T) {
	before := Process()
	x := uint64(1)
	for range 1 << 22 {
		x = x*6364136223846793005 + 1442695040888963407
	}
	after := Process()
	if after <= before {
		t.Errorf("CPU time went from %v to %v over %d multiplications (x=%d)", before, after, 1<<22, x)
	}
}
