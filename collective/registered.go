package collective

import (
	"fmt"
	"unsafe"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/regmem"
	"github.com/gocoll/gocoll/internal/shmem"
)

// ErrNoSharedMemory is wrapped by Alloc's error when the host's shared
// memory (/dev/shm) has too little room left for the allocation.
var ErrNoSharedMemory = shmem.ErrNoSpace

// Alloc returns n zeroed elements of registered memory: shared memory
// that the other ranks of this host can map. A call that runs in a
// communicator's shared segment (the Shm algorithm, which ranks of one
// host use by default) and finds every buffer of every rank in such
// memory moves the data once, straight between the ranks' buffers,
// instead of copying it into the segment and out again: Allreduce reads
// each rank's buffer once and writes the result once into each,
// ReduceScatter reads each rank's send buffer once, Bcast, Gather and
// Allgather copy each block once, and Hierarchical Allreduce does so
// inside each host (calls of 16 KiB and more; smaller ones gain nothing).
// When any buffer of any rank lies elsewhere, every rank takes the
// segment's path, so registered and ordinary buffers mix freely; no rank
// needs to know what the others passed. The memory belongs to the
// process, not to a communicator: it serves every communicator of the
// host (sub-communicators too) and stays valid after they close, until
// Free.
//
// The race detector cannot check registered memory: it keeps its record
// of accesses only for the Go heap and the program's globals, and
// ignores every access elsewhere, by Go code or reported. So under -race
// a program that writes a registered buffer while a call uses it (an
// AllreduceAsync not yet waited for) is not reported, where with an
// ordinary buffer it is: what the detector cannot see by itself of the
// accesses to ordinary buffers, those of the assembly kernels and of the
// transports' system calls, gocoll reports to it.
//
// Alloc fails with an error wrapping errors.ErrUnsupported where shared
// memory is not available (systems other than Linux), ErrNoSharedMemory
// when /dev/shm is too full, and codec.ErrInvalid for n < 1.
func Alloc[T codec.Elem](n int) ([]T, error) {
	size := int(unsafe.Sizeof(*new(T)))
	if n < 1 {
		return nil, fmt.Errorf("%w: Alloc of %d elements", codec.ErrInvalid, n)
	}
	b, err := regmem.Alloc(n * size)
	if err != nil {
		return nil, fmt.Errorf("Alloc of %d × %T: %w", n, *new(T), err)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n), nil
}

// Free releases memory that Alloc returned; s must be that slice or begin
// where it begins. The slice must not be used afterwards. If it is, it
// reads zeros and what is written to it stays in this process: it never
// reaches another rank's memory, and nothing faults. Free of memory that
// Alloc did not return, or that a call is still using (an AllreduceAsync
// not yet waited for), fails with an error wrapping codec.ErrInvalid.
func Free[T codec.Elem](s []T) error {
	if err := regmem.Free(asBytes(s)); err != nil {
		return fmt.Errorf("%w: %w", codec.ErrInvalid, err)
	}
	return nil
}
