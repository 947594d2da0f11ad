//go:build linux

package regmem

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAllocFindFree(t *testing.T) {
	b, err := Alloc(100)
	require.NoError(t, err)
	require.Len(t, b, 100)
	require.Equal(t, make([]byte, 100), b, "fresh memory is zeroed")

	e, pin, ok := Find(b[10:30])
	require.True(t, ok)
	require.Equal(t, 10, e.Off)
	require.Equal(t, 20, e.Len)
	require.Equal(t, os.Getpagesize(), e.Size)
	require.ErrorIs(t, Free(b), ErrInUse, "a pinned allocation")
	pin.Release()

	_, _, ok = Find(make([]byte, 10))
	require.False(t, ok, "memory of the Go heap")
	require.ErrorIs(t, Free(b[1:]), ErrNotAllocated, "the middle of an allocation")
	require.NoError(t, Free(b))
	require.ErrorIs(t, Free(b), ErrNotAllocated, "a second Free")
	_, _, ok = Find(b)
	require.False(t, ok, "freed memory")
}

// TestFreedMemoryIsPrivate: after Free the owner's slice reads zeros, and
// what it writes there does not reach another mapping of the memory.
func TestFreedMemoryIsPrivate(t *testing.T) {
	b, err := Alloc(64)
	require.NoError(t, err)
	e, pin, ok := Find(b)
	require.True(t, ok)
	peer, v, err := Map(os.Getpid(), e)
	require.NoError(t, err)
	defer v.Release()
	pin.Release()

	b[0] = 7
	require.Equal(t, byte(7), peer[0], "the mappings share memory")
	require.NoError(t, Free(b))
	require.Equal(t, byte(0), b[0], "freed memory reads zeros")
	b[1] = 9
	require.Equal(t, byte(7), peer[0])
	require.Equal(t, byte(0), peer[1], "a write to freed memory stays in its process")
}

func TestMapRefusesBadExtents(t *testing.T) {
	b, err := Alloc(4096)
	require.NoError(t, err)
	e, pin, ok := Find(b)
	require.True(t, ok)
	pin.Release()
	defer Free(b)
	tests := []struct {
		name   string
		change func(e *Extent)
	}{
		{"no allocation", func(e *Extent) { e.Serial = 0 }},
		{"past the end", func(e *Extent) { e.Off = 4000; e.Len = 200 }},
		{"negative offset", func(e *Extent) { e.Off = -1 }},
		{"longer than the file", func(e *Extent) { e.Size, e.Len = 8192, 8192 }},
		{"another file", func(e *Extent) { e.ID.Ino++ }},
		{"a closed descriptor", func(e *Extent) { e.FD = 1 << 20 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := e
			bad.Serial += 1000 // not the cached mapping
			tt.change(&bad)
			_, _, err := Map(os.Getpid(), bad)
			require.Error(t, err)
		})
	}
}

// TestViewsAreBounded: mappings that no call pins go, oldest first, once
// there are more than maxViews; pinned ones stay.
func TestViewsAreBounded(t *testing.T) {
	var pinned *View
	for i := range maxViews + 8 {
		b, err := Alloc(8)
		require.NoError(t, err)
		e, pin, _ := Find(b)
		pin.Release()
		_, v, err := Map(os.Getpid(), e)
		require.NoError(t, err)
		if i == 0 {
			pinned = v
		} else {
			v.Release()
		}
		require.NoError(t, Free(b))
	}
	views.mu.Lock()
	defer views.mu.Unlock()
	require.LessOrEqual(t, len(views.list), maxViews)
	require.Contains(t, views.list, pinned, "a pinned mapping")
	pinned.pins--
}

// TestSteadyStateAllocatesNothing: finding a registered buffer and
// mapping one that is mapped already allocate nothing.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	b, err := Alloc(1 << 16)
	require.NoError(t, err)
	defer Free(b)
	e, pin, _ := Find(b)
	pin.Release()
	_, v, err := Map(os.Getpid(), e)
	require.NoError(t, err)
	v.Release()
	allocs := testing.AllocsPerRun(50, func() {
		_, pin, _ := Find(b)
		_, v, _ := Map(os.Getpid(), e)
		v.Release()
		pin.Release()
	})
	require.Zero(t, allocs)
}
