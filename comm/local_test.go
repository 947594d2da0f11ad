package comm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/testutil"
)

// TestLocalRankOneHost: the ranks of NewLocal share one host, so each
// one's local rank is its rank and the local size the size.
func TestLocalRankOneHost(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for r, c := range newJob(t, n) {
				assert.Equal(t, r, c.LocalRank(), "rank %d", r)
				assert.Equal(t, n, c.LocalSize(), "rank %d", r)
			}
		})
	}
}

// TestLocalRankHosts: ranks on hosts a, b, a, b, a count their host's
// ranks in rank order, over every transport; a communicator made by Split
// counts its own members, in its own rank order.
func TestLocalRankHosts(t *testing.T) {
	hosts := []string{"a", "b", "a", "b", "a"}
	for _, tr := range []string{"mem", "tcp", "auto"} {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, len(hosts), comm.WithTransport(tr), comm.WithHostIdentity(func(r int) string { return hosts[r] }))
			for r, c := range cs {
				assert.Equal(t, []int{0, 0, 1, 1, 2}[r], c.LocalRank(), "rank %d", r)
				assert.Equal(t, []int{3, 2, 3, 2, 3}[r], c.LocalSize(), "rank %d", r)
			}

			// Ranks 0-2 (a, b, a) and 3-4 (b, a).
			subs := make([]*comm.Comm, len(cs))
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) (err error) {
				subs[c.Rank()], err = c.Split(ctx, c.Rank()/3, 0)
				return err
			})
			for r, sub := range subs {
				assert.Equal(t, []int{0, 0, 1, 0, 0}[r], sub.LocalRank(), "world rank %d", r)
				assert.Equal(t, []int{2, 1, 2, 1, 1}[r], sub.LocalSize(), "world rank %d", r)
			}
			for _, s := range subs {
				require.NoError(t, s.Close())
			}

			// Reversed: new rank i is world rank 4-i, so the local ranks
			// follow the new order, not the world's.
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) (err error) {
				subs[c.Rank()], err = c.Split(ctx, 0, -c.Rank())
				return err
			})
			for r, sub := range subs {
				assert.Equal(t, 4-r, sub.Rank())
				assert.Equal(t, []int{2, 1, 1, 0, 0}[r], sub.LocalRank(), "world rank %d", r)
				assert.Equal(t, []int{3, 2, 3, 2, 3}[r], sub.LocalSize(), "world rank %d", r)
			}
			for _, s := range subs {
				require.NoError(t, s.Close())
			}
		})
	}
}

// launcherVars are every variable whose presence makes Init look for a
// job rather than start a singleton, and GOCOLL_SINGLETON.
var launcherVars = []string{
	"GOCOLL_RANK", "GOCOLL_SIZE", "GOCOLL_ADDR", "RANK", "WORLD_SIZE",
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
	"JOB_COMPLETION_INDEX", "GOCOLL_SINGLETON",
}

// cleanEnv unsets every launcher variable for the test and restores them
// after it: t.Setenv records the value to restore, and os.Unsetenv then
// unsets it, which t.Setenv cannot.
func cleanEnv(t *testing.T) {
	for _, v := range launcherVars {
		t.Setenv(v, "")
		require.NoError(t, os.Unsetenv(v))
	}
}

// TestInitSingleton: Init in an environment that no launcher set is rank
// 0 of a world of 1 on which collectives and point-to-point calls work,
// and says so once in the log.
func TestInitSingleton(t *testing.T) {
	cleanEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	var log testutil.SyncBuffer
	c, err := comm.Init(ctx, comm.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, 1, c.Size())
	require.Equal(t, 0, c.Rank())
	require.Equal(t, 0, c.LocalRank())
	require.Equal(t, 1, c.LocalSize())
	require.NoError(t, singletonCalls(ctx, c))
	require.NoError(t, c.Close())

	out := log.String()
	require.Equal(t, 1, strings.Count(out, "running as a single rank"), "log:\n%s", out)
	require.Contains(t, out, "level=INFO")
	require.Contains(t, out, "no launcher environment found (GOCOLL_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, JOB_COMPLETION_INDEX unset)")
	require.Contains(t, out, "set GOCOLL_SINGLETON=0 to make this an error")
}

