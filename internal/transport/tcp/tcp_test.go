package tcp_test

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/gocoll/gocoll/internal/transport/tcp"
)

func header(n int) wire.Header {
	return wire.Header{Kind: wire.KindSend, DType: kernel.Uint8, Count: uint64(n), Length: uint64(n), Root: -1}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  tcp.Option
		err  string
	}{
		{"read buffer too small", tcp.WithReadBufferSize(100), "at least 4096"},
		{"negative socket buffer", tcp.WithSocketBuffers(-1, 0), "must not be negative"},
		{"zero keepalive", tcp.WithKeepAlive(0), "negative duration"},
		{"keepalive off", tcp.WithKeepAlive(-1), ""},
		{"keepalive 30s", tcp.WithKeepAlive(30 * time.Second), ""},
		{"nodelay off", tcp.WithNoDelay(false), ""},
		{"socket buffers", tcp.WithSocketBuffers(1<<20, 1<<20), ""},
		{"no congestion control", tcp.WithCongestionControl(""), "want a name of 1 to 15 bytes"},
		{"congestion control name too long", tcp.WithCongestionControl("sixteen-letters!"), "want a name of 1 to 15 bytes"},
		{"congestion control", tcp.WithCongestionControl("reno"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := tcp.New(tc.opt)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "tcp", tr.Name())
			a, b := linktest.Pair(t, tr)
			h := header(3)
			require.NoError(t, a.WriteMessage(context.Background(), h, []byte("abc")))
			var got wire.Header
			require.NoError(t, b.ReadHeader(&got))
			p := make([]byte, 3)
			require.NoError(t, b.ReadPayload(p))
			require.Equal(t, "abc", string(p))
		})
	}
}

func TestListenAddr(t *testing.T) {
	var tr tcp.Transport
	ln, err := tr.Listen("", linktest.Config(1, nil))
	require.NoError(t, err)
	defer ln.Close()
	host, port, err := net.SplitHostPort(ln.Addr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.NotEqual(t, "0", port)

	ln6, err := tr.Listen("[::1]:0", linktest.Config(1, nil))
	if err != nil {
		// A host without IPv6 loopback cannot run the rest; the IPv4
		// half above has been checked.
		t.Logf("no IPv6 loopback: %v", err)
		return
	}
	defer ln6.Close()
	go func() {
		if l, err := ln6.Accept(); err == nil {
			l.Close()
		}
	}()
	l, err := tr.Dial(context.Background(), ln6.Addr(), 1, linktest.Config(0, nil))
	require.NoError(t, err)
	l.Close()
}

// TestWriteMessageAllocs checks that a message costs no allocation on
// either side once the link runs, also when the write's context can end
// (a write that finds room in the socket does not watch its context),
// and also when its payload is given in two parts (WriteParts).
func TestWriteMessageAllocs(t *testing.T) {
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		parts bool
	}{
		{"background", context.Background(), false},
		{"cancellable", cancellable, false},
		{"parts background", context.Background(), true},
		{"parts cancellable", cancellable, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ctx.Done() != nil && !tcp.Polled {
				t.Skip("a write whose context can end watches it with context.AfterFunc over a net.Conn, as over TLS; only polled links watch a write once it blocks")
			}
			a, b := linktest.Pair(t, &tcp.Transport{})
			payload := make([]byte, 1000)
			head, body := make([]byte, 100), make([]byte, len(payload)-100)
			h := header(len(payload))
			dst := make([]byte, len(payload))
			var got wire.Header
			allocs := testing.AllocsPerRun(1000, func() {
				var err error
				if tc.parts {
					err = a.WriteParts(tc.ctx, h, head, body)
				} else {
					err = a.WriteMessage(tc.ctx, h, payload)
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := b.ReadHeader(&got); err != nil {
					t.Fatal(err)
				}
				if err := b.ReadPayload(dst); err != nil {
					t.Fatal(err)
				}
			})
			assert.Zero(t, allocs, "allocations per message")
		})
	}
}

// TestHandshakeTimeout checks that a connection that never speaks is
// dropped after the handshake timeout and logged, and that it does not
// hold up other dialers meanwhile.
func TestHandshakeTimeout(t *testing.T) {
	linktest.CheckGoroutines(t)
	var log testutil.SyncBuffer
	cfg := linktest.Config(1, &log)
	cfg.HandshakeTimeout = 300 * time.Millisecond
	var tr tcp.Transport
	ln, err := tr.Listen("", cfg)
	require.NoError(t, err)
	defer ln.Close()
	silent, err := net.Dial("tcp", ln.Addr())
	require.NoError(t, err)
	defer silent.Close()

	go func() {
		if l, err := ln.Accept(); err == nil {
			l.Close()
		}
	}()
	l, err := tr.Dial(context.Background(), ln.Addr(), 1, linktest.Config(0, nil))
	require.NoError(t, err)
	l.Close()

	require.NoError(t, silent.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = silent.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the listener must hang up on a silent connection")
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "i/o timeout") }, 5*time.Second, time.Millisecond)
	assert.Contains(t, log.String(), "remote="+silent.LocalAddr().String())
}

