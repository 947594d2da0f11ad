package kernel

// copyAroundMin is the shortest copy that CopyAround makes around the
// caches: below it the fence costs more than the stores save.
const copyAroundMin = 4 << 10

// CopyAround copies src into dst, as copy does, and returns how many
// bytes it copied. Where the CPU has them (AVX2), it writes dst with
// non-temporal stores, which go to memory around the caches: for a
// buffer that another core last read and reads next, whose lines a store
// through the caches must first take back from that core. Which way is
// faster depends on the host; shmem.Copier learns it.
func CopyAround(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < copyAroundMin || !copyAroundAsm(dst[:n], src[:n]) {
		return copy(dst, src)
	}
	return n
}