// singletonCalls makes collective and point-to-point calls on a world of
// one rank and checks what they return.
func singletonCalls(ctx context.Context, c *comm.Comm) error {
	buf := []float64{1, 2, 3}
	if err := collective.Allreduce(ctx, c, buf, codec.Sum); err != nil {
		return fmt.Errorf("allreduce: %w", err)
	}
	if fmt.Sprint(buf) != "[1 2 3]" {
		return fmt.Errorf("allreduce of [1 2 3] on one rank gave %v", buf)
	}
	if err := collective.Barrier(ctx, c); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if err := collective.Bcast(ctx, c, buf, 0); err != nil {
		return fmt.Errorf("bcast: %w", err)
	}
	all := make([]float64, 3)
	if err := collective.Allgather(ctx, c, buf, all); err != nil || fmt.Sprint(all) != "[1 2 3]" {
		return fmt.Errorf("allgather: %v, %w", all, err)
	}
	if err := c.Send(ctx, 0, 3, []byte("self")); err != nil {
		return fmt.Errorf("send to self: %w", err)
	}
	got := make([]byte, 4)
	if _, err := c.Recv(ctx, 0, 3, got); err != nil || string(got) != "self" {
		return fmt.Errorf("recv from self: %q, %w", got, err)
	}
	sub, err := c.Split(ctx, 0, 0)
	if err != nil {
		return fmt.Errorf("split: %w", err)
	}
	defer sub.Close()
	if err := collective.Allreduce(ctx, sub, buf, codec.Max); err != nil {
		return fmt.Errorf("allreduce on the split: %w", err)
	}
	return nil
}

// TestInitSingletonRefused: GOCOLL_SINGLETON=0 and WithSingleton(false)
// keep a missing environment an error wrapping ErrInvalid that names the
// variables looked for; WithSingleton(true) overrides GOCOLL_SINGLETON=0.
func TestInitSingletonRefused(t *testing.T) {
	cleanEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	quiet := comm.WithLogger(slog.New(slog.DiscardHandler))

	_, err := comm.Init(ctx, quiet, comm.WithSingleton(false))
	require.ErrorIs(t, err, comm.ErrInvalid)
	require.ErrorContains(t, err, "none of GOCOLL_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, JOB_COMPLETION_INDEX is set")

	t.Setenv("GOCOLL_SINGLETON", "0")
	_, err = comm.Init(ctx, quiet)
	require.ErrorIs(t, err, comm.ErrInvalid)
	require.ErrorContains(t, err, "GOCOLL_SINGLETON forbids running as a single rank")

	c, err := comm.Init(ctx, quiet, comm.WithSingleton(true))
	require.NoError(t, err)
	require.Equal(t, 1, c.Size())
	require.NoError(t, c.Close())
}

// TestInitPartialEnvironment: a launcher's variables in part are an error,
// never a singleton.
func TestInitPartialEnvironment(t *testing.T) {
	for _, env := range [][2]string{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"GOCOLL_RANK", "0"}, {"GOCOLL_SIZE", "2"}} {
		t.Run(env[0], func(t *testing.T) {
			cleanEnv(t)
			t.Setenv(env[0], env[1])
			ctx, cancel := context.WithTimeout(context.Background(), watchdog)
			defer cancel()
			var log testutil.SyncBuffer
			c, err := comm.Init(ctx, comm.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			if err == nil {
				c.Close()
			}
			require.ErrorIs(t, err, comm.ErrInvalid)
			require.ErrorContains(t, err, env[0])
			require.NotContains(t, log.String(), "running as a single rank")
		})
	}
}

func init() { workers["singleton"] = singletonWorker }

// singletonWorker is the program TestSingletonProcess runs: Init without
// a launcher, and calls on the world it gets.
func singletonWorker(ctx context.Context, c *comm.Comm) error {
	if c.Size() != 1 || c.Rank() != 0 || c.LocalRank() != 0 || c.LocalSize() != 1 {
		return fmt.Errorf("rank %d of %d, local rank %d of %d; want a world of one", c.Rank(), c.Size(), c.LocalRank(), c.LocalSize())
	}
	if err := singletonCalls(ctx, c); err != nil {
		return err
	}
	// No rendezvous, no link listener: the process has no socket at all.
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil // not Linux
	}
	for _, fd := range fds {
		if target, _ := os.Readlink("/proc/self/fd/" + fd.Name()); strings.HasPrefix(target, "socket:") {
			return fmt.Errorf("the singleton has a socket open: fd %s is %s", fd.Name(), target)
		}
	}
	return nil
}

// TestSingletonProcess runs a program with an empty environment, as a user
// runs a binary by hand: it must become a world of one, run its calls and
// exit 0 without having opened a socket, logging the singleton start
// once on stderr (slog.Default).
func TestSingletonProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = []string{workerVar + "=singleton"}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("the singleton exited with %d:\n%s", exit.ExitCode(), stderr.String())
	}
	require.NoError(t, err, "output:\n%s", stderr.String())
	require.Equal(t, 1, strings.Count(stderr.String(), "running as a single rank"), "output:\n%s", stderr.String())
}
