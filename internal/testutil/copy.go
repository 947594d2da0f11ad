package testutil

import (
	"bytes"
	"fmt"
	"testing"
)

// CheckCopies checks copyFn, a copy with copy's contract, the way the
// tests of the project's copy routines need: for every length and every
// offset of dst into a fresh buffer, it copies length bytes,
// dst then equals src, and nothing beyond dst changes; and it copies the
// shorter of two slices, whichever that is.
func CheckCopies(t *testing.T, copyFn func(dst, src []byte) int, lengths, offsets []int) {
	t.Helper()
	for _, n := range lengths {
		for _, off := range offsets {
			t.Run(fmt.Sprintf("%dB/at%d", n, off), func(t *testing.T) {
				src := make([]byte, n)
				for i := range src {
					src[i] = byte(i*7 + 1)
				}
				mem := bytes.Repeat([]byte{0xee}, n+off+64)
				dst := mem[off : off+n]
				if got := copyFn(dst, src); got != n {
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
	t.Run("shorter", func(t *testing.T) {
		if got := copyFn(make([]byte, 8192), make([]byte, 5000)); got != 5000 {
			t.Fatalf("copied %d of 5000 bytes into 8192", got)
		}
		if got := copyFn(make([]byte, 5000), make([]byte, 8192)); got != 5000 {
			t.Fatalf("copied %d of 8192 bytes into 5000", got)
		}
	})
}
