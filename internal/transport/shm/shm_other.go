//go:build !linux

package shm

import (
	"context"
	"fmt"

	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/transport"
)

// Listen fails: shared-memory links need Linux.
func (t *Transport) Listen(addr string, cfg transport.Config) (transport.Listener, error) {
	return nil, fmt.Errorf("shm: listen %q: %w", addr, shmem.ErrUnsupported)
}

// Dial fails: shared-memory links need Linux.
func (t *Transport) Dial(ctx context.Context, addr string, peer int, cfg transport.Config) (transport.Link, error) {
	return nil, fmt.Errorf("shm: dial %q: %w", addr, shmem.ErrUnsupported)
}
