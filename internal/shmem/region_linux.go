//go:build linux

package shmem

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Region is a shared mapping of a file that has no name.
type Region struct {
	data []byte
	fd   int // -1 once CloseFD has run
	id   Identity
}

// Create makes a region of size bytes in dir (DefaultDir when empty),
// filled with zeros. It fails with an error wrapping ErrNoSpace when the
// file system has less than size bytes free.
func Create(dir string, size int) (*Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shared memory region of %d bytes", size)
	}
	if dir == "" {
		dir = DefaultDir
	}
	fd, err := createFile(dir)
	if err != nil {
		return nil, err
	}
	if err := reserve(fd, dir, size); err != nil {
		unix.Close(fd)
		return nil, err
	}
	r, err := mapFile(fd, size)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return r, nil
}

// createFile opens an unnamed file in dir, or an anonymous memfd when dir
// cannot hold one (no tmpfs there, or a kernel without O_TMPFILE).
func createFile(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return fd, nil
	}
	fd, merr := unix.MemfdCreate("gocoll", unix.MFD_CLOEXEC)
	if merr != nil {
		return -1, fmt.Errorf("%w: unnamed file in %s: %v; memfd_create: %v", ErrUnsupported, dir, err, merr)
	}
	return fd, nil
}

// reserve gives the file its size and allocates every page of it, so
// that no later access can find a page missing.
func reserve(fd int, dir string, size int) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err == nil && st.Blocks > 0 {
		free := st.Bavail * uint64(st.Bsize)
		if free < uint64(size) {
			return fmt.Errorf("%w: %s has %d bytes free, the region needs %d", ErrNoSpace, dir, free, size)
		}
	}
	if err := unix.Fallocate(fd, 0, 0, int64(size)); err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("%w: %s cannot hold %d more bytes", ErrNoSpace, dir, size)
		}
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("reserving %d bytes of shared memory: %w", size, err)
		}
		// No fallocate: size the file and let the free-space check stand.
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			return fmt.Errorf("sizing shared memory to %d bytes: %w", size, err)
		}
	}
	return nil
}

func mapFile(fd, size int) (*Region, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shared memory: %w", err)
	}
	if st.Size < int64(size) {
		return nil, fmt.Errorf("shared memory file holds %d bytes, want %d", st.Size, size)
	}
	// MmapPtr rather than Mmap: Retire maps over the same addresses,
	// which Mmap's bookkeeping does not allow for.
	p, err := unix.MmapPtr(fd, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %d bytes of shared memory: %w", size, err)
	}
	data := unsafe.Slice((*byte)(p), size)
	return &Region{data: data, fd: fd, id: Identity{Dev: uint64(st.Dev), Ino: st.Ino}}, nil
}

// Open maps the region that process pid holds open as descriptor fd,
// which must be the file id names and at least size bytes long.
func Open(pid, fd int, id Identity, size int) (*Region, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd)
	own, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the shared memory of process %d: %w", pid, &os.PathError{Op: "open", Path: path, Err: err})
	}
	r, err := mapFile(own, size)
	if err != nil {
		unix.Close(own)
		return nil, err
	}
	if r.id != id {
		r.Close()
		return nil, fmt.Errorf("%s is %v, not the shared memory of %v (process %d closed it?)", path, r.id, id, pid)
	}
	return r, nil
}

// Bytes is the mapping. It stays valid until Close.
func (r *Region) Bytes() []byte { return r.data }

// FD is the descriptor other processes open the region through, or -1
// after CloseFD.
func (r *Region) FD() int { return r.fd }

// Identity names the region's file.
func (r *Region) Identity() Identity { return r.id }

// CloseFD closes the region's descriptor and keeps the mapping: once every
// process has mapped the region, the mappings are all that keep it.
func (r *Region) CloseFD() error {
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// Close unmaps the region and closes its descriptor. The memory is freed
// once no process maps it.
func (r *Region) Close() error {
	err := r.CloseFD()
	if r.data != nil {
		if e := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(r.data)), uintptr(len(r.data))); err == nil {
			err = e
		}
		r.data = nil
	}
	return err
}

// Retire closes the region's descriptor and puts private zero pages in
// place of its mapping, at the same addresses: for a mapping handed out
// as memory that code may still hold after it is done with it. Such code
// then reads zeros and writes memory that no other process shares, never
// the region, and faults on nothing. The shared memory is freed once no
// other process maps it; the addresses stay taken, backed by nothing
// until written.
func (r *Region) Retire() error {
	err := r.CloseFD()
	if r.data != nil {
		_, e := unix.MmapPtr(-1, 0, unsafe.Pointer(unsafe.SliceData(r.data)), uintptr(len(r.data)),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
		if e != nil && err == nil {
			err = fmt.Errorf("replacing %d bytes of shared memory: %w", len(r.data), e)
		}
		r.data = nil
	}
	return err
}

// Uint32 is the 32-bit word at byte offset off, which must be 4-aligned.
func (r *Region) Uint32(off int) *atomic.Uint32 {
	_ = r.data[off+3]
	return (*atomic.Uint32)(unsafe.Pointer(&r.data[off]))
}

// Uint64 is the 64-bit word at byte offset off, which must be 8-aligned.
func (r *Region) Uint64(off int) *atomic.Uint64 {
	_ = r.data[off+7]
	return (*atomic.Uint64)(unsafe.Pointer(&r.data[off]))
}

// Futex operations, shared between processes.
const (
	futexWait = 0
	futexWake = 1
)

// A Timespec is the timeout of a Wait. It lives with its waiter, so that
// a wait passes the kernel a pointer to memory that is already on the
// heap and allocates nothing.
type Timespec = unix.Timespec

// Wait sleeps while *w == val, for at most d (d <= 0 waits without
// limit), and reports whether it was woken, as opposed to timing out or
// finding *w changed already. Spurious wake-ups happen: callers recheck
// their condition. ts is scratch space for the timeout.
func Wait(w *atomic.Uint32, val uint32, d time.Duration, ts *Timespec) bool {
	var tsp uintptr
	if d > 0 {
		*ts = unix.NsecToTimespec(int64(d))
		tsp = uintptr(unsafe.Pointer(ts))
	}
	_, _, errno := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(val), tsp, 0, 0)
	return errno == 0
}

// Wake wakes up to n processes (or threads) sleeping in Wait on w.
func Wake(w *atomic.Uint32, n int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(n), 0, 0, 0)
}

// yieldCPU gives the processor to another thread or process, which a
// goroutine spinning on shared memory needs when there are more waiting
// processes than cores: runtime.Gosched only yields to goroutines. It is
// a raw system call: sched_yield does not block, and telling the Go
// scheduler about it would only wake threads to take over this one's P.
func yieldCPU() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// Alive reports whether process pid exists (and is not a zombie).
func Alive(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	// The state follows the command name in parentheses, which may hold
	// spaces and parentheses itself.
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i+2 >= len(b) || b[i+2] != 'Z'
		}
	}
	return true
}
