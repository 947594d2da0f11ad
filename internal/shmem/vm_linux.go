package shmem

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/hugepage"
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

// maxVMCopy bounds one process_vm_readv or process_vm_writev. The call
// is raw, which the runtime does not see: one it sees hands the thread's
// processor to another thread when it seems slow to the runtime's
// monitor (20 µs), and the call waits for the processor when it returns,
// two context switches. Two ranks' 64 KiB Bcasts copying once had
// 2.6-3.5 % of their calls take over 20 µs, a fifth of their time; with
// raw calls 1.1-1.5 % (2026-11-28). But a garbage collection that stops
// the world waits for a raw call to end, so one copies at most this
// much, about 50 µs, as the tcp transport's raw writes do.
const maxVMCopy = 1 << 20

// A VM copies memory out of and into other processes with
// process_vm_readv and process_vm_writev (cross-memory attach). It holds
// the system calls' scratch, so that a copy allocates nothing but the
// first with each process and the first through its bounce buffer
// (bounceFor), and is not safe for concurrent use. Its zero value is
// ready.
type VM struct {
	liov [2]unix.Iovec
	riov [2]unix.RemoteIovec
	got  [8]byte // the cookie as read
	// bounce is where a copy whose two ends lie a short distance apart
	// in their pages goes through (bounceFor), made on the first.
	bounce []byte
	// The cookie found last in each process copied with, and when: a
	// write within cookieFresh of a check needs none of its own. One
	// entry per process, a job's peers, made on the first copy.
	seen  []seenCookie
	clock func() time.Duration // nil: time since the VM's process started; tests set it
}

// A seenCookie is a cookie found in process pid at a time of VM.clock.
type seenCookie struct {
	pid int
	c   Cookie
	at  time.Duration
}

// cookieFresh is how long a cookie found in a process proves, for a
// write, that the process is still the one that published it: another
// process takes its PID only once the kernel has handed out every other
// PID since (pid_max of them, 32768 or more unless an administrator
// lowers it), which takes far longer. A check is a system call of its
// own before a write: two ranks' 64 KiB Allgathers took 4.2-4.7 µs with
// one before every write, 3.8-4.4 reading, and 3.7-4.0 writing with this
// (Intel Xeon host, 2026-11-29).
const cookieFresh = time.Millisecond

// start is the monotonic origin of VM.clock.
var start = time.Now()

// now is the time on v's clock.
func (v *VM) now() time.Duration {
	if v.clock != nil {
		return v.clock()
	}
	return time.Since(start)
}

// fresh reports whether c was found in pid within cookieFresh.
func (v *VM) fresh(pid int, c Cookie) bool {
	for _, e := range v.seen {
		if e.pid == pid {
			return e.c == c && v.now()-e.at < cookieFresh
		}
	}
	return false
}

// found records that c was found in pid just now.
func (v *VM) found(pid int, c Cookie) {
	e := seenCookie{pid: pid, c: c, at: v.now()}
	for i := range v.seen {
		if v.seen[i].pid == pid {
			v.seen[i] = e
			return
		}
	}
	v.seen = append(v.seen, e)
}

// Read copies len(dst) bytes at addr in process pid's memory into dst,
// fetching with each piece the process's cookie c, and fails with
// ErrNotPeer when the word there is not c's. Where the kernel refuses,
// the error is the system call's: EPERM when this process may not read
// pid's memory (ptrace(2), "Ptrace access mode checking"), ENOSYS without
// CMA, ESRCH when pid is gone, EFAULT when the range is not mapped.
func (v *VM) Read(pid int, c Cookie, addr uint64, dst []byte) error {
	v.cookieIovec(c, 1)
	for off := 0; off < len(dst); {
		n := min(len(dst)-off, maxVMCopy)
		into := dst[off : off+n]
		bounced := shortDistance(addrOf(into), uintptr(addr)+uintptr(off))
		if bounced {
			n = min(n, bounceSize)
			into = v.bounceFor(addr+uint64(off), n)
		}
		v.aim(into, addr+uint64(off))
		got, err := v.call(unix.SYS_PROCESS_VM_READV, pid, 2)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if race.Enabled && !bounced {
			race.WriteSlice(into[:min(got, n)]) // the cookie comes after
		}
		if err := v.checkCookie(c, got, n); err != nil {
			return err
		}
		v.found(pid, c)
		if bounced {
			copy(dst[off:off+n], into)
		}
		off += n
	}
	return nil
}

