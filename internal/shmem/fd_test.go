//go:build linux

package shmem

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestFromFD(t *testing.T) {
	const size = 1 << 16
	r, err := Create("", size)
	require.NoError(t, err)
	defer r.Close()
	r.Uint64(64).Store(42)

	tests := []struct {
		name string
		id   func(Identity) Identity
		size int
		err  string
	}{
		{"same file", func(id Identity) Identity { return id }, size, ""},
		{"wrong file", func(id Identity) Identity { id.Ino++; return id }, size, "not the shared memory"},
		{"too short", func(id Identity) Identity { return id }, 2 * size, "holds 65536 bytes, want 131072"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// What a receiver of SCM_RIGHTS holds: a descriptor of its own.
			fd, err := unix.Dup(r.FD())
			require.NoError(t, err)
			other, err := FromFD(fd, tc.id(r.Identity()), tc.size)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				var st unix.Stat_t
				require.ErrorIs(t, unix.Fstat(fd, &st), unix.EBADF, "FromFD closes the descriptor it failed on")
				return
			}
			require.NoError(t, err)
			defer other.Close()
			require.Equal(t, fd, other.FD())
			require.NoError(t, other.CloseFD())
			require.Equal(t, uint64(42), other.Uint64(64).Load(), "the mapping outlives the descriptor")
			other.Uint32(128).Store(7)
			require.Equal(t, uint32(7), r.Uint32(128).Load())
		})
	}
}
