package linktest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// testPoll checks a Poller's non-blocking side: Poll sees Nothing on a
// quiet link, then a message grow to Whole (all arrived, even if larger
// than the link's own buffer) or Large (larger than any link buffers,
// unless the link can deliver it whole as it is: a shm link's CMA part)
// without consuming it; ReadHeader and ReadPayload then take it, also
// with a spin (SetSpin); WaitReadable returns when bytes arrive and when
// Wake is called, before or during the wait; Poll after Close fails. A
// link that is no Poller passes.
func testPoll(t *testing.T, e *env) {
	a, b := e.pair(t)
	p, ok := b.(transport.Poller)
	if !ok {
		return // a Link need not be a Poller
	}
	var h wire.Header
	got, err := p.Poll(&h)
	require.NoError(t, err)
	require.Equal(t, transport.Nothing, got, "Poll on a quiet link")

	holds := e.holds
	if holds == 0 {
		holds = 1 << 20 // a socket's: from 10 KiB to under 64 MiB
	}
	for _, c := range []struct {
		n    int
		spin time.Duration
	}{
		{0, 0},
		{100, 0},
		// Larger than a small read buffer, but all in a socket.
		{10 << 10, 0},
		// More than the link holds (WithLarge).
		{e.large, 0},
		{e.large, time.Millisecond},
	} {
		want := transport.Whole
		if c.n > holds {
			want = transport.Large
		}
		p.SetSpin(c.spin, c.spin > 0)
		sent := header(5, uint64(c.n), c.n)
		payload := pattern(make([]byte, c.n), uint64(c.n))
		wait := e.asyncOK(func() error { return a.WriteMessage(context.Background(), sent, payload) })
		arrival := pollUntil(t, p, &h, want)
		require.Equal(t, want, arrival, "%d-byte message", c.n)
		require.Equal(t, sent, h, "the header Poll decoded")
		// Poll does not consume: ReadHeader returns the same header.
		var again wire.Header
		require.NoError(t, p.ReadHeader(&again))
		require.Equal(t, sent, again)
		data := make([]byte, c.n)
		require.NoError(t, p.ReadPayload(data))
		require.NoError(t, wait(t))
		require.True(t, bytes.Equal(payload, data), "payload of %d bytes differs", c.n)
	}

	// Wake before the wait, and during it.
	p.Wake()
	require.NoError(t, p.WaitReadable(), "WaitReadable after Wake")
	woken := e.async(p.WaitReadable)
	settle()
	p.Wake()
	require.NoError(t, woken(t), "WaitReadable woken")

	require.NoError(t, p.Close())
	_, err = p.Poll(&h)
	require.ErrorIs(t, err, net.ErrClosed, "Poll after Close")
	require.ErrorIs(t, p.WaitReadable(), net.ErrClosed, "WaitReadable after Close")
}

// pollUntil polls p, waiting for bytes between polls, until it sees want
// or a later state.
func pollUntil(t *testing.T, p transport.Poller, h *wire.Header, want transport.Arrival) transport.Arrival {
	t.Helper()
	for range 100000 {
		got, err := p.Poll(h)
		require.NoError(t, err)
		if got >= want || got == transport.Large {
			return got
		}
		if err := p.WaitReadable(); err != nil && !errors.Is(err, net.ErrClosed) {
			require.NoError(t, err)
		}
	}
	require.FailNow(t, "Poll never saw the message")
	return transport.Nothing
}
