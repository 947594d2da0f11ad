//go:build amd64 && gc && !purego && !noasm

package shmem

import (
	"fmt"
	"testing"
)

// TestShortDistance: the distances from the source's offset in a page to
// the destination's that Copy and VM keep from string moves, 1 to 63
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
			want := c.short && fastStrings // without string moves, no distance is short
			if got := shortDistance(addrOf(mem[c.dst:]), addrOf(mem[c.src:])); got != want {
				t.Errorf("shortDistance(dst at %d, src at %d) = %v, want %v", c.dst, c.src, got, want)
			}
		})
	}
}
