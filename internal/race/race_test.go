//go:build race

package race_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocoll/gocoll/internal/race"
	"github.com/gocoll/gocoll/internal/race/racetest"
)

// hiddenRead and hiddenWrite stand for code that the detector cannot see,
// which reads or writes s and reports it.
func hiddenRead(s []int64)  { race.ReadSlice(s) }
func hiddenWrite(s []int64) { race.WriteSlice(s) }

// sink keeps the plain read of TestReports from being dropped.
var sink int64

// waitLong stands for the waiting of a link's call before its hidden
// access: it sleeps, so that a touch begun beside it has been made, and
// then synchronises enough (65536 atomic adds on each of eight
// goroutines) that the detector, whose history is bounded, no longer
// remembers that touch. Sleeping orders nothing for the detector.
func waitLong() {
	time.Sleep(10 * time.Millisecond)
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1 << 16 {
				n.Add(1)
			}
		})
	}
	wg.Wait()
}

// TestReports: a reported read conflicts with a plain write, a reported
// write with a plain read, and neither with an access ordered before it.
func TestReports(t *testing.T) {
	racetest.Run(t, []racetest.Case{
		{
			Name:  "read",
			Frame: "race_test.hiddenRead",
			Prepare: func(*testing.T) (touch, hidden func()) {
				s := make([]int64, 4)
				return func() { s[3] = 1 }, func() { hiddenRead(s) }
			},
		},
		{
			Name:  "write",
			Frame: "race_test.hiddenWrite",
			Prepare: func(*testing.T) (touch, hidden func()) {
				s := make([]int64, 4)
				return func() { sink = s[3] }, func() { hiddenWrite(s) }
			},
		},
		{
			Name:  "read after a long wait",
			Frame: "race_test.hiddenRead",
			Prepare: func(*testing.T) (touch, hidden func()) {
				s := make([]int64, 4)
				return func() { s[3] = 1 }, func() { waitLong(); hiddenRead(s) }
			},
		},
	})
}
