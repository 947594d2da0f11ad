package accept

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/ratelog"
	"github.com/gocoll/gocoll/internal/testutil"
	"github.com/gocoll/gocoll/internal/transport"
)

// TestIdleConnectionsAreBounded opens many connections that never start
// their handshake: the listener holds at most MaxHandshakes of them,
// logs the cuts a bounded number of times, and still admits a real peer
// while the flood is connected.
func TestIdleConnectionsAreBounded(t *testing.T) {
	const flood = 500
	var log testutil.SyncBuffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Admit waits for one byte: the flood never sends it, the real peer does.
	l := Serve(ln, Config{Net: "test", Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Admit: func(c net.Conn) (transport.Link, error) {
			c.SetDeadline(time.Now().Add(time.Minute))
			if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
				return nil, err
			}
			return closeOnly{}, nil
		}})
	defer l.Close()
	goroutines := runtime.NumGoroutine()

	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		conns = append(conns, c)
	}
	require.Eventually(t, func() bool { return l.Dropped() == flood-transport.MaxHandshakes },
		30*time.Second, 10*time.Millisecond, "dropped %d of %d", l.Dropped(), flood)
	l.mu.Lock()
	pending := l.pending.Len()
	l.mu.Unlock()
	require.LessOrEqual(t, pending, transport.MaxHandshakes)
	// The cut connections' handshake goroutines end once they see their
	// connection closed, a moment after the cut: wait for them.
	require.Eventually(t, func() bool { return runtime.NumGoroutine()-goroutines < transport.MaxHandshakes+16 },
		30*time.Second, 10*time.Millisecond, "%d goroutines more than before the flood", runtime.NumGoroutine()-goroutines)

	real, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer real.Close()
	_, err = real.Write([]byte{1})
	require.NoError(t, err)
	lk, err := l.Accept()
	require.NoError(t, err, "a real peer was not admitted while the flood was connected")
	lk.Close()
	require.LessOrEqual(t, bytes.Count([]byte(log.String()), []byte("\n")), ratelog.Burst+1,
		"the cuts must not be logged one by one:\n%s", log.String())
	require.True(t, strings.Contains(log.String(), "too many handshakes"), log.String())
}

// closeOnly is a link of which the test only calls Close.
type closeOnly struct{ transport.Link }

func (closeOnly) Close() error { return nil }
