//go:build linux && race

package shm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/race/racetest"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/shm"
	"github.com/gocoll/gocoll/internal/wire"
)

// sink keeps the plain read of TestRaceReports from being dropped.
var sink byte

// TestRaceReports: what process_vm_readv moves is reported to the
// race detector, by the reader as a write of the buffer it reads into,
// and by the writer as a read of the payload, which the reader reads
// while WriteMessage waits. A Go access to either buffer during the call
// is a race; before it, none. The link pair is in this process, which
// CMA reads as it would another.
func TestRaceReports(t *testing.T) {
	const n = 2 * shm.CMAThreshold
	racetest.Run(t, []racetest.Case{
		{
			Name:  "read",
			Frame: "shm.(*link).vmRead",
			Prepare: func(t *testing.T) (touch, hidden func()) {
				a, b := linktest.Pair(t, shm.New())
				written := async(func() error { return a.WriteMessage(context.Background(), header(1, n), make([]byte, n)) })
				p := make([]byte, n)
				return func() { sink = p[n/2] }, func() {
					var h wire.Header
					require.NoError(t, b.ReadHeader(&h))
					require.NoError(t, b.ReadPayload(p))
					require.NoError(t, <-written)
				}
			},
		},
		{
			Name:  "write",
			Frame: "shm.(*link).write",
			Prepare: func(t *testing.T) (touch, hidden func()) {
				a, b := linktest.Pair(t, shm.New())
				read := async(func() error {
					var h wire.Header
					if err := b.ReadHeader(&h); err != nil {
						return err
					}
					return b.ReadPayload(make([]byte, n))
				})
				payload := make([]byte, n)
				return func() { payload[n/2] = 1 }, func() {
					require.NoError(t, a.WriteMessage(context.Background(), header(1, n), payload))
					require.NoError(t, <-read)
				}
			},
		},
	})
}