// Write copies src to addr in process pid's memory, as Read copies out
// of it. A write cannot fetch the cookie in the same call, so a piece
// reads it first unless a read or a check found it within cookieFresh:
// a process that took over pid's number would have to appear in
// between, and a write never lands in its memory after a check that
// found the cookie gone. Errors are Read's, with EFAULT also for a range
// that is not writable.
func (v *VM) Write(pid int, c Cookie, addr uint64, src []byte) error {
	for off := 0; off < len(src); {
		if !v.fresh(pid, c) {
			if err := v.Check(pid, c); err != nil {
				return err
			}
		}
		n := min(len(src)-off, maxVMCopy)
		from := src[off : off+n]
		bounced := shortDistance(uintptr(addr)+uintptr(off), addrOf(from))
		if bounced {
			n = min(n, bounceSize)
			from = v.bounceFor(addr+uint64(off), n)
			copy(from, src[off:off+n])
		}
		v.aim(from, addr+uint64(off))
		got, err := v.call(unix.SYS_PROCESS_VM_WRITEV, pid, 1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if race.Enabled && !bounced {
			race.ReadSlice(from)
		}
		if got != n {
			return fmt.Errorf("process_vm_writev wrote %d of %d bytes", got, n)
		}
		off += n
	}
	return nil
}

// Check reads the cookie c of process pid, and fails as Read does when
// it is not there: with ESRCH or ErrNotPeer once the process is gone.
func (v *VM) Check(pid int, c Cookie) error {
	for {
		v.cookieIovec(c, 0) // call clears the first local iovec
		got, err := v.call(unix.SYS_PROCESS_VM_READV, pid, 1)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		}
		if err := v.checkCookie(c, got, 0); err != nil {
			return err
		}
		v.found(pid, c)
		return nil
	}
}

// bounceSize is the most that a copy through the bounce buffer moves
// in one system call: less than a core's L2 cache, so that the copy
// between the bounce buffer and the caller's memory finds it there.
const bounceSize = 128 << 10

// bounceFor returns n bytes (at most bounceSize) of v's bounce buffer
// that lie at remote address addr's offset in a page, for a copy
// between addr and local memory that lies a short distance from it in
// its page (shortDistance): the kernel copies between the remote pages
// and local memory with string moves where the CPU has fast ones, which
// at such distances run at a fifth of their speed or less on AMD's Zen 3
// and Zen 4 (process_vm_readv of 1 MiB: 595–622 µs against 114–128, on
// this project's Zen 3 host, 2026-11-29). Through the bounce buffer, at
// no distance from addr, the kernel copies at full speed, and the copy
// between the bounce buffer and the caller's memory is copy's, which
// has no such fall.
func (v *VM) bounceFor(addr uint64, n int) []byte {
	if v.bounce == nil {
		v.bounce = make([]byte, bounceSize+4096)
	}
	at := (uintptr(addr) - uintptr(unsafe.Pointer(&v.bounce[0]))) % 4096
	return v.bounce[at : int(at)+n]
}

// aim sets the first iovecs to p in this process and as many bytes at
// addr in the other.
func (v *VM) aim(p []byte, addr uint64) {
	v.liov[0].Base = &p[0]
	v.liov[0].SetLen(len(p))
	v.riov[0] = unix.RemoteIovec{Base: uintptr(addr), Len: len(p)}
}

// cookieIovec sets the iovecs at i to fetch the cookie c.
func (v *VM) cookieIovec(c Cookie, i int) {
	v.liov[i].Base = &v.got[0]
	v.liov[i].SetLen(len(v.got))
	v.riov[i] = unix.RemoteIovec{Base: uintptr(c.Addr), Len: len(v.got)}
}

// call makes the system call trap on pid with the first iovecs of v,
// and returns how many bytes it copied. It leaves no pointer to the
// caller's memory behind in v.
func (v *VM) call(trap uintptr, pid, iovecs int) (int, error) {
	r0, _, errno := unix.RawSyscall6(trap, uintptr(pid),
		uintptr(unsafe.Pointer(&v.liov[0])), uintptr(iovecs), uintptr(unsafe.Pointer(&v.riov[0])), uintptr(iovecs), 0)
	v.liov[0].Base = nil
	if errno != 0 {
		return 0, errno
	}
	return int(r0), nil
}

