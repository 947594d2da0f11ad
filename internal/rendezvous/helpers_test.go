package rendezvous

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gocoll/gocoll/internal/testutil"
)

// watchdog bounds every wait of the tests, so a hang is a failure that
// names what it waited for, not a test binary killed after ten minutes.
// No test relies on it for its outcome.
const watchdog = 10 * time.Second

var testSecret = []byte("rendezvous test secret")

// TestMain fails the package when any test left a goroutine running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	srv  *Server
	addr string
	logs *testutil.SyncBuffer
}

// serve starts a store for a job of size ranks on a loopback port. It is
// closed at the end of the test, after the clients made by the fixture.
func serve(t *testing.T, size int) *fixture {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	srv, err := NewServer(size, testSecret, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.NoError(t, <-served)
	})
	return &fixture{srv: srv, addr: l.Addr().String(), logs: logs}
}

func (f *fixture) dial(t *testing.T, rank int) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	c, err := Dial(ctx, f.addr, rank, f.srv.size, testSecret)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func (f *fixture) join(t *testing.T, rank int) *Client {
	t.Helper()
	c, err := f.srv.Join(rank)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// client makes rank's client: in-process ("local") or over TCP ("tcp").
func (f *fixture) client(t *testing.T, kind string, rank int) *Client {
	t.Helper()
	if kind == "local" {
		return f.join(t, rank)
	}
	return f.dial(t, rank)
}

// members makes the clients of ranks 0 to n-1: rank 0's in-process, as
// rank 0 of a job holds it, the others over TCP.
func (f *fixture) members(t *testing.T, n int) []*Client {
	t.Helper()
	clients := make([]*Client, n)
	clients[0] = f.join(t, 0)
	for r := 1; r < n; r++ {
		clients[r] = f.dial(t, r)
	}
	return clients
}

// closeAndCheckGone closes the store and checks that every client but
// clients[except] hears StoreGone last.
func (f *fixture) closeAndCheckGone(t *testing.T, clients []*Client, except int) {
	t.Helper()
	require.NoError(t, f.srv.Close())
	for r, c := range clients {
		if r == except {
			continue
		}
		ev := nextEvent(t, c)
		require.Equal(t, StoreGone, ev.Kind, "rank %d: %v", r, ev)
		eventsClosed(t, c)
	}
}

// waiting is the number of gets the store holds for key.
func (f *fixture) waiting(key string) int {
	f.srv.mu.Lock()
	defer f.srv.mu.Unlock()
	return len(f.srv.waiters[key])
}

// cut breaks the store's end of rank's connection, as a dying rank 0 or
// a broken network would.
func (f *fixture) cut(t *testing.T, rank int) {
	t.Helper()
	f.srv.mu.Lock()
	p, ok := f.srv.members[rank].sess.peer.(remotePeer)
	f.srv.mu.Unlock()
	require.True(t, ok, "rank %d is not connected over TCP", rank)
	p.wc.kill()
}

// kill drops a client's connection abruptly, as if its process died: no
// bye, no clean shutdown.
func kill(c *Client) { c.wc.c.Close() }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(watchdog)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// nextEvent returns c's next event, failing the test if the channel is
// closed or nothing comes.
func nextEvent(t *testing.T, c *Client) Event {
	t.Helper()
	select {
	case ev, ok := <-c.Events():
		require.True(t, ok, "rank %d: events closed", c.Rank())
		return ev
	case <-time.After(watchdog):
		t.Fatalf("rank %d: no event", c.Rank())
		return Event{}
	}
}

// eventsClosed waits until c's events channel is closed, failing on any
// event still in it.
func eventsClosed(t *testing.T, c *Client) {
	t.Helper()
	select {
	case ev, ok := <-c.Events():
		require.False(t, ok, "rank %d: unexpected event %v", c.Rank(), ev)
	case <-time.After(watchdog):
		t.Fatalf("rank %d: events not closed", c.Rank())
	}
}

// reservedAddr returns a loopback address whose port is bound but not
// listened on: a dial there is refused, as by a host whose server has not
// started, and no other process can take the port meanwhile. (A port
// bound and freed again could be taken by another test's listener, whose
// refusal of this job's secret a dialer rightly does not retry.) listen
// starts listening on it.
func reservedAddr(t *testing.T) (addr string, listen func() net.Listener) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "reserved port")
	t.Cleanup(func() { f.Close() })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	in4, ok := sa.(*syscall.SockaddrInet4)
	require.True(t, ok)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port)), func() net.Listener {
		require.NoError(t, syscall.Listen(fd, syscall.SOMAXCONN))
		l, err := net.FileListener(f) // a duplicate of fd, which stays bound until f closes
		require.NoError(t, err)
		return l
	}
}

func bg() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), watchdog)
}
