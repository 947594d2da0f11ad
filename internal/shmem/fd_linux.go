//go:build linux

package shmem

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FromFD maps the region behind descriptor fd, which this process
// received from the region's creator (over a Unix socket, with
// SCM_RIGHTS), and checks that it is the file id names and at least size
// bytes long. Unlike Open it needs no access to the creator's /proc
// entry. The region takes fd over: CloseFD and Close close it, and
// FromFD closes it when it fails.
func FromFD(fd int, id Identity, size int) (*Region, error) {
	r, err := mapFile(fd, size)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	if r.id != id {
		r.Close()
		return nil, fmt.Errorf("received descriptor is %v, not the shared memory of %v", r.id, id)
	}
	return r, nil
}
