package shmem

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/race"
)

// NewCookie makes a cookie of this process. w is the cookie's word: keep
// it reachable for as long as other processes may read this one's
// memory. It lives in Go's heap, which does not move objects.
func NewCookie() (w *uint64, c Cookie) {
	w = new(uint64)
	*w = rand.Uint64()
	return w, Cookie{Addr: uint64(uintptr(unsafe.Pointer(w))), Value: *w}
}

// maxVMRead bounds one process_vm_readv. The call is raw, which the
// runtime does not see: one it sees hands the thread's processor to
// another thread when it seems slow to the runtime's monitor (20 µs),
// and the call waits for the processor when it returns, two context
// switches. Two ranks' 64 KiB Bcasts copying once had 2.6-3.5 % of their
// calls take over 20 µs, a fifth of their time; with raw calls 1.1-1.5 %
// (2026-11-28). But a garbage collection that stops the world waits for
// a raw call to end, so one copies at most this much, about 50 µs, as the
// tcp transport's raw writes do.
const maxVMRead = 1 << 20

// A VMReader copies memory out of other processes with process_vm_readv
// (cross-memory attach). It holds the system call's scratch, so that a
// read allocates nothing, and is not safe for concurrent use. Its zero
// value is ready.
type VMReader struct {
	liov [2]unix.Iovec
	riov [2]unix.RemoteIovec
	got  [8]byte // the cookie as read
}

// Read copies len(dst) bytes at addr in process pid's memory into dst,
// fetching with each piece the process's cookie c, and fails with
// ErrNotPeer when the word there is not c's. Where the kernel refuses,
// the error is the system call's: EPERM when this process may not read
// pid's memory (ptrace(2), "Ptrace access mode checking"), ENOSYS without
// CMA, ESRCH when pid is gone, EFAULT when the range is not mapped.
func (r *VMReader) Read(pid int, c Cookie, addr uint64, dst []byte) error {
	r.liov[1].Base = &r.got[0]
	r.liov[1].SetLen(len(r.got))
	r.riov[1] = unix.RemoteIovec{Base: uintptr(c.Addr), Len: len(r.got)}
	for off := 0; off < len(dst); {
		n := min(len(dst)-off, maxVMRead)
		r.liov[0].Base = &dst[off]
		r.liov[0].SetLen(n)
		r.riov[0] = unix.RemoteIovec{Base: uintptr(addr) + uintptr(off), Len: n}
		r0, _, errno := unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, uintptr(pid),
			uintptr(unsafe.Pointer(&r.liov[0])), uintptr(len(r.liov)), uintptr(unsafe.Pointer(&r.riov[0])), uintptr(len(r.riov)), 0)
		r.liov[0].Base = nil
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return errno
		}
		got := int(r0)
		if race.Enabled {
			race.WriteSlice(dst[off : off+min(got, n)]) // the cookie comes after
		}
		switch {
		case got != n+len(r.got):
			return fmt.Errorf("process_vm_readv read %d of %d bytes", got, n+len(r.got))
		case binary.NativeEndian.Uint64(r.got[:]) != c.Value:
			return ErrNotPeer
		}
		off += n
	}
	return nil
}
