//go:build !linux

package shmem

// NewCookie makes a cookie of this process; see the Linux build.
func NewCookie() (w *uint64, c Cookie) { return new(uint64), Cookie{} }

// VMReader is not available on this system; see the Linux build.
type VMReader struct{}

// Read fails with ErrUnsupported.
func (r *VMReader) Read(pid int, c Cookie, addr uint64, dst []byte) error { return ErrUnsupported }
