//go:build race

package race_test

import (
	"testing"

	"github.com/gocoll/gocoll/internal/race"
	"github.com/gocoll/gocoll/internal/race/racetest"
)

// hiddenRead and hiddenWrite stand for code that the detector cannot see,
// which reads or writes s and reports it.
func hiddenRead(s []int64)  { race.ReadSlice(s) }
func hiddenWrite(s []int64) { race.WriteSlice(s) }

// sink keeps the plain read of TestReports from being dropped.
var sink int64

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
	})
}
