package core

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/rendezvous"
	"github.com/gocoll/gocoll/internal/testutil"
	"github.com/gocoll/gocoll/internal/transport"
)

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// mapEnv is an environment for initFromEnv.
func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestSecretGuardsTheRendezvous starts rank 0 of a two-rank job whose
// secret comes from the environment or from WithSecret, and lets a
// stranger who does not know it claim rank 1 at the rendezvous: it must be
// refused, and the real rank 1 must still join.
func TestSecretGuardsTheRendezvous(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		opts   []Option
		forged []byte // the secret the stranger tries
	}{
		{name: "GOCOLL_SECRET", env: map[string]string{"GOCOLL_SECRET": "topsecret"}},
		{name: "WithSecret", opts: []Option{WithSecret([]byte("topsecret"))}},
		{name: "WithSecret, stranger has the environment's", env: map[string]string{"GOCOLL_SECRET": "old"},
			opts: []Option{WithSecret([]byte("topsecret"))}, forged: []byte("old")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := freeAddr(t)
			env := map[string]string{"GOCOLL_SIZE": "2", "GOCOLL_ADDR": addr, "GOCOLL_TIMEOUT": "30s"}
			for k, v := range tt.env {
				env[k] = v
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			comms := make([]*Comm, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			start := func(rank int) {
				e := map[string]string{"GOCOLL_RANK": strconv.Itoa(rank)}
				for k, v := range env {
					e[k] = v
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					comms[rank], errs[rank] = initFromEnv(ctx, mapEnv(e), tt.opts)
				}()
			}
			start(0)
			defer func() {
				wg.Wait()
				closeAtOnce(comms)
			}()

			identity := jobIdentity(mapEnv(env), "gocoll")
			stranger, err := rendezvous.Dial(ctx, addr, 1, 2, jobKey(tt.forged, identity))
			if err == nil {
				stranger.Close()
			}
			require.ErrorIs(t, err, rendezvous.ErrRefused, "a stranger without the secret joined the rendezvous as rank 1")

			start(1)
			wg.Wait()
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			require.NoError(t, comms[1].Send(ctx, 0, 0, []byte("hi")))
			buf := make([]byte, 2)
			_, err = comms[0].Recv(ctx, 1, 0, buf)
			require.NoError(t, err)
			require.Equal(t, "hi", string(buf))
		})
	}
}

// TestNoSecretWarnsOnce: a job without a secret says so, once per rank,
// and names how to set one; a job with one says nothing.
func TestNoSecretWarnsOnce(t *testing.T) {
	for _, secret := range []string{"", "s3cret"} {
		t.Run("secret="+secret, func(t *testing.T) {
			var log testutil.SyncBuffer
			env := map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "1", "GOCOLL_ADDR": freeAddr(t)}
			if secret != "" {
				env["GOCOLL_SECRET"] = secret
			}
			c, err := initFromEnv(context.Background(), mapEnv(env), []Option{WithLogger(slog.New(slog.NewTextHandler(&log, nil)))})
			require.NoError(t, err)
			require.NoError(t, c.Close())
			warnings := strings.Count(log.String(), "no job secret")
			if secret == "" {
				require.Equal(t, 1, warnings, "log:\n%s", log.String())
				require.Contains(t, log.String(), "GOCOLL_SECRET")
			} else {
				require.Zero(t, warnings, "log:\n%s", log.String())
			}
		})
	}
}

// TestStrangerCannotJoin starts a torchrun job without a secret, as
// torchrun users do, and lets a stranger dial rank 0's link port claiming
// to be rank 3, with an empty secret and with one it guessed: the job's
// identity keys its links, so the stranger is refused before it can send
// anything, and the job carries on.
func TestStrangerCannotJoin(t *testing.T) {
	const n = 4
	env := map[string]string{"WORLD_SIZE": strconv.Itoa(n), "MASTER_ADDR": "127.0.0.1",
		"TORCHELASTIC_RUN_ID": "run-4711", "GOCOLL_TIMEOUT": "30s", "GOCOLL_TRANSPORT": "tcp"}
	_, env["MASTER_PORT"], _ = net.SplitHostPort(freeAddr(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	comms := make([]*Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		e := map[string]string{"RANK": strconv.Itoa(r)}
		for k, v := range env {
			e[k] = v
		}
		wg.Go(func() {
			comms[r], errs[r] = initFromEnv(ctx, mapEnv(e), []Option{WithLogger(slog.New(slog.DiscardHandler))})
		})
	}
	wg.Wait()
	defer func() {
		closeAtOnce(comms)
	}()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}

	target := comms[0].ep.addrs[0]
	for _, secret := range []string{"", "run-4711"} {
		t.Run("secret="+secret, func(t *testing.T) {
			cfg := comms[0].ep.linkCfg
			cfg.Rank, cfg.JobID, cfg.Secret = 3, 0, []byte(secret)
			link, err := newTCP(t).Dial(ctx, target, 0, cfg)
			if err == nil {
				link.Close()
			}
			require.ErrorIs(t, err, transport.ErrRefused, "a stranger opened a link to rank 0 as rank 3")
		})
	}

	// The job is unharmed: a message around the ring.
	for r := range n {
		wg.Go(func() {
			errs[r] = comms[r].Send(ctx, (r+1)%n, 7, []byte{byte(r)})
			if errs[r] == nil {
				buf := make([]byte, 1)
				_, errs[r] = comms[r].Recv(ctx, (r+n-1)%n, 7, buf)
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

// closeAtOnce closes the communicators that Init made, all at once: rank
// 0's Close waits for the others to leave.
func closeAtOnce(comms []*Comm) {
	var closing sync.WaitGroup
	for _, c := range comms {
		if c != nil {
			closing.Go(func() { c.Close() })
		}
	}
	closing.Wait()
}

// TestOneHost: a communicator is on one host when all its ranks are,
// whatever its transport; Split keeps telling.
func TestOneHost(t *testing.T) {
	tests := []struct {
		name   string
		hostOf func(int) string
		world  bool
	}{
		{"one host", func(int) string { return "h" }, true},
		{"two hosts", func(r int) string { return fmt.Sprint("h", r/2) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := NewLocal(4, WithTransport("tcp"), WithHostIdentity(tt.hostOf))
			require.NoError(t, err)
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			subs := make([]*Comm, len(cs))
			var wg sync.WaitGroup
			for i, c := range cs {
				require.Equal(t, tt.world, c.OneHost(), "world, rank %d", i)
				wg.Go(func() {
					sub, err := c.Split(context.Background(), i/2, i)
					assert.NoError(t, err)
					subs[i] = sub
				})
			}
			wg.Wait()
			for i, s := range subs {
				require.NotNil(t, s, "rank %d split", i)
				require.True(t, s.OneHost(), "ranks %d and %d, rank %d", i/2*2, i/2*2+1, i)
				s.Close()
			}
		})
	}
}
