package rendezvous

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/ratelog"
	"github.com/gocoll/gocoll/internal/transport"
)

// TestStoreBoundsHandshakes connects many clients that never say a word:
// the store keeps at most max(MaxHandshakes, size) of them, logs the cuts
// a bounded number of times, and a real rank still joins during the flood.
func TestStoreBoundsHandshakes(t *testing.T) {
	const flood = 300
	f := serve(t, 2)
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.Dial("tcp", f.addr)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	waitFor(t, "the flood to be cut", func() bool { return f.srv.Dropped() == flood-transport.MaxHandshakes })
	f.srv.mu.Lock()
	handshaking := f.srv.handshakes.Len()
	f.srv.mu.Unlock()
	require.LessOrEqual(t, handshaking, transport.MaxHandshakes)

	f.dial(t, 1) // a real rank gets in while the flood is connected
	require.LessOrEqual(t, strings.Count(f.logs.String(), "too many handshakes"), ratelog.Burst+1, f.logs.String())
}
