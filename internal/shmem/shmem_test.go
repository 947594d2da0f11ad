//go:build linux

package shmem

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCreateOpen(t *testing.T) {
	const size = 1 << 16
	r, err := Create("", size)
	require.NoError(t, err)
	defer r.Close()
	require.Len(t, r.Bytes(), size)
	for _, b := range r.Bytes() {
		require.Zero(t, b)
	}
	r.Uint64(64).Store(42)

	other, err := Open(os.Getpid(), r.FD(), r.Identity(), size)
	require.NoError(t, err)
	defer other.Close()
	require.Equal(t, uint64(42), other.Uint64(64).Load(), "a second mapping sees the first one's store")
	other.Uint32(128).Store(7)
	require.Equal(t, uint32(7), r.Uint32(128).Load())

	t.Run("leaves nothing in the directory", func(t *testing.T) {
		dir := t.TempDir()
		r, err := Create(dir, 4096)
		require.NoError(t, err)
		defer r.Close()
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries)
	})
	t.Run("wrong file", func(t *testing.T) {
		id := r.Identity()
		id.Ino++
		_, err := Open(os.Getpid(), r.FD(), id, size)
		require.ErrorContains(t, err, "not the shared memory")
	})
	t.Run("too short", func(t *testing.T) {
		_, err := Open(os.Getpid(), r.FD(), r.Identity(), 2*size)
		require.ErrorContains(t, err, "holds 65536 bytes, want 131072")
	})
	t.Run("closed descriptor", func(t *testing.T) {
		r, err := Create("", 4096)
		require.NoError(t, err)
		defer r.Close()
		fd := r.FD()
		require.NoError(t, r.CloseFD())
		require.Equal(t, -1, r.FD())
		_, err = Open(os.Getpid(), fd, r.Identity(), 4096)
		require.Error(t, err)
	})
	t.Run("bad size", func(t *testing.T) {
		_, err := Create("", 0)
		require.Error(t, err)
	})
}

// TestNoSpace fills a small tmpfs of the test's own when it may mount one
// (root in a mount namespace), and otherwise asks for more than /dev/shm
// holds: both must be ErrNoSpace, never a SIGBUS at first touch.
func TestNoSpace(t *testing.T) {
	t.Run("larger than the file system", func(t *testing.T) {
		if strconv.IntSize < 64 {
			t.Skip("a size larger than any file system needs 64-bit ints")
		}
		huge := min(1<<50, math.MaxInt)
		_, err := Create("", huge)
		require.ErrorIs(t, err, ErrNoSpace)
		require.ErrorContains(t, err, "/dev/shm")
	})
	t.Run("full tmpfs", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "tmpfs")
		require.NoError(t, os.Mkdir(dir, 0o700))
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot mount a tmpfs of the test's own (%v: %s); the case above covers the free-space check", err, out)
		}
		defer exec.Command("umount", dir).Run()
		first, err := Create(dir, 768<<10)
		require.NoError(t, err)
		defer first.Close()
		_, err = Create(dir, 512<<10)
		require.ErrorIs(t, err, ErrNoSpace)
	})
}

func TestWaitWake(t *testing.T) {
	r, err := Create("", 4096)
	require.NoError(t, err)
	defer r.Close()
	w := r.Uint32(0)
	var ts Timespec

	t.Run("value changed", func(t *testing.T) {
		require.False(t, Wait(w, 1, time.Second, &ts), "*w is 0, not 1: no sleep")
	})
	t.Run("timeout", func(t *testing.T) {
		require.False(t, Wait(w, 0, time.Millisecond, &ts))
	})
	t.Run("woken", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Add(1)
		woken := make(chan bool, 1)
		go func() {
			defer wg.Done()
			var ts Timespec
			for w.Load() == 0 {
				Wait(w, 0, 10*time.Second, &ts)
			}
			woken <- true
		}()
		time.Sleep(10 * time.Millisecond)
		w.Store(1)
		Wake(w, 1)
		wg.Wait()
		require.True(t, <-woken)
	})
	t.Run("no allocation", func(t *testing.T) {
		allocs := testing.AllocsPerRun(100, func() { Wait(w, 5, time.Millisecond, &ts) })
		require.Zero(t, allocs)
	})
}

func TestAlive(t *testing.T) {
	require.True(t, Alive(os.Getpid()))
	cmd := exec.Command("true")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	// Exited but not reaped: a zombie, which is not alive.
	deadline := time.Now().Add(10 * time.Second)
	for Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.False(t, Alive(pid), "zombie")
	require.NoError(t, cmd.Wait())
	require.False(t, Alive(pid), "reaped")
}
