//go:build !linux

package shmem

// FromFD fails: regions need Linux.
func FromFD(fd int, id Identity, size int) (*Region, error) { return nil, ErrUnsupported }
