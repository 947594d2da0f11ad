package shmem

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned where shared memory is not available: on
// other systems than Linux, or where neither /dev/shm nor memfd_create
// can hold a region. It wraps errors.ErrUnsupported.
var ErrUnsupported = fmt.Errorf("shared memory is not supported here: %w", errors.ErrUnsupported)

// ErrNoSpace is wrapped by Create's error when the file system holding
// shared memory has too little free space for the region.
var ErrNoSpace = errors.New("not enough free shared memory")

// Identity names the file behind a region, so that a process that opens
// it through another process's descriptor can tell it got the right one.
type Identity struct {
	Dev, Ino uint64
}

func (id Identity) String() string { return fmt.Sprintf("dev %d inode %d", id.Dev, id.Ino) }

// DefaultDir is the tmpfs that regions live in.
const DefaultDir = "/dev/shm"
