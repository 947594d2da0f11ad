//go:build amd64 && gc && !purego && !noasm

package shmem

import (
	"fmt"
	"testing"
)

// TestShortDistance: the distances from the source's offset in a page to
// the destination's at which Copy leaves string moves out, 1 to 63
// bytes ahead, and not those around them.
func TestShortDistance(t *testing.T) {
	mem := make([]byte, 3*4096)
	for _, c := range []struct {
		src, dst int
		short    bool
	}{
		{0, 0, false},
		{0, 4096, false},
		{0, 1, true},
		{0, 16, true},
		{100, 163, true},
		{0, 4096 + 63, true},
		{4090, 4096 + 4, true},
		{0, 64, false},
		{0, 2048, false},
		{16, 0, false},
		{64, 4096 + 8, false},
	} {
		t.Run(fmt.Sprintf("%d-%d", c.src, c.dst), func(t *testing.T) {
			if got := shortDistance(mem[c.dst:c.dst+1], mem[c.src:c.src+1]); got != c.short {
				t.Errorf("shortDistance(dst at %d, src at %d) = %v, want %v", c.dst, c.src, got, c.short)
			}
		})
	}
}