// TestListenerCloseEndsHandshakes checks that Close hangs up on
// connections still in their handshake.
func TestListenerCloseEndsHandshakes(t *testing.T) {
	linktest.CheckGoroutines(t)
	var tr tcp.Transport
	ln, err := tr.Listen("", linktest.Config(1, nil))
	require.NoError(t, err)
	silent, err := net.Dial("tcp", ln.Addr())
	require.NoError(t, err)
	defer silent.Close()
	// A dialer that completed the handshake but was never accepted.
	waiting, err := tr.Dial(context.Background(), ln.Addr(), 1, linktest.Config(0, nil))
	require.NoError(t, err)
	defer waiting.Close()
	require.NoError(t, ln.Close())
	require.NoError(t, ln.Close(), "Close is idempotent")

	require.NoError(t, silent.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = silent.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	var h wire.Header
	// The dialer's last handshake byte may still be unread when the
	// listener closes the connection, which then resets it.
	err = waiting.ReadHeader(&h)
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET),
		"a link never accepted is closed with the listener; got %v", err)
}

// fakePeer listens on loopback and runs serve on the first connection
// after a real handshake as rank 1, so that tests can send a link bytes
// that no tcp link would.
func fakePeer(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := auth.Server(c, linktest.Params(1), nil); err != nil {
			return
		}
		serve(c)
	}()
	return ln.Addr().String()
}

func TestBadHeaderClosesLink(t *testing.T) {
	addr := fakePeer(t, func(c net.Conn) {
		c.Write(bytes.Repeat([]byte{0xa5}, wire.HeaderSize))
		io.Copy(io.Discard, c)
	})
	var tr tcp.Transport
	l, err := tr.Dial(context.Background(), addr, 1, linktest.Config(0, nil))
	require.NoError(t, err)
	defer l.Close()
	var h wire.Header
	err = l.ReadHeader(&h)
	require.ErrorIs(t, err, wire.ErrBadHeader)
	assert.Contains(t, err.Error(), "rank 1")
	require.ErrorIs(t, l.ReadHeader(&h), net.ErrClosed, "the link is closed after a bad header")
}

func TestTruncatedMessage(t *testing.T) {
	tests := []struct {
		name string
		send func(c net.Conn)
		read func(l transport.Link) error
		want error
	}{
		{"half a header", func(c net.Conn) {
			var b [wire.HeaderSize]byte
			h := header(100)
			h.MarshalTo(&b)
			c.Write(b[:30])
		}, func(l transport.Link) error {
			var h wire.Header
			return l.ReadHeader(&h)
		}, io.ErrUnexpectedEOF},
		{"header and part of the payload", func(c net.Conn) {
			var b [wire.HeaderSize]byte
			h := header(100)
			h.MarshalTo(&b)
			c.Write(append(b[:], make([]byte, 10)...))
		}, func(l transport.Link) error {
			var h wire.Header
			if err := l.ReadHeader(&h); err != nil {
				return err
			}
			return l.ReadPayload(make([]byte, 100))
		}, io.ErrUnexpectedEOF},
		{"nothing", func(c net.Conn) {}, func(l transport.Link) error {
			var h wire.Header
			return l.ReadHeader(&h)
		}, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakePeer(t, tc.send)
			var tr tcp.Transport
			l, err := tr.Dial(context.Background(), addr, 1, linktest.Config(0, nil))
			require.NoError(t, err)
			defer l.Close()
			require.ErrorIs(t, tc.read(l), tc.want)
		})
	}
}

// TestDialContext checks that Dial gives up when its context ends while
// the other end never answers the handshake.
func TestDialContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		// Accept and say nothing.
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(io.Discard, c)
		c.Close()
	}()
	var tr tcp.Transport

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = tr.Dial(ctx, ln.Addr().String(), 1, linktest.Config(0, nil))
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = tr.Dial(ctx, ln.Addr().String(), 1, linktest.Config(0, nil))
	require.ErrorIs(t, err, context.Canceled)

	cfg := linktest.Config(0, nil)
	cfg.HandshakeTimeout = 100 * time.Millisecond
	_, err = tr.Dial(context.Background(), ln.Addr().String(), 1, cfg)
	require.Error(t, err)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "handshake timeout: %v", err)
}

