package launch

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreePortBelowTheEphemeralRange: where the kernel says which ports
// it hands to outgoing connections, FreePort picks one below them, which
// no connection of another process can take between the look and the
// port's use, and one that is free.
func TestFreePortBelowTheEphemeralRange(t *testing.T) {
	lo, ok := ephemeralFrom()
	if !ok || lo-portsFrom < portTries {
		t.Skipf("the kernel's ephemeral ports are unknown here (from %d, %v): FreePort asks for port 0", lo, ok)
	}
	for range 20 {
		p, err := FreePort()
		require.NoError(t, err)
		require.GreaterOrEqual(t, p, portsFrom)
		require.Less(t, p, lo, "below the ephemeral range, which starts at %d", lo)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err, "port %d", p)
		l.Close()
	}
}
