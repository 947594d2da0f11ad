package core

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/testutil"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/tcp"
)

// TestIntrudersAreRefused dials a rank's link listener with a wrong secret
// and with random bytes: both are refused and logged, and the job's own
// traffic still flows.
func TestIntrudersAreRefused(t *testing.T) {
	var log testutil.SyncBuffer
	cs, err := NewLocal(2, WithTransport("tcp"), WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	require.NoError(t, err)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	target := cs[0].ep.addrs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("wrong secret", func(t *testing.T) {
		cfg := cs[0].ep.linkCfg
		cfg.Secret = []byte("not the job's secret")
		_, err := newTCP(t).Dial(ctx, target, 1, cfg)
		require.ErrorIs(t, err, transport.ErrRefused)
	})
	t.Run("other job", func(t *testing.T) {
		cfg := cs[0].ep.linkCfg
		cfg.JobID++
		_, err := newTCP(t).Dial(ctx, target, 1, cfg)
		require.ErrorIs(t, err, transport.ErrRefused)
	})
	t.Run("random bytes", func(t *testing.T) {
		conn, err := net.Dial("tcp", target)
		require.NoError(t, err)
		defer conn.Close()
		junk := make([]byte, 4096)
		rand.Read(junk)
		conn.Write(junk)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = conn.Read(make([]byte, 1024))
		for err == nil { // whatever the listener answers, it must hang up
			_, err = conn.Read(make([]byte, 1024))
		}
		var ne net.Error
		if ok := asNetError(err, &ne); ok {
			require.False(t, ne.Timeout(), "the listener kept the connection open")
		}
	})

	msg := []byte("still here")
	require.NoError(t, cs[0].Send(ctx, 1, 0, msg))
	buf := make([]byte, 16)
	st, err := cs[1].Recv(ctx, 0, 0, buf)
	n := st.Bytes
	require.NoError(t, err)
	require.Equal(t, msg, buf[:n])
	require.Eventually(t, func() bool { return bytes.Count([]byte(log.String()), []byte("\n")) >= 3 },
		5*time.Second, 10*time.Millisecond, "every refused connection is logged; log:\n%s", log.String())
}

func asNetError(err error, target *net.Error) bool {
	ne, ok := err.(net.Error)
	if ok {
		*target = ne
	}
	return ok
}

func newTCP(t *testing.T) transport.Transport {
	tr, err := tcp.New()
	require.NoError(t, err)
	return tr
}
