//go:build linux && race

package shm_test

import (
	"testing"

	"github.com/gocoll/gocoll/internal/race/racetest"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/shm"
)

// TestRaceReports: what process_vm_readv moves is reported to the
// race detector, by the reader as a write of the buffer it reads into,
// and by the writer as a read of the payload, which the reader reads
// while WriteMessage waits. A Go access to either buffer during the call
// is a race; before it, none. The link pair is in this process, which
// CMA reads as it would another.
func TestRaceReports(t *testing.T) {
	pair := func(t *testing.T) (a, b transport.Link) { return linktest.Pair(t, shm.New(shm.WithCMA())) }
	racetest.Run(t, linktest.RaceCases(pair, 2*shm.CMAThreshold, "shm.(*link).vmRead", "shm.(*link).write"))
}
