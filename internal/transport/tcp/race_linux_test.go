//go:build !netpoll && race

package tcp_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/race/racetest"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/tcp"
)

// TestRaceReports: what the raw system calls of a plain TCP link
// move is reported to the race detector, by the reader as a write of
// the bytes that recvfrom put in the caller's buffer, and by the writer
// as a read of the bytes that sendmsg took from the payload. A Go access
// to either buffer during the call is a race; before it, none. The read
// buffer is small, so that the middle of the payload goes by recvfrom
// straight into the caller's buffer, not by a copy the detector sees.
func TestRaceReports(t *testing.T) {
	pair := func(t *testing.T) (a, b transport.Link) {
		tr, err := tcp.New(tcp.WithReadBufferSize(4096))
		require.NoError(t, err)
		return linktest.Pair(t, tr)
	}
	racetest.Run(t, linktest.RaceCases(pair, 64<<10, "tcp.(*sockReader).readNow", "tcp.(*sockWriter).write"))
}
