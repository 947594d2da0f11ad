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
	if !fastStrings || shortDistance(addrOf(dst), addrOf(src)) {
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

// shortDistance reports whether string moves from src to dst would be
// slow: on a CPU that has fast ones (ERMS), when dst begins 1 to 63
// bytes after src's offset in a page. They then run many times slower on
// AMD's Zen 3 and Zen 4 (glibc's bug 30994). On this project's Zen 3 host (2026-11-29), a
// 64 KiB REP MOVSB within one process moved 1.5–2.7 GB/s at distances of
// 1 to 31 bytes and 18 at 33 to 63, against 27–38 at 0 and from 65 on,
// where copy moves 23–40. The kernel copies with string moves too: a
// process_vm_readv of 1 MiB there took 595–622 µs at distances of 8 and
// 16 bytes, 114–128 at the others. A source and a destination at such
// distances are as common as any others: a ring's messages fall where
// the one before ended, a Gather's parts at multiples of their size.
func shortDistance(dst, src uintptr) bool {
	d := (dst - src) % 4096
	return fastStrings && d != 0 && d < 64
}
