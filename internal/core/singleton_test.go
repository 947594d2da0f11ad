package core

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// records is a slog handler that keeps every record, for tests that count
// log lines.
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *records) WithGroup(string) slog.Handler            { return h }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.list = append(h.list, r)
	return nil
}

// count counts the records at level whose message contains s.
func (h *records) count(level slog.Level, s string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.list {
		if r.Level == level && strings.Contains(r.Message, s) {
			n++
		}
	}
	return n
}

// TestSingleton: Init without any launcher's variables is rank 0 of a
// world of 1, built like NewLocal(1)'s rank: no rendezvous served, no
// socket, in-memory links. Point-to-point calls to itself and Split work,
// and the log says once, at Info, what happened and how to forbid it.
func TestSingleton(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := new(records)
	c, err := initFromEnv(ctx, mapEnv(nil), []Option{WithLogger(slog.New(log))})
	require.NoError(t, err)
	defer c.Close()

	assert.Equal(t, 0, c.Rank())
	assert.Equal(t, 1, c.Size())
	assert.Equal(t, 0, c.LocalRank())
	assert.Equal(t, 1, c.LocalSize())
	assert.True(t, c.OneHost())
	assert.Equal(t, "mem", c.Transport(), "a single rank has no links to make")
	assert.Nil(t, c.ep.server, "a singleton serves no rendezvous")
	assert.Nil(t, c.ep.shm.ln, "a singleton listens for no shared-memory links")
	assert.True(t, c.ep.opts.dumpOnFailure, "a singleton keeps Init's options")
	assert.Equal(t, 1, log.count(slog.LevelInfo, singletonMessage), "the singleton start is logged once")
	assert.Contains(t, singletonMessage, "GOCOLL_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, JOB_COMPLETION_INDEX unset")
	assert.Contains(t, singletonMessage, "GOCOLL_SINGLETON=0")
	assert.Zero(t, log.count(slog.LevelWarn, "no job secret"), "a singleton has nobody to keep out")

	require.NoError(t, c.Send(ctx, 0, 7, []byte("self")))
	buf := make([]byte, 4)
	_, err = c.Recv(ctx, 0, 7, buf)
	require.NoError(t, err)
	assert.Equal(t, "self", string(buf))

	sub, err := c.Split(ctx, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, sub.Size())
	assert.Equal(t, 0, sub.LocalRank())
	assert.Equal(t, 1, sub.LocalSize())
	require.NoError(t, sub.Close())
	require.NoError(t, c.Close())
	assert.Equal(t, 1, log.count(slog.LevelInfo, singletonMessage), "logged once, not per communicator")
}

// TestSingletonRefused: GOCOLL_SINGLETON=0 or WithSingleton(false) make a
// missing environment the error it was before singleton start, naming
// the variables looked for; an option overrides the environment.
func TestSingletonRefused(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		opts    []Option
		wantErr string // "" for a singleton
	}{
		{name: "GOCOLL_SINGLETON=0", env: map[string]string{"GOCOLL_SINGLETON": "0"}, wantErr: "GOCOLL_SINGLETON forbids"},
		{name: "WithSingleton(false)", opts: []Option{WithSingleton(false)}, wantErr: "comm.WithSingleton(false) forbids"},
		{name: "WithSingleton(true) overrides GOCOLL_SINGLETON=0", env: map[string]string{"GOCOLL_SINGLETON": "0"},
			opts: []Option{WithSingleton(true)}},
		{name: "WithSingleton(false) overrides GOCOLL_SINGLETON=1", env: map[string]string{"GOCOLL_SINGLETON": "1"},
			opts: []Option{WithSingleton(false)}, wantErr: "comm.WithSingleton(false) forbids"},
		{name: "the last WithSingleton wins", opts: []Option{WithSingleton(false), WithSingleton(true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := new(records)
			opts := append([]Option{WithLogger(slog.New(log))}, tt.opts...)
			c, err := initFromEnv(context.Background(), mapEnv(tt.env), opts)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, 1, c.Size())
				require.NoError(t, c.Close())
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, "no job environment: none of GOCOLL_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, JOB_COMPLETION_INDEX is set")
			require.ErrorContains(t, err, tt.wantErr)
			require.ErrorContains(t, err, "set GOCOLL_RANK, GOCOLL_SIZE and GOCOLL_ADDR")
			var op *OpError
			require.ErrorAs(t, err, &op)
			assert.Equal(t, "init", op.Op)
			assert.Zero(t, log.count(slog.LevelInfo, singletonMessage))
		})
	}
}

