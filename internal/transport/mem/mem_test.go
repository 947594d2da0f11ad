package mem_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/testutil"
	"github.com/gocoll/gocoll/internal/wire"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/auth"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/mem"
)

func header(n int) wire.Header {
	return wire.Header{Kind: wire.KindSend, DType: kernel.Uint8, Count: uint64(n), Length: uint64(n), Root: -1}
}

// pair returns a dialed link of rank dial to rank accept and the accepted
// end.
func pair(t testing.TB, tr *mem.Transport, dial, accept int) (a, b transport.Link) {
	t.Helper()
	ln, err := tr.Listen("", linktest.Config(accept, nil))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	a, err = tr.Dial(context.Background(), ln.Addr(), accept, linktest.Config(dial, nil))
	require.NoError(t, err)
	b, err = ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b
}

// result runs f in a goroutine and returns a channel with its error.
func result(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

func wait(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		require.FailNow(t, "call did not return")
		return nil
	}
}

// TestAllocs checks that a message costs no allocation, its payload whole
// or in two parts (WriteParts).
func TestAllocs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts bool
	}{{"whole", false}, {"parts", true}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t, mem.NewNetwork().Transport(), 0, 1)
			payload := make([]byte, 1000)
			head, body := make([]byte, 100), make([]byte, len(payload)-100)
			h := header(len(payload))
			dst := make([]byte, len(payload))
			const runs = 1000
			done := make(chan struct{})
			go func() {
				defer close(done)
				var got wire.Header
				for range runs + 1 { // AllocsPerRun adds a warm-up run
					if b.ReadHeader(&got) != nil || b.ReadPayload(dst) != nil {
						return
					}
				}
			}()
			ctx := context.Background()
			allocs := testing.AllocsPerRun(runs, func() {
				var err error
				if tc.parts {
					err = a.WriteParts(ctx, h, head, body)
				} else {
					err = a.WriteMessage(ctx, h, payload)
				}
				if err != nil {
					t.Fatal(err)
				}
			})
			<-done
			assert.Zero(t, allocs, "allocations per message, writer and reader together")
		})
	}
}

func TestNames(t *testing.T) {
	n := mem.NewNetwork()
	tr := n.Transport()
	assert.Equal(t, "mem", tr.Name())
	ln, err := tr.Listen("rank0", linktest.Config(0, nil))
	require.NoError(t, err)
	defer ln.Close()
	assert.Equal(t, "rank0", ln.Addr())
	_, err = tr.Listen("rank0", linktest.Config(0, nil))
	require.ErrorIs(t, err, syscall.EADDRINUSE)
	auto1, err := tr.Listen("", linktest.Config(0, nil))
	require.NoError(t, err)
	defer auto1.Close()
	auto2, err := tr.Listen("", linktest.Config(0, nil))
	require.NoError(t, err)
	defer auto2.Close()
	assert.NotEqual(t, auto1.Addr(), auto2.Addr())

	_, err = tr.Dial(context.Background(), "nobody", 0, linktest.Config(1, nil))
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	// Another network does not see these names.
	_, err = mem.NewNetwork().Transport().Dial(context.Background(), "rank0", 0, linktest.Config(1, nil))
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	// A closed listener frees its name.
	require.NoError(t, ln.Close())
	ln2, err := tr.Listen("rank0", linktest.Config(0, nil))
	require.NoError(t, err)
	ln2.Close()
}

