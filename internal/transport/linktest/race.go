package linktest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/race/racetest"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// RaceCases are the cases of a transport's test of its reports to the
// race detector (racetest.Run), for a transport that moves payloads of n
// bytes with system calls the detector cannot see: "read", a Go write of
// the buffer that a link of pair's reads a payload into, which must be
// reported naming readFrame; and "write", a Go write of the payload that
// a link writes out, naming writeFrame.
func RaceCases(pair func(t *testing.T) (a, b transport.Link), n int, readFrame, writeFrame string) []racetest.Case {
	h := header(1, 0, n)
	return []racetest.Case{
		{
			Name:  "read",
			Frame: readFrame,
			Prepare: func(t *testing.T) (touch, hidden func()) {
				a, b := pair(t)
				written := make(chan error, 1)
				go func() { written <- a.WriteMessage(context.Background(), h, make([]byte, n)) }()
				p := make([]byte, n)
				return func() { p[n/2] = 1 }, func() {
					var got wire.Header
					require.NoError(t, b.ReadHeader(&got))
					require.NoError(t, b.ReadPayload(p))
					require.NoError(t, <-written)
				}
			},
		},
		{
			Name:  "write",
			Frame: writeFrame,
			Prepare: func(t *testing.T) (touch, hidden func()) {
				a, b := pair(t)
				read := make(chan error, 1)
				go func() {
					var got wire.Header
					err := b.ReadHeader(&got)
					if err == nil {
						err = b.ReadPayload(make([]byte, n))
					}
					read <- err
				}()
				payload := make([]byte, n)
				return func() { payload[n/2] = 1 }, func() {
					require.NoError(t, a.WriteMessage(context.Background(), h, payload))
					require.NoError(t, <-read)
				}
			},
		},
	}
}
