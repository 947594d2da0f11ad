package core

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/shmem"
)

// TestKnocker: a rank's knock ends another's park and counts as heard
// there, once per sleep, and never on a rank that does not sleep; a
// knock that comes before the park ends the next park at once; a knock
// wakes a rank that sleeps on the futex, having no socket; and closing a
// knocker frees its socket's name.
func TestKnocker(t *testing.T) {
	id := shmem.Identity{Dev: 1, Ino: uint64(time.Now().UnixNano())} // a name no segment has
	var seq atomic.Uint32
	sleeping := []*atomic.Uint32{new(atomic.Uint32), new(atomic.Uint32)}
	k0, err := newKnocker(id, 0, &seq, sleeping)
	require.NoError(t, err)
	k1, err := newKnocker(id, 1, &seq, sleeping)
	require.NoError(t, err)
	defer k1.close()

	t.Run("knock ends a park", func(t *testing.T) {
		done := make(chan struct{})
		sleeping[0].Store(1)
		go func() {
			k0.park(time.Minute) // a lost knock fails the test below, a minute late
			close(done)
		}()
		k1.knock()
		k1.knock() // knocked on already: sends nothing
		<-done
		require.Eventually(t, func() bool { return k0.heard.Load() == 1 }, time.Minute, time.Millisecond)
		require.Equal(t, uint32(2), sleeping[0].Load(), "knocked on")
		sleeping[0].Store(0)
	})
	t.Run("no knock on a rank awake", func(t *testing.T) {
		k1.knock()
		k0.knock()
		require.Equal(t, uint32(0), sleeping[0].Load())
		require.Equal(t, uint32(0), sleeping[1].Load())
	})
	t.Run("early knock", func(t *testing.T) {
		sleeping[0].Store(1)
		k1.knock()
		require.Eventually(t, func() bool { return k0.heard.Load() == 2 }, time.Minute, time.Millisecond)
		k0.park(time.Minute)
		sleeping[0].Store(0)
	})
	t.Run("futex sleeper", func(t *testing.T) {
		woken := make(chan bool)
		go func() {
			var ts shmem.Timespec
			woken <- shmem.Wait(&seq, seq.Load(), time.Minute, &ts) // a minute unless woken
		}()
		// The sleeper may not sleep yet when a knock comes: knock until
		// it has woken, as a bell rings at every step.
		for {
			k1.knock()
			select {
			case got := <-woken:
				require.True(t, got, "the futex sleeper timed out: nothing woke it")
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	t.Run("close frees the name", func(t *testing.T) {
		k0.close()
		require.Eventually(t, func() bool {
			k, err := newKnocker(id, 0, &seq, sleeping)
			if err == nil {
				k.close()
			}
			return err == nil
		}, time.Minute, time.Millisecond)
	})
}
