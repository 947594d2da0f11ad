package kernel

import (
	"bytes"
	"fmt"
	"testing"
)

// TestCopyAround: every length, around the 128-byte passes and the
// 4 KiB below which it copies through the caches, and every alignment of
// dst to 32 bytes: the copy is copy's, and nothing beyond dst changes.
func TestCopyAround(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 4095, 4096, 4097, 4096 + 127, 65536 + 37, 1<<20 + 5} {
		for _, off := range []int{0, 1, 3, 31} {
			t.Run(fmt.Sprintf("%dB/at%d", n, off), func(t *testing.T) {
				src := make([]byte, n)
				for i := range src {
					src[i] = byte(i*7 + 1)
				}
				mem := bytes.Repeat([]byte{0xee}, n+off+64)
				dst := mem[off : off+n]
				if got := CopyAround(dst, src); got != n {
					t.Fatalf("copied %d bytes, want %d", got, n)
				}
				if !bytes.Equal(dst, src) {
					t.Fatal("dst differs from src")
				}
				for i, b := range append(mem[:off:off], mem[off+n:]...) {
					if b != 0xee {
						t.Fatalf("byte %d outside dst changed", i)
					}
				}
			})
		}
	}
	// Shorter of the two, as copy.
	if got := CopyAround(make([]byte, 8192), make([]byte, 5000)); got != 5000 {
		t.Fatalf("copied %d of 5000 bytes into 8192", got)
	}
}
