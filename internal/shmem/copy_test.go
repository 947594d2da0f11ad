package shmem

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gocoll/gocoll/internal/testutil"
)

// TestCopy: lengths around copyMin and copyPiece, every alignment of dst
// to 16 bytes, the shorter of the two slices, and overlapping slices in
// both directions: the result is copy's, and nothing beyond dst changes.
func TestCopy(t *testing.T) {
	testutil.CheckCopies(t, Copy, []int{0, 1, copyMin - 1, copyMin, copyMin + 1, 65536 + 37, copyPiece, 3*copyPiece + 5, 1<<20 + 5}, []int{0, 1, 3, 15})
	pattern := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + 1)
		}
		return b
	}
	for _, shift := range []int{-100, 100} {
		t.Run(fmt.Sprintf("overlap%+d", shift), func(t *testing.T) {
			const n = 16 << 10
			mem, want := pattern(n+200), pattern(n+200)
			dst, src := mem[100+shift:100+shift+n], mem[100:100+n]
			copy(want[100+shift:100+shift+n], want[100:100+n])
			if got := Copy(dst, src); got != n {
				t.Fatalf("copied %d bytes, want %d", got, n)
			}
			if !bytes.Equal(mem, want) {
				t.Fatal("an overlapping copy differs from copy's")
			}
		})
	}
}

// BenchmarkCopy: Copy against copy within one process, where no other
// core holds the lines: what the string moves cost where they gain
// nothing. The destination begins at the source's offset in a page, or
// 16 bytes after it, the distance at which string moves are slow on
// AMD's Zen 3 and Zen 4 and Copy leaves the copy to copy
// (shortDistance).
func BenchmarkCopy(b *testing.B) {
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		for _, distance := range []int{0, 16} {
			// dst starts a whole number of pages after src in one
			// allocation, plus distance: the distance between their
			// offsets in a page.
			mem := make([]byte, 2*n+8192)
			src := mem[:n]
			dst := mem[n+4096-n%4096+distance:][:n]
			for _, way := range []struct {
				name string
				copy func(dst, src []byte) int
			}{{"Copy", Copy}, {"copy", func(dst, src []byte) int { return copy(dst, src) }}} {
				b.Run(fmt.Sprintf("%dKiB/distance%d/%s", n>>10, distance, way.name), func(b *testing.B) {
					b.SetBytes(int64(n))
					for b.Loop() {
						way.copy(dst, src)
					}
				})
			}
		}
	}
}