// TestDialerWithoutRank checks that the listener refuses a dialer
// that does not say its rank.
func TestDialerWithoutRank(t *testing.T) {
	var log testutil.SyncBuffer
	var tr tcp.Transport
	ln, err := tr.Listen("", linktest.Config(1, &log))
	require.NoError(t, err)
	defer ln.Close()
	_, err = tr.Dial(context.Background(), ln.Addr(), 1, linktest.Config(-1, nil))
	require.ErrorIs(t, err, transport.ErrRefused)
	assert.Contains(t, err.Error(), "dialer has no rank")
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "dialer has no rank") }, 5*time.Second, time.Millisecond)
}

// TestLargeReadBypassesBuffer checks that a payload larger than the read
// buffer arrives whole, in pieces of every size.
func TestLargeReadBypassesBuffer(t *testing.T) {
	tr, err := tcp.New(tcp.WithReadBufferSize(4096))
	require.NoError(t, err)
	a, b := linktest.Pair(t, tr)
	payload := make([]byte, 1<<20)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	h := header(len(payload))
	go a.WriteMessage(context.Background(), h, payload)
	var got wire.Header
	require.NoError(t, b.ReadHeader(&got))
	dst := make([]byte, len(payload))
	off := 0
	for _, n := range []int{1, 4095, 4096, 4097, 100000, 1} {
		require.NoError(t, b.ReadPayload(dst[off:off+n]))
		off += n
	}
	require.NoError(t, b.ReadPayload(dst[off:]))
	require.Equal(t, payload, dst)
}

// TestPollThenRead: the header that Poll decoded is the one ReadHeader
// takes, message after message, while the read buffer (4 KiB, the
// smallest) moves unread bytes to its front between them: ReadHeader
// reuses Poll's decoding only while the header has not moved. The sizes
// include both sides of the largest message the writer copies into one
// buffer with its header (191–193 bytes of payload: 256 in all).
func TestPollThenRead(t *testing.T) {
	if !tcp.Polled {
		t.Skip("plain tcp links are not polled in this build (the netpoll tag, or not Linux)")
	}
	tr, err := tcp.New(tcp.WithReadBufferSize(4096))
	require.NoError(t, err)
	a, b := linktest.Pair(t, tr)
	p, ok := b.(transport.Poller)
	require.True(t, ok, "a plain tcp link polls")
	sizes := []int{0, 1, 100, 1000, 3000, 4000, 5, 2500, 191, 192, 193}
	const rounds = 50
	go func() {
		for i := range rounds * len(sizes) {
			n := sizes[i%len(sizes)]
			h := header(n)
			h.Tag = int64(i)
			payload := bytes.Repeat([]byte{byte(i)}, n)
			if err := a.WriteMessage(context.Background(), h, payload); err != nil {
				return
			}
		}
	}()
	dst := make([]byte, 4096)
	for i := range rounds * len(sizes) {
		n := sizes[i%len(sizes)]
		var polled, got wire.Header
		for {
			arrival, err := p.Poll(&polled)
			require.NoError(t, err)
			if arrival == transport.Whole {
				break
			}
			if arrival == transport.Nothing {
				require.NoError(t, p.WaitReadable())
			}
		}
		require.Equal(t, int64(i), polled.Tag, "message %d: polled header", i)
		require.NoError(t, b.ReadHeader(&got))
		require.Equal(t, polled, got, "message %d: the header taken is the one polled", i)
		require.NoError(t, b.ReadPayload(dst[:n]))
		require.Equal(t, bytes.Repeat([]byte{byte(i)}, n), dst[:n], "message %d: payload", i)
	}
}

// TestCloseWithUnreadBytes: a link closed while its socket still holds
// bytes it never read ends cleanly for the peer, after everything the
// closing end sent. A TCP socket closed with unread bytes resets the
// connection instead, and a reset throws away what the closing end had
// not sent yet; the peer found the end of the link as a reset.
func TestCloseWithUnreadBytes(t *testing.T) {
	a, b := linktest.Pair(t, &tcp.Transport{})
	ctx := context.Background()
	// b's message to a waits unread in a's socket when a closes.
	require.NoError(t, b.WriteMessage(ctx, header(5), []byte("never")))
	require.NoError(t, a.WriteMessage(ctx, header(4), []byte("last")))
	time.Sleep(10 * time.Millisecond) // b's message into a's socket
	require.NoError(t, a.Close())

	var h wire.Header
	require.NoError(t, b.ReadHeader(&h))
	p := make([]byte, 4)
	require.NoError(t, b.ReadPayload(p))
	require.Equal(t, "last", string(p))
	require.ErrorIs(t, b.ReadHeader(&h), io.EOF, "the end of a's link")
}