// checkCookie checks a read of n bytes and the cookie after them, which
// copied got bytes in all.
func (v *VM) checkCookie(c Cookie, got, n int) error {
	switch {
	case got != n+len(v.got):
		return fmt.Errorf("process_vm_readv read %d of %d bytes", got, n+len(v.got))
	case binary.NativeEndian.Uint64(v.got[:]) != c.Value:
		return ErrNotPeer
	}
	return nil
}

// FirstReach is how much longer a single copy takes, per 4 KiB page, to
// reach pages that the kernel has not reached before than pages it has,
// on this host, measured once per process (firstReachOf): 0 where the
// two are alike.
//
// Most hosts give 0. A VM whose hypervisor shadows the guest's page
// tables fills in the kernel's own mapping of each page the first time
// the kernel copies through it, which process_vm_readv and
// process_vm_writev do and a process's own copies do not: on a Zen 5
// Firecracker VM under PVM, 6-9 µs a page, against 0.4-1 µs for the
// reads after it (8 MiB: 13.3 ms, then 1.5, 1.0, 0.8; 2026-11-29), as
// long as a minor page fault there. A buffer pays it once, but a short
// job that tries the single copy on new buffers pays it in full
// (SingleCopy.SetFirstReach).
func FirstReach() time.Duration {
	firstReachOnce.Do(func() {
		firstReach = min(measureFirstReach(false), measureFirstReach(false))
	})
	return firstReach
}

// FirstReachHuge is FirstReach for memory on 2 MiB pages, per 4 KiB of
// it, where the host gives this process huge pages (else FirstReach):
// the kernel fills in its mapping of such memory a huge page at a time.
// On the Zen 5 VM, reading 8 MiB of another process's memory on huge
// pages took 0.55-0.59 ms the first time and 0.43 the second, against
// 11.0-11.3 and 1.4-1.6 on small pages (2026-11-30).
func FirstReachHuge() time.Duration {
	firstReachHugeOnce.Do(func() {
		firstReachHuge = min(measureFirstReach(true), measureFirstReach(true))
	})
	return firstReachHuge
}

var (
	firstReachOnce, firstReachHugeOnce sync.Once
	firstReach, firstReachHuge         time.Duration
)

// reachPages is how many pages measureFirstReach reads of small pages:
// enough that the system call's own cost is small beside them, few
// enough that the reads take well under a millisecond where each page
// costs 9 µs (the measure's own page faults, 11 µs each there, take
// longer). Of huge pages it reads one, whose first reach the kernel
// pays at once.
const reachPages = 16

// measureFirstReach reads pages of this process that only the process
// has touched with process_vm_readv, three times, and returns
// firstReachOf the times. With huge, the pages are a huge page, where
// the host gives one (else it measures small pages).
func measureFirstReach(huge bool) time.Duration {
	size, slack := reachPages*unix.Getpagesize(), 0
	if huge {
		size, slack = hugepage.Size, hugepage.Size // room to align to a huge page
	}
	raw, err := unix.Mmap(-1, 0, 2*size+slack, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return 0
	}
	defer unix.Munmap(raw)
	mem := raw[:2*size]
	if huge {
		skip := (size - int(uintptr(unsafe.Pointer(&raw[0])))%size) % size
		mem = raw[skip : skip+2*size]
		if unix.Madvise(mem, unix.MADV_HUGEPAGE) != nil {
			return measureFirstReach(false)
		}
	}
	for i := 0; i < len(mem); i += unix.Getpagesize() {
		mem[i] = 1 // the process's own first touch, which is not measured
	}
	local := []unix.Iovec{{Base: &mem[size]}}
	local[0].SetLen(size)
	remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&mem[0])), Len: size}}
	var took [3]time.Duration
	for i := range took {
		start := time.Now()
		if n, err := unix.ProcessVMReadv(os.Getpid(), local, remote, 0); err != nil || n != size {
			return 0
		}
		took[i] = time.Since(start)
	}
	return firstReachOf(took[0], min(took[1], took[2]), size/4096)
}

// firstReachOf is what the first read of pages 4 KiB pages took beyond
// a warm later read, per page, where the first took more than twice as
// long: less than that is the caches' and the page tables' other first
// costs, which every host has and a long copy hides.
func firstReachOf(first, warm time.Duration, pages int) time.Duration {
	if first <= 2*warm {
		return 0
	}
	return (first - warm) / time.Duration(pages)
}
