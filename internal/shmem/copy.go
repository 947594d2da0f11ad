package shmem

import "unsafe"

// copyMin is the shortest copy that Copy makes with string moves: below
// it their start-up costs more than the stores save (the Go runtime's
// own threshold for them, 2 KiB).
const copyMin = 2 << 10

// copyPiece is the most that one string move copies. The scheduler cannot
// preempt a goroutine inside an assembly function, so a long copy is cut
// into pieces of a few microseconds each.
const copyPiece = 64 << 10

// Copy copies src into dst, as copy does, and returns how many bytes it
// copied; dst is shared memory that another process reads, and whose
// lines the reading core therefore holds. Every store that a copy makes
// through the caches must first take its line back from that core. Go's
// copy on AMD CPUs stores with a vector loop, which waits for each line
// in turn; where the CPU has fast string moves (ERMS), Copy moves bytes
// with REP MOVSB instead, which writes whole lines without waiting for
// them, as glibc's memcpy does for such sizes. Two pinned processes
// handing 64 KiB to each other through a shared mapping on this
// project's two-vCPU AMD EPYC host, in its slow state (2026-11-29, a C
// ping-pong, round trips): 10.4 µs with REP MOVSB on the writer's side
// against 29.4 with a 32-byte vector loop; the reader's side made no
// difference. Copies shorter than copyMin, copies between overlapping
// slices, which a forward string move would garble, and copies whose
// destination begins just after the source's offset in a page, where
// string moves are slow on AMD's Zen 3 and Zen 4 (shortDistance), are
// copy's.
func Copy(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < copyMin || overlap(dst[:n], src[:n]) || !copyMoves(dst[:n], src[:n]) {
		return copy(dst, src)
	}
	return n
}

// addrOf is the address of b's first byte; b is not empty.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// overlap reports whether a and b, which are as long and not empty,
// share bytes.
func overlap(a, b []byte) bool {
	pa, pb := addrOf(a), addrOf(b)
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}
