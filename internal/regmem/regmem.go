package regmem

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocoll/gocoll/internal/shmem"
)

// ErrNotAllocated is wrapped by Free's error for memory that Alloc did not
// return, or that was freed already.
var ErrNotAllocated = errors.New("not memory from Alloc")

// ErrInUse is wrapped by Free's error for memory that a call still uses.
var ErrInUse = errors.New("registered memory in use")

// An Extent locates bytes of a registered allocation for the other
// processes of its host.
type Extent struct {
	Serial uint64         // the allocation's number in its process, from 1; 0: no extent
	FD     int            // the owner's descriptor of the allocation's file
	ID     shmem.Identity // the file, checked by whoever opens FD
	Size   int            // the file's bytes
	Off    int            // where the extent starts in the file
	Len    int            // the extent's bytes
}

// valid reports whether e describes a range inside its file.
func (e *Extent) valid() bool {
	return e.Serial != 0 && e.Size > 0 && e.Off >= 0 && e.Len >= 0 && e.Off <= e.Size && e.Len <= e.Size-e.Off
}

type allocation struct {
	region *shmem.Region
	serial uint64
	mem    []byte // the region's mapping
	pins   atomic.Int32
}

// owned holds this process's allocations, sorted by address.
var owned struct {
	mu     sync.RWMutex
	allocs []*allocation
	serial uint64
}

// Alloc returns n bytes of registered memory, zeroed, in a mapping of
// whole pages of its own. It fails where shared memory is not supported
// (shmem.ErrUnsupported) or too little of it is free (shmem.ErrNoSpace).
func Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("registered memory of %d bytes", n)
	}
	page := os.Getpagesize()
	region, err := shmem.Create("", (n+page-1)/page*page)
	if err != nil {
		return nil, err
	}
	a := &allocation{region: region, mem: region.Bytes()}
	owned.mu.Lock()
	owned.serial++
	a.serial = owned.serial
	i, _ := slices.BinarySearchFunc(owned.allocs, start(a.mem), compareStart)
	owned.allocs = slices.Insert(owned.allocs, i, a)
	owned.mu.Unlock()
	return a.mem[:n:n], nil
}

func start(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func compareStart(a *allocation, p uintptr) int {
	s := start(a.mem)
	switch {
	case s < p:
		return -1
	case s > p:
		return 1
	}
	return 0
}

// Free releases the allocation that b, as returned by Alloc, begins. b
// must not be used afterwards: it reads zeros, and what is written to it
// stays in this process.
func Free(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("regmem: free of an empty slice: %w", ErrNotAllocated)
	}
	owned.mu.Lock()
	defer owned.mu.Unlock()
	i, found := slices.BinarySearchFunc(owned.allocs, start(b), compareStart)
	if !found {
		return fmt.Errorf("regmem: free of %d bytes at %#x: %w", len(b), start(b), ErrNotAllocated)
	}
	a := owned.allocs[i]
	if n := a.pins.Load(); n != 0 {
		return fmt.Errorf("regmem: free of %d bytes at %#x while %d calls use them: %w", len(b), start(b), n, ErrInUse)
	}
	owned.allocs = slices.Delete(owned.allocs, i, i+1)
	return a.region.Retire()
}

// A Pin keeps an allocation of this process from being freed while a
// call uses it; the zero Pin pins nothing.
type Pin struct{ a *allocation }

// Release ends the pin.
func (p Pin) Release() {
	if p.a != nil {
		p.a.pins.Add(-1)
	}
}

// Find reports where b lies in this process's registered memory, if all
// of it lies in one allocation, and pins that allocation.
func Find(b []byte) (Extent, Pin, bool) {
	if len(b) == 0 {
		return Extent{}, Pin{}, false
	}
	p := start(b)
	owned.mu.RLock()
	defer owned.mu.RUnlock()
	i, found := slices.BinarySearchFunc(owned.allocs, p, compareStart)
	if !found {
		i-- // the allocation before p, if any, may hold it
	}
	if i < 0 {
		return Extent{}, Pin{}, false
	}
	a := owned.allocs[i]
	off := int(p - start(a.mem))
	if off+len(b) > len(a.mem) {
		return Extent{}, Pin{}, false
	}
	a.pins.Add(1)
	return Extent{Serial: a.serial, FD: a.region.FD(), ID: a.region.Identity(), Size: len(a.mem), Off: off, Len: len(b)}, Pin{a}, true
}