// TestPartialEnvironmentIsNoSingleton: some of a launcher's variables
// without the rest fail Init, as they did before singleton start, even
// where singletons are allowed.
func TestPartialEnvironmentIsNoSingleton(t *testing.T) {
	for _, env := range []map[string]string{
		{"RANK": "0"},
		{"WORLD_SIZE": "2"},
		{"GOCOLL_RANK": "0", "GOCOLL_ADDR": "127.0.0.1:1"},
		{"GOCOLL_SIZE": "1"},
		{"GOCOLL_ADDR": "127.0.0.1:1"},
		{"SLURM_NTASKS": "4"},
		{"JOB_COMPLETION_INDEX": "0"},
	} {
		t.Run(fmt.Sprint(env), func(t *testing.T) {
			log := new(records)
			_, err := initFromEnv(context.Background(), mapEnv(env), []Option{WithLogger(slog.New(log)), WithSingleton(true)})
			require.ErrorIs(t, err, ErrInvalid)
			assert.Zero(t, log.count(slog.LevelInfo, singletonMessage))
		})
	}
}

// TestNewLocalIgnoresSingleton: WithSingleton is Init's; NewLocal
// accepts it and goes on.
func TestNewLocalIgnoresSingleton(t *testing.T) {
	cs, err := NewLocal(2, WithSingleton(false))
	require.NoError(t, err)
	closeAtOnce(cs)
	_, err = NewLocal(1, WithSingleton(false), WithTimeout(-1))
	require.ErrorIs(t, err, ErrInvalid)
}

// TestLocalRank: ranks count their host's ranks in rank order, in the
// world and in communicators made by Split, whose ranks may come in
// another order than the world's; LocalRank matches the rank in the
// hierarchy's node communicator where there is one.
func TestLocalRank(t *testing.T) {
	hosts := []string{"a", "b", "a", "b", "a"}
	for _, tr := range []string{"mem", "auto"} {
		t.Run(tr, func(t *testing.T) {
			cs, err := NewLocal(len(hosts), WithTransport(tr), WithHostIdentity(func(r int) string { return hosts[r] }))
			require.NoError(t, err)
			defer closeAtOnce(cs)
			local := make([]int, len(cs))
			size := make([]int, len(cs))
			for r, c := range cs {
				local[r], size[r] = c.LocalRank(), c.LocalSize()
				if h := c.Hierarchy(); h != nil {
					assert.Equal(t, h.Node.Rank(), c.LocalRank(), "rank %d", r)
					assert.Equal(t, h.Node.Size(), c.LocalSize(), "rank %d", r)
				}
			}
			assert.Equal(t, []int{0, 0, 1, 1, 2}, local)
			assert.Equal(t, []int{3, 2, 3, 2, 3}, size)
			if tr == "auto" {
				assert.NotNil(t, cs[0].Hierarchy(), "the auto transport gives the world a hierarchy")
			}

			// Reversed by key: new rank i is world rank 4-i, on hosts
			// a, b, a, b, a again.
			subs := make([]*Comm, len(cs))
			var wg sync.WaitGroup
			errs := make([]error, len(cs))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for r, c := range cs {
				wg.Go(func() { subs[r], errs[r] = c.Split(ctx, 0, -r) })
			}
			wg.Wait()
			for r := range cs {
				require.NoError(t, errs[r], "rank %d", r)
				sub := subs[r]
				assert.Equal(t, 4-r, sub.Rank())
				assert.Equal(t, []int{2, 1, 1, 0, 0}[r], sub.LocalRank(), "world rank %d", r)
				assert.Equal(t, size[r], sub.LocalSize(), "world rank %d", r)
			}
			for _, s := range subs {
				s.Close()
			}
		})
	}
}
