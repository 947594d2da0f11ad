//go:build !linux

package core

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/gocoll/gocoll/internal/shmem"
)

// knocker: segments exist on Linux only (see knock_linux.go).
type knocker struct{ heard atomic.Uint64 }

func newKnocker(id shmem.Identity, rank int, seq *atomic.Uint32, sleeping []*atomic.Uint32) (*knocker, error) {
	return nil, errors.ErrUnsupported
}

func (k *knocker) park(d time.Duration) {}
func (k *knocker) knock()               {}
func (k *knocker) close()               {}
