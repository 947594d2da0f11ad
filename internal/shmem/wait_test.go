package shmem

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWaiter runs the waiter against a counter that a goroutine advances
// (or does not), with spinning budgets that make it sleep at once or
// never, and with the peer in this process or not. It checks what a wait
// returns, never how long it took.
func TestWaiter(t *testing.T) {
	errStop := errors.New("stop")
	tests := []struct {
		name    string
		spinFor time.Duration
		yield   Yield
		start   uint64 // the counter before the wait
		base    uint64
		need    uint64
		advance uint64 // what the peer adds, 1 at a time
		ring    bool   // whether the peer rings the bell
		park    bool   // the waiter parks (SetPark) and the bell knocks
		// stopAdvances makes stop advance the counter by need and report
		// errStop: a peer that stored its last value and went.
		stopAdvances bool
		wantErr      error
	}{
		{name: "satisfied already", start: 7, need: 7},
		{name: "peer advances, polling", spinFor: time.Hour, yield: ToProcess, need: 1000, advance: 1000},
		{name: "peer advances, yielding to goroutines", spinFor: time.Hour, yield: ToGoroutines, need: 1000, advance: 1000},
		{name: "peer advances, waiting beside work", spinFor: time.Hour, yield: ToProcess | Beside, need: 1000, advance: 1000},
		{name: "peer advances, sleeping on a timer", yield: ToProcess | Beside, need: 3, advance: 3},
		{name: "peer advances, sleeping", need: 3, advance: 3, ring: true},
		{name: "peer advances, parking", need: 3, advance: 3, ring: true, park: true},
		{name: "base offsets the counter", spinFor: time.Hour, start: 5, base: 5, need: 2, advance: 2},
		{name: "counter wraps", spinFor: time.Hour, start: 1<<64 - 1, base: 1<<64 - 1, need: 2, advance: 2},
		{name: "stop", spinFor: time.Hour, need: 10, wantErr: errStop},
		{name: "the condition holds when stop reports", spinFor: time.Hour, need: 2, stopAdvances: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var idx atomic.Uint64
			idx.Store(tc.start)
			var sleepers, seq atomic.Uint32
			bell := Bell{Sleepers: &sleepers, Seq: &seq}
			w := NewWaiter(tc.spinFor, 10*time.Millisecond, false)
			if tc.park {
				// A sleep of an hour: only a knock ends it.
				w = NewWaiter(tc.spinFor, time.Hour, false)
				knocks := make(chan struct{}, 1)
				bell.Knock = func() {
					select {
					case knocks <- struct{}{}:
					default:
					}
				}
				w.SetPark(func(time.Duration) { <-knocks })
			}
			go func() {
				for range tc.advance {
					idx.Add(1)
					if tc.ring {
						bell.Ring()
					}
				}
			}()
			stop := func() error {
				if tc.stopAdvances {
					idx.Add(tc.need)
					return errStop
				}
				if tc.wantErr != nil {
					return errStop
				}
				return nil
			}
			got, err := w.Wait(&idx, tc.base, tc.need, bell, tc.yield, stop)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.GreaterOrEqual(t, got-tc.base, tc.need)
			moved := tc.advance
			if tc.stopAdvances {
				moved = tc.need
			}
			require.LessOrEqual(t, got-tc.start, moved)
			require.Zero(t, sleepers.Load(), "a waiter that is done no longer counts as a sleeper")
		})
	}
}

// TestWaiterBursts: a waiter polls longer between yields that find
// nothing else to run, up to burstMax, or burstCrowded where the
// processes cannot all have a CPU; and shorter after a yield that ran
// another thread and ended the wait, down to burstMin.
func TestWaiterBursts(t *testing.T) {
	tests := []struct {
		crowded     bool
		first, most int
	}{
		{false, burstMax, burstMax},
		{true, burstMin, burstCrowded},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("crowded=%v", tt.crowded), func(t *testing.T) {
			w := NewWaiter(time.Hour, time.Hour, tt.crowded)
			require.Equal(t, tt.first, w.burst, "the first burst")
			for range 20 {
				w.adapt(false, false) // a yield that returned at once
			}
			require.Equal(t, tt.most, w.burst, "after yields that found nothing to run")
			w.adapt(true, false) // ran another thread, but the wait goes on
			require.Equal(t, tt.most, w.burst, "after a yield that did not end the wait")
			for range 20 {
				w.adapt(true, true) // ran the peer, which ended the wait
			}
			require.Equal(t, burstMin, w.burst, "after yields that ran the peer")
		})
	}
}

// TestBellWake: a sleeper that announced itself is woken by Ring; Wake
// wakes whether or not anyone announced itself.
func TestBellWake(t *testing.T) {
	var sleepers, seq atomic.Uint32
	bell := Bell{Sleepers: &sleepers, Seq: &seq}
	bell.Ring() // nobody sleeps: no change
	require.Zero(t, seq.Load())
	bell.Wake()
	require.Equal(t, uint32(1), seq.Load())
	sleepers.Add(1)
	bell.Ring()
	require.Equal(t, uint32(2), seq.Load())
}

// TestParker: a Wake ends the park under way, a Wake before a park ends
// that park at once and only that one, and a park nobody wakes ends at
// its time.
func TestParker(t *testing.T) {
	p := NewParker()
	parked := make(chan struct{})
	go func() {
		p.Park(time.Hour)
		close(parked)
	}()
	p.Wake()
	<-parked

	p.Wake()
	p.Wake() // one wake-up pending at most
	p.Park(time.Hour)
	require.Empty(t, p.c, "the second Wake left a wake-up for a later park")
	p.Park(time.Millisecond) // nothing wakes this one: it ends at its time
}
