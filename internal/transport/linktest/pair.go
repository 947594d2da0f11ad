package linktest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/auth"
)

// Config returns the configuration of rank in the job of the suite's
// links, which the transports' own tests share: a secret, a handshake
// timeout of five seconds, and a logger that writes text lines to log
// (nowhere if log is nil).
func Config(rank int, log io.Writer) transport.Config {
	if log == nil {
		log = io.Discard
	}
	return transport.Config{
		Rank:             rank,
		JobID:            JobID,
		Secret:           secret,
		HandshakeTimeout: 5 * time.Second,
		Logger:           slog.New(slog.NewTextHandler(log, nil)),
	}
}

// Params returns the auth parameters of rank in Config's job, for tests
// that speak the handshake themselves (transport/auth) to send a link
// what no transport would.
func Params(rank int) auth.Params {
	return auth.Params{Secret: secret, JobID: JobID, Service: auth.ServiceLink, Rank: rank}
}

// Pair returns the two ends of a new link of tr: a dialed by rank 0, b
// accepted by rank 1, both configured by Config. The listener and both
// ends are closed when t ends.
func Pair(t testing.TB, tr transport.Transport) (a, b transport.Link) {
	t.Helper()
	ln, err := tr.Listen("", Config(acceptRank, nil))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	accepted := AcceptAsync(ln)
	a, err = tr.Dial(context.Background(), ln.Addr(), acceptRank, Config(dialRank, nil))
	require.NoError(t, err)
	b = <-accepted
	require.NotNil(t, b, "Accept failed")
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b
}

// AcceptAsync calls ln.Accept in a goroutine. The channel delivers the
// link, or nil if Accept failed.
func AcceptAsync(ln transport.Listener) <-chan transport.Link {
	ch := make(chan transport.Link, 1)
	go func() {
		l, err := ln.Accept()
		if err != nil {
			l = nil
		}
		ch <- l
	}()
	return ch
}
