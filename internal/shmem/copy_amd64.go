//go:build amd64 && gc && !purego && !noasm

package shmem

import (
	"golang.org/x/sys/cpu"

	"github.com/gocoll/gocoll/internal/race"
)

var fastStrings = cpu.X86.HasERMS

// repMovsb copies n bytes from src to dst with REP MOVSB.
//
//go:noescape
func repMovsb(dst, src *byte, n int)

// copyMoves copies src into dst, which are as long and do not overlap,
// with string moves of copyPiece bytes at most, and reports whether it
// could.
func copyMoves(dst, src []byte) bool {
	if !fastStrings {
		return false
	}
	if race.Enabled {
		race.ReadSlice(src)
		race.WriteSlice(dst)
	}
	for at := 0; at < len(dst); at += copyPiece {
		next := min(at+copyPiece, len(dst))
		repMovsb(&dst[at], &src[at], next-at)
	}
	return true
}
