//go:build linux

package shm_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/testutil"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/shm"
	"github.com/gocoll/gocoll/internal/wire"
)

// The environment of a helper process: the listener to dial, and what
// to do.
const (
	helperAddr = "GOCOLL_SHM_TEST_HELPER_ADDR"
	helperMode = "GOCOLL_SHM_TEST_HELPER_MODE"
)

// helperModes are what a helper process does once connected, with the
// options it dials with:
//
//   - idle: send a small message and wait to be killed;
//   - ring, cma: send that and then a large message through the ring or
//     by CMA, which it is still writing when it is killed;
//   - echo, sink: run linktest.Echo or linktest.Sink until the link
//     ends, as the peer of the process benchmarks.
var helperModes = map[string][]shm.Option{
	"idle": nil,
	"ring": nil,
	"cma":  {shm.WithCMA()},
	"echo": nil,
	"sink": nil,
}

// helperServes reports whether mode serves the link until it ends,
// after which the helper exits.
func helperServes(mode string) bool { return mode == "echo" || mode == "sink" }

const helperLarge = 8 << 20

// TestHelperProcess is not a test: it is the peer process of
// TestPeerKilled and of the process benchmarks, which start the test
// binary again with the helper's environment set.
func TestHelperProcess(t *testing.T) {
	addr := os.Getenv(helperAddr)
	if addr == "" {
		t.Skip("the peer process of TestPeerKilled and BenchmarkProcess*")
	}
	mode := os.Getenv(helperMode)
	if err := runHelper(addr, mode); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	if !helperServes(mode) {
		// Wait to be killed, but not forever if the test is gone.
		time.Sleep(30 * time.Second)
	}
	os.Exit(0)
}

func runHelper(addr, mode string) error {
	opts, ok := helperModes[mode]
	if !ok {
		return fmt.Errorf("unknown mode %q", mode)
	}
	l, err := shm.New(opts...).Dial(context.Background(), addr, 1, linktest.Config(0, nil))
	if err != nil {
		return err
	}
	switch mode {
	case "echo":
		linktest.Echo(l)
		return l.Close()
	case "sink":
		linktest.Sink(l)
		return l.Close()
	}
	if err := l.WriteMessage(context.Background(), header(0, 5), []byte("hello")); err != nil {
		return err
	}
	if mode == "idle" {
		return nil
	}
	// Blocks until the process is killed: the test reads only part.
	return l.WriteMessage(context.Background(), header(1, helperLarge), fill(make([]byte, helperLarge), 1))
}

// startHelper starts a helper process in mode, which dials ln, and
// returns the link to it. The process is killed, if it still runs, when
// t ends.
func startHelper(t testing.TB, ln transport.Listener, mode string) (transport.Link, *exec.Cmd) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	var out testutil.SyncBuffer
	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperAddr+"="+ln.Addr(), helperMode+"="+mode)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	select {
	case l := <-linktest.AcceptAsync(ln):
		require.NotNil(t, l)
		t.Cleanup(func() { l.Close() })
		return l, cmd
	case <-exited:
	case <-time.After(10 * time.Second):
	}
	require.FailNow(t, "the helper did not connect", "output: %s", out.String())
	return nil, nil
}

// TestPeerKilled kills the process at the other end of a link with
// SIGKILL, at a message boundary and in the middle of a message that it
// sends through the ring or by CMA: the reader must see the end of the
// stream and a writer blocked towards the dead process must fail, not
// hang.
func TestPeerKilled(t *testing.T) {
	tests := []struct {
		mode    string
		partial bool  // the helper dies while sending a large message
		want    error // what reads return after its death
	}{
		{"idle", false, io.EOF},
		{"ring", true, io.ErrUnexpectedEOF},
		{"cma", true, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			ln, err := shm.New(helperModes[tc.mode]...).Listen("", linktest.Config(1, nil))
			require.NoError(t, err)
			defer ln.Close()
			l, cmd := startHelper(t, ln, tc.mode)
			require.NoError(t, readWhole(l, []byte("hello")))
			if tc.partial {
				var h wire.Header
				require.NoError(t, l.ReadHeader(&h))
				require.Equal(t, uint64(helperLarge), h.Length)
				p := make([]byte, 1<<20)
				require.NoError(t, l.ReadPayload(p))
				require.True(t, bytes.Equal(fill(make([]byte, helperLarge), 1)[:len(p)], p), "payload differs")
			}
			// A write that the helper never reads: it blocks for the
			// ack, or for space, until the helper dies.
			big := make([]byte, 64<<20)
			blocked := async(func() error { return l.WriteMessage(context.Background(), header(2, len(big)), big) })
			time.Sleep(20 * time.Millisecond)

			require.NoError(t, cmd.Process.Kill())
			// SIGKILL takes a while to end a process, and until it has,
			// its memory can still be read: wait until it is a zombie
			// or reaped, or the rest of the payload may well arrive.
			require.Eventually(t, func() bool { return !shmem.Alive(cmd.Process.Pid) }, 10*time.Second, time.Millisecond, "the helper does not die")
			read := async(func() error {
				if tc.partial {
					return l.ReadPayload(make([]byte, helperLarge-(1<<20)))
				}
				var h wire.Header
				return l.ReadHeader(&h)
			})
			require.ErrorIs(t, result(t, read, 10*time.Second), tc.want)
			var h wire.Header
			require.ErrorIs(t, l.ReadHeader(&h), tc.want, "and again")
			require.ErrorIs(t, result(t, blocked, 10*time.Second), syscall.EPIPE, "a write to a dead process must fail")
		})
	}
}

// TestServingHelpers checks, with a message each, the helper modes that
// the process benchmarks measure against.
func TestServingHelpers(t *testing.T) {
	ln, err := shm.New().Listen("", linktest.Config(1, nil))
	require.NoError(t, err)
	defer ln.Close()

	echo, _ := startHelper(t, ln, "echo")
	require.NoError(t, echo.WriteMessage(context.Background(), header(3, 5), []byte("hello")))
	require.NoError(t, readWhole(echo, []byte("hello")))

	sink, _ := startHelper(t, ln, "sink")
	h := header(4, 2*shm.CMAThreshold)
	h.Flags = wire.FlagLast
	require.NoError(t, sink.WriteMessage(context.Background(), h, make([]byte, h.Length)))
	var got wire.Header
	require.NoError(t, sink.ReadHeader(&got))
	require.Zero(t, got.Length, "the sink answers with an empty message")
}
