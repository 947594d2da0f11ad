//go:build !linux

package shmem

import (
	"sync/atomic"
	"time"
)

// Region is not available on this system; see the Linux build.
type Region struct{}

// Timespec is the timeout scratch of Wait.
type Timespec struct{}

func Create(dir string, size int) (*Region, error)                          { return nil, ErrUnsupported }
func Open(pid, fd int, id Identity, size int) (*Region, error)              { return nil, ErrUnsupported }
func (r *Region) Bytes() []byte                                             { return nil }
func (r *Region) FD() int                                                   { return -1 }
func (r *Region) Identity() Identity                                        { return Identity{} }
func (r *Region) CloseFD() error                                            { return nil }
func (r *Region) Close() error                                              { return nil }
func (r *Region) Retire() error                                             { return nil }
func (r *Region) Uint32(off int) *atomic.Uint32                             { return nil }
func (r *Region) Uint64(off int) *atomic.Uint64                             { return nil }
func Wait(w *atomic.Uint32, val uint32, d time.Duration, ts *Timespec) bool { return false }
func Wake(w *atomic.Uint32, n int)                                          {}
func yieldCPU()                                                             {}
func Alive(pid int) bool                                                    { return true }