// A zero Transport has no network to fall back on: there is no
// package-wide default that unrelated tests would share.
func TestZeroTransport(t *testing.T) {
	var zero mem.Transport
	_, err := zero.Listen("", linktest.Config(1, nil))
	require.ErrorContains(t, err, "no Network")
	_, err = zero.Dial(context.Background(), "mem-1", 1, linktest.Config(0, nil))
	require.ErrorContains(t, err, "no Network")
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name   string
		cfg    func(*transport.Config)
		peer   int
		reason string
	}{
		{"wrong secret", func(c *transport.Config) { c.Secret = []byte("x") }, 1, "failed authentication"},
		{"no secret", func(c *transport.Config) { c.Secret = nil }, 1, "failed authentication"},
		{"other job", func(c *transport.Config) { c.JobID = 4 }, 1, fmt.Sprintf("acceptor belongs to job %#x, not 0x4", uint64(linktest.JobID))},
		{"wrong rank", func(c *transport.Config) {}, 2, "dialed rank 2 but acceptor is rank 1"},
		{"dialer without rank", func(c *transport.Config) { c.Rank = -1 }, 1, "dialer has no rank"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log testutil.SyncBuffer
			tr := mem.NewNetwork().Transport()
			ln, err := tr.Listen("", linktest.Config(1, &log))
			require.NoError(t, err)
			defer ln.Close()
			cfg := linktest.Config(0, nil)
			tc.cfg(&cfg)
			_, err = tr.Dial(context.Background(), ln.Addr(), tc.peer, cfg)
			require.ErrorIs(t, err, transport.ErrRefused)
			var re *auth.RefusedError
			require.ErrorAs(t, err, &re)
			assert.Contains(t, re.Reason, tc.reason)
			assert.Contains(t, log.String(), "refused connection")
			assert.Contains(t, log.String(), tc.reason)
			assert.Contains(t, log.String(), "remote=dialer-")
		})
	}
	t.Run("learn job", func(t *testing.T) {
		tr := mem.NewNetwork().Transport()
		ln, err := tr.Listen("", linktest.Config(1, nil))
		require.NoError(t, err)
		defer ln.Close()
		cfg := linktest.Config(0, nil)
		cfg.JobID = 0
		l, err := tr.Dial(context.Background(), ln.Addr(), -1, cfg)
		require.NoError(t, err)
		l.Close()
	})
}

func TestDialContext(t *testing.T) {
	tr := mem.NewNetwork().Transport()
	ln, err := tr.Listen("", linktest.Config(1, nil))
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tr.Dial(ctx, ln.Addr(), 1, linktest.Config(0, nil))
	require.ErrorIs(t, err, context.Canceled)
}

// TestCancelWhileWaitingForReader checks a mem-specific state: the writer
// waits for the reader to take the header, and nothing has moved yet.
func TestCancelWhileWaitingForReader(t *testing.T) {
	a, b := pair(t, mem.NewNetwork().Transport(), 0, 1)
	ctx, cancel := context.WithCancel(context.Background())
	h := header(5)
	ch := result(func() error { return a.WriteMessage(ctx, h, []byte("abcde")) })
	time.Sleep(20 * time.Millisecond)
	cancel()
	err := wait(t, ch)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, net.ErrClosed, "nothing was sent, the link must stay open")

	h = header(2)
	ch = result(func() error { return a.WriteMessage(context.Background(), h, []byte("ok")) })
	var got wire.Header
	require.NoError(t, b.ReadHeader(&got))
	p := make([]byte, 2)
	require.NoError(t, b.ReadPayload(p))
	require.Equal(t, "ok", string(p))
	require.NoError(t, wait(t, ch))
}

// deadPeer checks what each end of a broken link sees.
func deadPeer(t *testing.T, a, b transport.Link) {
	t.Helper()
	for _, l := range []transport.Link{a, b} {
		var h wire.Header
		require.ErrorIs(t, l.ReadHeader(&h), io.EOF)
		w := header(1)
		err := l.WriteMessage(context.Background(), w, []byte{1})
		require.ErrorIs(t, err, syscall.EPIPE)
		require.NotErrorIs(t, err, net.ErrClosed)
		require.NoError(t, l.Close())
	}
}

func TestBreak(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		n := mem.NewNetwork()
		a, b := pair(t, n.Transport(), 0, 1)
		require.Equal(t, 1, n.NumLinks())
		require.NoError(t, mem.Break(a))
		require.NoError(t, mem.Break(b), "breaking twice is harmless")
		require.Zero(t, n.NumLinks())
		deadPeer(t, a, b)
	})
	t.Run("blocked calls", func(t *testing.T) {
		a, b := pair(t, mem.NewNetwork().Transport(), 0, 1)
		read := result(func() error {
			var h wire.Header
			return b.ReadHeader(&h)
		})
		h := header(10)
		write := result(func() error { return a.WriteMessage(context.Background(), h, make([]byte, 10)) })
		// The write is taken by the reader, whose payload is then
		// lost; or the read sees the end first.
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, mem.Break(a))
		rerr := wait(t, read)
		werr := wait(t, write)
		require.ErrorIs(t, werr, syscall.EPIPE)
		if rerr == nil {
			require.ErrorIs(t, b.ReadPayload(make([]byte, 10)), io.ErrUnexpectedEOF)
		} else {
			require.ErrorIs(t, rerr, io.EOF)
		}
	})
	t.Run("mid payload", func(t *testing.T) {
		a, b := pair(t, mem.NewNetwork().Transport(), 0, 1)
		h := header(10)
		write := result(func() error { return a.WriteMessage(context.Background(), h, make([]byte, 10)) })
		var got wire.Header
		require.NoError(t, b.ReadHeader(&got))
		require.NoError(t, b.ReadPayload(make([]byte, 4)))
		require.NoError(t, mem.Break(b))
		require.ErrorIs(t, wait(t, write), syscall.EPIPE)
		require.ErrorIs(t, b.ReadPayload(make([]byte, 6)), io.ErrUnexpectedEOF)
	})
	t.Run("not a mem link", func(t *testing.T) {
		require.Error(t, mem.Break(nil))
	})
}

