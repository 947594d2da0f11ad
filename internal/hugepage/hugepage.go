// Package hugepage backs the buffers that other processes copy out of and
// into, again and again, with transparent huge pages.
//
// A collective that copies once between the ranks' own buffers
// (process_vm_readv and process_vm_writev, package shmem's VM) has the
// kernel pin and walk every page of them on every call. Go's heap hands
// out 4 KiB pages wherever the host's transparent huge pages are set to
// "madvise" (Go asks for none), and then most of a single copy's time
// goes to the pages rather than the bytes: on a Zen 5 VM under PVM
// (2026-11-30) process_vm_readv of 8 MiB that another process had
// written took 11.0-11.3 ms the first time and 1.4-1.6 the second on 4
// KiB pages, and 0.55-0.59 and 0.43 on 2 MiB ones; two ranks' 1 MiB
// Bcasts, copying once, took 32 µs a call against 17, and Gathers,
// Scatters, Allgathers and Alltoalls 1.5-2 times as long.
//
// A Collapser asks the kernel, with madvise(MADV_COLLAPSE) (Linux 6.1),
// to put the 2 MiB regions that hold a buffer on huge pages, once the
// buffer has come back: a buffer used once is left alone, since a
// collapse copies its regions (0.8 ms each on that VM, a fifth of what
// first touching their 4 KiB pages had cost there). The regions are the
// aligned 2 MiB around the buffer, which in Go's heap hold other objects
// too; the kernel moves their bytes with the page and nothing else
// changes for them, but pages of a region that nothing had touched yet
// come into memory with it, at most 2 MiB at each end of a buffer. The
// kernel refuses where the memory is not anonymous, is not writable,
// or was marked MADV_NOHUGEPAGE, and where the host's transparent huge
// pages are "never" a Collapser does not ask.
package hugepage

import (
	"sync"
	"unsafe"
)

// Size is the size of a huge page, and of the regions a Collapser
// collapses.
const Size = 2 << 20

// Min is the smallest buffer, in bytes, that a Collapser considers: below
// it a single copy walks too few pages to gain, and the region it would
// collapse is many times its size.
const Min = 64 << 10

// tableLen is how many buffers a Collapser remembers. A buffer that
// comes back before tableLen others have is collapsed: a trainer's
// gradient buckets or a benchmark's buffers are, a stream of fresh
// buffers is not.
const tableLen = 64

// A Collapser collapses the regions of the buffers it is told of, from
// the second time each is used. Its zero value is ready; it is safe for
// concurrent use.
type Collapser struct {
	mu   sync.Mutex
	bufs [tableLen]buffer
	next int // the entry that the next new buffer takes

	// Collapse, if not nil, is called instead of the kernel's
	// madvise(MADV_COLLAPSE) with the regions to collapse, n bytes at
	// addr, both multiples of Size: tests count what would be collapsed.
	Collapse func(addr, n uintptr) error
}

// buffer is a buffer a Collapser has been told of: where it starts, how
// long it is, and whether its regions have been collapsed (or the kernel
// refused).
type buffer struct {
	addr, len uintptr
	collapsed bool
}

// Use tells c that b is about to be copied by another process. The
// second time a buffer of the same start and length comes, c has its
// regions collapsed, in this call; later uses cost a look at c's table.
// It reports whether it asked the kernel now, and the kernel's error,
// which a caller may ignore: the buffer's pages stay as they were.
func (c *Collapser) Use(b []byte) (asked bool, err error) {
	collapse := c.Collapse
	if collapse == nil {
		if !Available() {
			return false, nil
		}
		collapse = collapseRegions
	}
	if len(b) < Min {
		return false, nil
	}
	addr, n := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b))
	if !c.cameBack(addr, n) {
		return false, nil
	}
	return true, collapse(Around(addr, n))
}

// Around is where the aligned regions around n bytes at addr begin, and
// their length: what a Collapser collapses for such a buffer.
func Around(addr, n uintptr) (start, length uintptr) {
	start = addr &^ (Size - 1)
	return start, (addr+n+Size-1)&^(Size-1) - start
}

// cameBack reports whether the buffer of n bytes at addr is one that c
// remembers and has not collapsed, which it then marks collapsed; a
// buffer it does not remember takes the oldest entry's place.
func (c *Collapser) cameBack(addr, n uintptr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.bufs {
		if e := &c.bufs[i]; e.addr == addr && e.len == n {
			was := e.collapsed
			e.collapsed = true
			return !was
		}
	}
	c.bufs[c.next] = buffer{addr: addr, len: n}
	c.next = (c.next + 1) % tableLen
	return false
}
