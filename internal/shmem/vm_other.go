//go:build !linux

package shmem

import "time"

// NewCookie makes a cookie of this process; see the Linux build.
func NewCookie() (w *uint64, c Cookie) { return new(uint64), Cookie{} }

// VM is not available on this system; see the Linux build.
type VM struct{}

// Read fails with ErrUnsupported.
func (v *VM) Read(pid int, c Cookie, addr uint64, dst []byte) error { return ErrUnsupported }

// Write fails with ErrUnsupported.
func (v *VM) Write(pid int, c Cookie, addr uint64, src []byte) error { return ErrUnsupported }

// Check fails with ErrUnsupported.
func (v *VM) Check(pid int, c Cookie) error { return ErrUnsupported }

// FirstReach is 0: there is no single copy; see the Linux build.
func FirstReach() time.Duration { return 0 }

// FirstReachHuge is 0: there is no single copy; see the Linux build.
func FirstReachHuge() time.Duration { return 0 }