func TestDisconnect(t *testing.T) {
	n := mem.NewNetwork()
	tr := n.Transport()
	ln, err := tr.Listen("victim", linktest.Config(1, nil))
	require.NoError(t, err)
	var links []transport.Link
	for range 3 {
		a, err := tr.Dial(context.Background(), "victim", 1, linktest.Config(0, nil))
		require.NoError(t, err)
		b, err := ln.Accept()
		require.NoError(t, err)
		links = append(links, a, b)
	}
	other, otherB := pair(t, tr, 0, 2)
	require.Equal(t, 4, n.NumLinks())
	require.Equal(t, 3, n.Disconnect("victim"))
	require.Equal(t, 1, n.NumLinks())
	for i := 0; i < len(links); i += 2 {
		deadPeer(t, links[i], links[i+1])
	}
	_, err = ln.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = tr.Dial(context.Background(), "victim", 1, linktest.Config(0, nil))
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	// The other link is untouched.
	h := header(1)
	ch := result(func() error { return other.WriteMessage(context.Background(), h, []byte{9}) })
	var got wire.Header
	require.NoError(t, otherB.ReadHeader(&got))
	require.NoError(t, otherB.ReadPayload(make([]byte, 1)))
	require.NoError(t, wait(t, ch))
}

func TestKill(t *testing.T) {
	n := mem.NewNetwork()
	tr := n.Transport()
	// Ranks 0, 1, 2 fully connected; 1 dies.
	lns := make([]transport.Listener, 3)
	for r := range lns {
		ln, err := tr.Listen("", linktest.Config(r, nil))
		require.NoError(t, err)
		defer ln.Close()
		lns[r] = ln
	}
	type link struct{ from, to int }
	ends := map[link]transport.Link{}
	for i := range 3 {
		for j := i + 1; j < 3; j++ {
			a, err := tr.Dial(context.Background(), lns[j].Addr(), j, linktest.Config(i, nil))
			require.NoError(t, err)
			b, err := lns[j].Accept()
			require.NoError(t, err)
			ends[link{i, j}], ends[link{j, i}] = a, b
		}
	}
	require.Equal(t, 2, n.Kill(1))
	deadPeer(t, ends[link{0, 1}], ends[link{1, 0}])
	deadPeer(t, ends[link{2, 1}], ends[link{1, 2}])
	_, err := tr.Dial(context.Background(), lns[1].Addr(), 1, linktest.Config(0, nil))
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.Equal(t, 1, n.NumLinks())
	ends[link{0, 2}].Close()
	ends[link{2, 0}].Close()
	require.Zero(t, n.NumLinks(), "closing both ends forgets a link")
}

func TestListenerCloseClosesQueued(t *testing.T) {
	linktest.CheckGoroutines(t)
	n := mem.NewNetwork()
	tr := n.Transport()
	ln, err := tr.Listen("", linktest.Config(1, nil))
	require.NoError(t, err)
	a, err := tr.Dial(context.Background(), ln.Addr(), 1, linktest.Config(0, nil))
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, ln.Close())
	var h wire.Header
	require.ErrorIs(t, a.ReadHeader(&h), io.EOF)
	w := header(0)
	require.ErrorIs(t, a.WriteMessage(context.Background(), w, nil), syscall.EPIPE)
	a.Close()
	require.Zero(t, n.NumLinks())
}

func TestString(t *testing.T) {
	a, _ := pair(t, mem.NewNetwork().Transport(), 4, 5)
	s, ok := a.(interface{ String() string })
	require.True(t, ok)
	assert.True(t, strings.HasPrefix(s.String(), "mem link dialer-"), s.String())
	assert.Contains(t, s.String(), "(rank 5)")
}
