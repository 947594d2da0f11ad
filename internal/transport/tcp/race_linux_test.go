//go:build !netpoll && race

package tcp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/race/racetest"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/tcp"
	"github.com/gocoll/gocoll/internal/wire"
)

// sink keeps the plain read of TestRaceReports from being dropped.
var sink byte

// TestRaceReports: what the raw system calls of a plain TCP link
// move is reported to the race detector, by the reader as a write of
// the bytes that recvfrom put in the caller's buffer, and by the writer
// as a read of the bytes that sendmsg took from the payload. A Go access
// to either buffer during the call is a race; before it, none. The read
// buffer is small, so that the middle of the payload goes by recvfrom
// straight into the caller's buffer, not by a copy the detector sees.
func TestRaceReports(t *testing.T) {
	const n = 64 << 10
	pair := func(t *testing.T) (a, b transport.Link) {
		tr, err := tcp.New(tcp.WithReadBufferSize(4096))
		require.NoError(t, err)
		return linktest.Pair(t, tr)
	}
	racetest.Run(t, []racetest.Case{
		{
			Name:  "read",
			Frame: "tcp.(*sockReader).readNow",
			Prepare: func(t *testing.T) (touch, hidden func()) {
				a, b := pair(t)
				written := make(chan error, 1)
				go func() { written <- a.WriteMessage(context.Background(), header(n), make([]byte, n)) }()
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
			Frame: "tcp.(*sockWriter).write",
			Prepare: func(t *testing.T) (touch, hidden func()) {
				a, b := pair(t)
				read := make(chan error, 1)
				go func() {
					var h wire.Header
					err := b.ReadHeader(&h)
					if err == nil {
						err = b.ReadPayload(make([]byte, n))
					}
					read <- err
				}()
				payload := make([]byte, n)
				return func() { payload[n/2] = 1 }, func() {
					require.NoError(t, a.WriteMessage(context.Background(), header(n), payload))
					require.NoError(t, <-read)
				}
			},
		},
	})
}
