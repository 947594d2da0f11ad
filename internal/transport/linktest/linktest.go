package linktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// MakeTransport returns the transport under test. It is called once per
// case; it may return the same transport every time.
type MakeTransport func(t *testing.T) transport.Transport

// RawDialer opens a connection to the listener at addr that bypasses the
// transport's handshake, so that the suite can send it bytes that are
// not a handshake.
type RawDialer func(addr string) (io.ReadWriteCloser, error)

// Option configures the suite.
type Option func(*suite)

// WithRawDial enables the cases that connect to a listener without a
// handshake (garbage, silence) through dial. Byte-stream transports
// should pass it; transports without bytes to forge (mem) cannot.
func WithRawDial(dial RawDialer) Option {
	return func(s *suite) { s.raw = dial }
}

// WithHolds says how large a message the links take whole before their
// reader reads any of it, which Poll then reports Whole rather than Large:
// the size of a shm link's ring, or, for a link that reads large payloads
// straight out of the writer's memory, math.MaxInt. The default, 0, is a
// TCP socket between two processes of one host: at least 10 KiB and less
// than 64 MiB.
func WithHolds(bytes int) Option {
	return func(s *suite) { s.holds = bytes }
}

// WithLarge sets the size of the suite's large messages, which the link
// cannot take before its reader reads some of them: writing one waits
// for the reader or a Close (CloseUnblocksWrite and the cases like it),
// and Poll sees one arrive Large, or Whole as WithHolds says. The
// default is four times WithHolds's bytes, which a ring then streams
// through four times over, or, where those are not given, 64 MiB, more
// than the buffers of any TCP socket between two processes of one host.
// Not 64 MiB everywhere: under the race detector, which checks every
// byte that the test and the link copy, such messages took most of the
// suite's time.
func WithLarge(bytes int) Option {
	return func(s *suite) { s.large = bytes }
}

// WithTimeout sets the watchdog of each case; the default is Timeout.
func WithTimeout(d time.Duration) Option {
	return func(s *suite) { s.timeout = d }
}

// Timeout is the default time a case may take before the watchdog fails
// it.
const Timeout = 10 * time.Second

// JobID is the job that the suite's links, and those of Config, belong
// to.
const JobID = 0x6c696e6b74657374

// The ranks of the two ends of the suite's links.
const (
	dialRank   = 0
	acceptRank = 1
)

var secret = []byte("linktest secret")

type suite struct {
	mk      MakeTransport
	raw     RawDialer
	timeout time.Duration
	holds   int // WithHolds
	large   int // WithLarge, or its default
}

// TestTransport runs the conformance suite against the transports that
// mk returns. See the package documentation for what it checks.
func TestTransport(t *testing.T, mk MakeTransport, opts ...Option) {
	s := &suite{mk: mk, timeout: Timeout}
	for _, o := range opts {
		o(s)
	}
	if s.large == 0 {
		// Four times a ring; more than a socket holds where the link
		// is one (no WithHolds) or holds messages of any size.
		const socketLarge = 64 << 20
		s.large = socketLarge
		if s.holds > 0 && s.holds < socketLarge/4 {
			s.large = 4 * s.holds
		}
	}
	CheckGoroutines(t)
	cases := []struct {
		name string
		run  func(t *testing.T, e *env)
		raw  bool // needs WithRawDial
	}{
		{"RoundTrip", testRoundTrip, false},
		{"Order", testOrder, false},
		{"PartialPayloadSkipped", testPartialSkip, false},
		{"ReadPayloadOverrun", testOverrun, false},
		{"ConcurrentWriters", testConcurrentWriters, false},
		{"Bidirectional", testBidirectional, false},
		{"WriteParts", testWriteParts, false},
		{"WritePartsMixed", testWritePartsMixed, false},
		{"InvalidWrite", testInvalidWrite, false},
		{"CloseUnblocksReadHeader", testCloseUnblocksRead, false},
		{"CloseUnblocksWrite", testCloseUnblocksWrite, false},
		{"PeerCloseFailsWrite", testPeerCloseFailsWrite, false},
		{"UseAfterClose", testUseAfterClose, false},
		{"EOFAtBoundary", testEOFAtBoundary, false},
		{"UnexpectedEOFInPayload", testUnexpectedEOF, false},
		{"ContextDoneBeforeWrite", testCancelBeforeWrite, false},
		{"ContextEndsMidWrite", testCancelMidWrite, false},
		{"Refused", testRefused, false},
		{"ListenerClose", testListenerClose, false},
		{"Garbage", testGarbage, true},
		{"Poll", testPoll, false},
	}
	for _, c := range cases {
		if c.raw && s.raw == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			c.run(t, s.newEnv(t))
		})
	}
}

// env is the state of one case: its transport, its log and what the
// watchdog closes.
type env struct {
	tr    transport.Transport
	raw   RawDialer
	holds int             // WithHolds
	large int             // the suite's large messages (WithLarge)
	ctx   context.Context // ends when the watchdog fires
	log   *logBuffer

	mu      sync.Mutex
	closers []io.Closer
}

func (s *suite) newEnv(t *testing.T) *env {
	ctx, cancel := context.WithCancel(context.Background())
	e := &env{tr: s.mk(t), raw: s.raw, holds: s.holds, large: s.large, ctx: ctx, log: &logBuffer{}}
	timer := time.AfterFunc(s.timeout, func() {
		t.Errorf("watchdog: case still running after %v; closing its links", s.timeout)
		cancel()
		e.closeAll()
	})
	t.Cleanup(func() {
		timer.Stop()
		cancel()
		e.closeAll()
	})
	return e
}

// partRead is how much of a large message (WithLarge) the cases that end
// its write midway read first: a quarter, at most 1 MiB.
func (e *env) partRead() int { return min(e.large/4, 1<<20) }

func (e *env) track(c io.Closer) {
	e.mu.Lock()
	e.closers = append(e.closers, c)
	e.mu.Unlock()
}

func (e *env) closeAll() {
	e.mu.Lock()
	cs := e.closers
	e.closers = nil
	e.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

func (e *env) config(rank int) transport.Config { return Config(rank, e.log) }

func (e *env) listen(t *testing.T) transport.Listener {
	t.Helper()
	ln, err := e.tr.Listen("", e.config(acceptRank))
	require.NoError(t, err)
	require.NotEmpty(t, ln.Addr())
	e.track(ln)
	return ln
}

// accept returns the next link of ln, failing the test if there is none
// before the watchdog fires.
func (e *env) accept(t *testing.T, ln transport.Listener) transport.Link {
	t.Helper()
	type res struct {
		l   transport.Link
		err error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := ln.Accept()
		ch <- res{l, err}
	}()
	var r res
	select {
	case r = <-ch:
	case <-e.ctx.Done():
		require.FailNow(t, "Accept did not return")
	}
	require.NoError(t, r.err)
	e.track(r.l)
	return r.l
}

// pair returns the two ends of a new link: a dialed (rank 0), b accepted
// (rank 1).
func (e *env) pair(t *testing.T) (a, b transport.Link) {
	t.Helper()
	ln := e.listen(t)
	a, err := e.tr.Dial(e.ctx, ln.Addr(), acceptRank, e.config(dialRank))
	require.NoError(t, err)
	e.track(a)
	b = e.accept(t, ln)
	require.Equal(t, acceptRank, a.Peer())
	require.Equal(t, dialRank, b.Peer())
	return a, b
}

// async runs f in a goroutine; the returned function waits for its
// result (or the watchdog).
func (e *env) async(f func() error) func(t *testing.T) error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return func(t *testing.T) error {
		t.Helper()
		select {
		case err := <-ch:
			return err
		case <-e.ctx.Done():
			require.FailNow(t, "goroutine of the case did not finish")
			return nil
		}
	}
}

// asyncOK is async for a function that should succeed: if it fails, the
// case's links are closed at once so that the other side of the case
// fails fast instead of waiting for the watchdog.
func (e *env) asyncOK(f func() error) func(t *testing.T) error {
	return e.async(func() error {
		err := f()
		if err != nil {
			e.closeAll()
		}
		return err
	})
}

// header returns a valid header for a payload of n bytes. Links carry
// headers without reading them, so the suite numbers its messages in the
// communicator id: id is what a test checks for order and identity.
func header(tag int64, id uint64, n int) wire.Header {
	return wire.Header{
		Kind:   wire.KindSend,
		DType:  kernel.Uint8,
		Comm:   id,
		Tag:    tag,
		Count:  uint64(n) + 7,
		Length: uint64(n),
		Root:   -1,
		Offset: 7,
	}
}

// pattern fills b with bytes that depend on seed and position: a
// xorshift sequence patternPeriod bytes long, repeated. The period is a
// prime, so bytes that a link loses, repeats or puts out of place by any
// power of two (its chunks, buffers and rings) or by any other distance
// below the period show. The repeats are copies, which the race detector
// checks a range at a time, where it checks each byte that a loop
// stores: a 64 MiB pattern took a second so.
func pattern(b []byte, seed uint64) []byte {
	x := seed*0x9e3779b97f4a7c15 + 1
	n := min(len(b), patternPeriod)
	for i := range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	for filled := n; filled < len(b); filled *= 2 {
		copy(b[filled:], b[:filled])
	}
	return b
}

// patternPeriod is the length of pattern's sequence, the largest prime
// below 64 KiB.
const patternPeriod = 65521

// split returns payload in the two parts of a WriteParts: head, a copy
// of its first k bytes, nil when empty, followed in memory by other
// bytes, so that a link that took the two parts for one slice would send
// those; and body, the rest of payload itself (not a copy, which cost
// the race detector a check of every byte of a 64 MiB message), nil when
// empty.
func split(payload []byte, k int) (head, body []byte) {
	const gap = 64
	if k > 0 {
		buf := make([]byte, k+gap)
		for i := range gap {
			buf[k+i] = 0xa5
		}
		head = buf[:k]
		copy(head, payload)
	}
	if k < len(payload) {
		body = payload[k:]
	}
	return head, body
}

// A write sends a message, its payload whole or in parts.
type write struct {
	name string
	send func(l transport.Link, ctx context.Context, h wire.Header, payload []byte) error
}

// writes are the ways of sending that the cases about a write's
// guarantees (cancellation, Close, a peer gone) check alike: the payload
// whole, and in two parts, a head of up to 100 bytes and the body.
var writes = []write{
	{"WriteMessage", func(l transport.Link, ctx context.Context, h wire.Header, payload []byte) error {
		return l.WriteMessage(ctx, h, payload)
	}},
	{"WriteParts", func(l transport.Link, ctx context.Context, h wire.Header, payload []byte) error {
		head, body := split(payload, min(len(payload), 100))
		return l.WriteParts(ctx, h, head, body)
	}},
}

// ReadMessage reads the next whole message of l into a new buffer.
func ReadMessage(l transport.Link) (wire.Header, []byte, error) {
	var h wire.Header
	if err := l.ReadHeader(&h); err != nil {
		return h, nil, err
	}
	p := make([]byte, h.Length)
	err := l.ReadPayload(p)
	return h, p, err
}

func testRoundTrip(t *testing.T, e *env) {
	a, b := e.pair(t)
	for _, n := range []int{0, 1, 63, 64, 65, 4096, 1<<20 + 3, 16 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for _, dir := range []struct {
				name     string
				from, to transport.Link
			}{{"dialer to acceptor", a, b}, {"acceptor to dialer", b, a}} {
				payload := pattern(make([]byte, n), uint64(n))
				h := header(int64(-n), uint64(n), n)
				h.Flags = wire.FlagLast
				wait := e.asyncOK(func() error { return dir.from.WriteMessage(context.Background(), h, payload) })
				got, data, err := ReadMessage(dir.to)
				require.NoError(t, err, dir.name)
				require.NoError(t, wait(t), dir.name)
				require.Equal(t, h, got, dir.name)
				require.True(t, bytes.Equal(payload, data), "%s: payload of %d bytes differs", dir.name, n)
			}
		})
	}
}

// readAcross reads the n-byte payload of l's current message in pieces
// that end just before and just after k, where the parts of a WriteParts
// meet, and within the body, never at k itself.
func readAcross(l transport.Link, n, k int) ([]byte, error) {
	p := make([]byte, n)
	off := 0
	for _, end := range []int{k - 1, k + 1, k + 1 + (n-k)/2, n} {
		end = max(off, min(end, n))
		if err := l.ReadPayload(p[off:end]); err != nil {
			return nil, err
		}
		off = end
	}
	return p, nil
}

// testWriteParts sends payloads in two parts, of sizes around those at
// which links change how they send: tcp copies a message of up to 256
// bytes into one buffer and moves at most 1 MiB a system call, shm reads
// a body of 64 KiB or more by CMA and streams a head larger than its
// ring. The reader reads each in pieces that do not end where the parts
// meet.
func testWriteParts(t *testing.T, e *env) {
	a, b := e.pair(t)
	for i, c := range []struct{ head, body int }{
		{0, 0},
		{0, 1000},
		{1000, 0},
		{3, 5},
		{64, 128}, // with the header, 256 bytes
		{64, 129},
		{100, 64<<10 - 1},
		{100, 64 << 10},
		{0, 64 << 10},
		{1, 1<<20 + 3},
		{2<<20 + 5, 10},
		{3<<20 + 1, 5 << 20},
	} {
		t.Run(fmt.Sprintf("%d+%d", c.head, c.body), func(t *testing.T) {
			n := c.head + c.body
			payload := pattern(make([]byte, n), uint64(i))
			head, body := split(payload, c.head)
			h := header(int64(c.head), uint64(i), n)
			wait := e.asyncOK(func() error { return a.WriteParts(context.Background(), h, head, body) })
			var got wire.Header
			require.NoError(t, b.ReadHeader(&got))
			require.Equal(t, h, got)
			p, err := readAcross(b, n, c.head)
			require.NoError(t, err)
			require.NoError(t, wait(t))
			require.True(t, bytes.Equal(payload, p), "payload of %d+%d bytes differs", c.head, c.body)
		})
	}
}

// testWritePartsMixed sends many messages, by turns whole and in two
// parts, and reads each in pieces that do not end where its parts meet,
// or only in part, the rest skipped by the next ReadHeader (which leaves
// shm some of a head in its ring before a body it would read by CMA). It
// checks their order and contents.
func testWritePartsMixed(t *testing.T, e *env) {
	a, b := e.pair(t)
	sizes := []int{0, 1, 40, 192, 193, 5000, 64<<10 + 7, 300 << 10}
	// The messages take the sizes in turn; those sent in parts (i odd)
	// have a small head, one half, or all of the payload for their head.
	size := func(i int) (n, head int) {
		n = sizes[i%len(sizes)]
		switch i % 3 {
		case 0:
			return n, min(n, i%97)
		case 1:
			return n, n / 2
		default:
			return n, n
		}
	}
	const count = 240
	wait := e.asyncOK(func() error {
		for i := range count {
			n, k := size(i)
			payload := pattern(make([]byte, n), uint64(i))
			h := header(int64(i%2), uint64(i), n)
			var err error
			if i%2 == 0 {
				err = a.WriteMessage(context.Background(), h, payload)
			} else {
				head, body := split(payload, k)
				err = a.WriteParts(context.Background(), h, head, body)
			}
			if err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
		}
		return nil
	})
	for i := range count {
		n, k := size(i)
		var h wire.Header
		require.NoError(t, b.ReadHeader(&h))
		require.Equal(t, uint64(i), h.Comm, "message out of order")
		want := pattern(make([]byte, n), uint64(i))
		switch i % 5 {
		case 0: // skipped whole
		case 1: // read up to the middle of the head, the rest skipped
			p := make([]byte, min(n, k/2+1))
			require.NoError(t, b.ReadPayload(p))
			require.Equal(t, want[:len(p)], p, "message %d", i)
		default:
			p, err := readAcross(b, n, k)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, p), "message %d: payload of %d bytes, head %d, differs", i, n, k)
		}
	}
	require.NoError(t, wait(t))
}

func testOrder(t *testing.T, e *env) {
	a, b := e.pair(t)
	const n = 1000
	wait := e.asyncOK(func() error {
		for i := range n {
			h := header(1, uint64(i), i%97)
			if err := a.WriteMessage(context.Background(), h, pattern(make([]byte, i%97), uint64(i))); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
		}
		return nil
	})
	for i := range n {
		h, p, err := ReadMessage(b)
		require.NoError(t, err)
		require.Equal(t, uint64(i), h.Comm, "message out of order")
		require.Equal(t, pattern(make([]byte, i%97), uint64(i)), p)
	}
	require.NoError(t, wait(t))
}

func testPartialSkip(t *testing.T, e *env) {
	a, b := e.pair(t)
	// Message i has 1000+i bytes; the reader reads reads[i] of them.
	reads := []int{0, 10, 999, 1002, 0, 1 << 20, 5}
	sizes := make([]int, len(reads))
	for i := range reads {
		sizes[i] = 1000 + i
		if reads[i] > 1000 {
			sizes[i] = reads[i] + i + 1
		}
	}
	sizes = append(sizes, 100)
	wait := e.asyncOK(func() error {
		for i, n := range sizes {
			h := header(0, uint64(i), n)
			if err := a.WriteMessage(context.Background(), h, pattern(make([]byte, n), uint64(i))); err != nil {
				return err
			}
		}
		return nil
	})
	for i, r := range reads {
		var h wire.Header
		require.NoError(t, b.ReadHeader(&h))
		require.Equal(t, uint64(i), h.Comm, "a skipped payload was read as a header")
		if r == 0 {
			continue
		}
		// Read the prefix in two pieces.
		p := make([]byte, r)
		require.NoError(t, b.ReadPayload(p[:r/2]))
		require.NoError(t, b.ReadPayload(p[r/2:]))
		require.Equal(t, pattern(make([]byte, sizes[i]), uint64(i))[:r], p)
	}
	h, p, err := ReadMessage(b)
	require.NoError(t, err)
	require.Equal(t, uint64(len(reads)), h.Comm)
	require.Equal(t, pattern(make([]byte, 100), uint64(len(reads))), p)
	require.NoError(t, wait(t))
}

func testOverrun(t *testing.T, e *env) {
	a, b := e.pair(t)
	require.Error(t, b.ReadPayload(make([]byte, 1)), "ReadPayload before any header")
	require.NoError(t, b.ReadPayload(nil), "an empty ReadPayload always succeeds")
	payload := pattern(make([]byte, 100), 3)
	wait := e.asyncOK(func() error {
		h := header(0, 1, 100)
		if err := a.WriteMessage(context.Background(), h, payload); err != nil {
			return err
		}
		h = header(0, 2, 0)
		return a.WriteMessage(context.Background(), h, nil)
	})
	var h wire.Header
	require.NoError(t, b.ReadHeader(&h))
	require.Error(t, b.ReadPayload(make([]byte, 101)))
	p := make([]byte, 100)
	require.NoError(t, b.ReadPayload(p[:40]))
	require.Error(t, b.ReadPayload(make([]byte, 61)))
	require.NoError(t, b.ReadPayload(p[40:]), "a failed ReadPayload must not consume anything")
	require.Equal(t, payload, p)
	require.Error(t, b.ReadPayload(make([]byte, 1)), "ReadPayload past the end of the payload")
	require.NoError(t, b.ReadHeader(&h))
	require.Equal(t, uint64(2), h.Comm)
	require.Error(t, b.ReadPayload(make([]byte, 1)), "ReadPayload of an empty message")
	require.NoError(t, wait(t))
}

func testConcurrentWriters(t *testing.T, e *env) {
	a, b := e.pair(t)
	const writers, perWriter = 8, 200
	size := func(w, i int) int { return (w*131 + i*977) % 5000 }
	var waits []func(*testing.T) error
	for w := range writers {
		waits = append(waits, e.asyncOK(func() error {
			for i := range perWriter {
				n := size(w, i)
				h := header(int64(w), uint64(i), n)
				if err := a.WriteMessage(context.Background(), h, pattern(make([]byte, n), uint64(w)<<32|uint64(i))); err != nil {
					return fmt.Errorf("writer %d message %d: %w", w, i, err)
				}
			}
			return nil
		}))
	}
	next := make([]int, writers)
	for range writers * perWriter {
		h, p, err := ReadMessage(b)
		require.NoError(t, err)
		w, i := int(h.Tag), int(h.Comm)
		require.True(t, w >= 0 && w < writers, "bad writer %d", w)
		require.Equal(t, next[w], i, "writer %d: messages out of order", w)
		next[w]++
		require.Len(t, p, size(w, i))
		require.True(t, bytes.Equal(pattern(make([]byte, len(p)), uint64(w)<<32|uint64(i)), p), "writer %d message %d: interleaved payload", w, i)
	}
	for _, wait := range waits {
		require.NoError(t, wait(t))
	}
}

func testBidirectional(t *testing.T, e *env) {
	a, b := e.pair(t)
	const n = 300
	send := func(l transport.Link, seed uint64) func(*testing.T) error {
		return e.asyncOK(func() error {
			for i := range n {
				size := (i * 4099) % (64 << 10)
				h := header(int64(seed), uint64(i), size)
				if err := l.WriteMessage(context.Background(), h, pattern(make([]byte, size), seed+uint64(i))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	recv := func(l transport.Link, seed uint64) func(*testing.T) error {
		return e.asyncOK(func() error {
			for i := range n {
				h, p, err := ReadMessage(l)
				if err != nil {
					return err
				}
				if h.Comm != uint64(i) || uint64(h.Tag) != seed || !bytes.Equal(p, pattern(make([]byte, len(p)), seed+uint64(i))) {
					return fmt.Errorf("message %d from %d: got id %d tag %d, or a wrong payload", i, seed, h.Comm, h.Tag)
				}
			}
			return nil
		})
	}
	waits := []func(*testing.T) error{send(a, 1000), send(b, 2000), recv(b, 1000), recv(a, 2000)}
	for _, wait := range waits {
		require.NoError(t, wait(t))
	}
}

func testInvalidWrite(t *testing.T, e *env) {
	a, b := e.pair(t)
	h := header(0, 1, 10)
	require.Error(t, a.WriteMessage(context.Background(), h, make([]byte, 9)), "payload shorter than Length")
	for _, parts := range [][2]int{{4, 5}, {6, 5}, {0, 11}, {10, 1}, {0, 0}} {
		head, body := make([]byte, parts[0]), make([]byte, parts[1])
		require.Error(t, a.WriteParts(context.Background(), h, head, body), "parts of %d and %d bytes for a Length of 10", parts[0], parts[1])
	}
	bad := header(0, 1, 0)
	bad.DType = 0
	require.ErrorIs(t, a.WriteMessage(context.Background(), bad, nil), wire.ErrBadHeader)
	require.ErrorIs(t, a.WriteParts(context.Background(), bad, nil, nil), wire.ErrBadHeader)
	// The link is still usable and nothing of the rejected messages went
	// out.
	h = header(0, 2, 3)
	wait := e.asyncOK(func() error { return a.WriteParts(context.Background(), h, []byte{1}, []byte{2, 3}) })
	got, p, err := ReadMessage(b)
	require.NoError(t, err)
	require.Equal(t, uint64(2), got.Comm)
	require.Equal(t, []byte{1, 2, 3}, p)
	require.NoError(t, wait(t))
}

// settle gives a goroutine time to block in the call it is about to make.
// The cases that use it pass whether or not it blocked in time.
func settle() { time.Sleep(50 * time.Millisecond) }

func testCloseUnblocksRead(t *testing.T, e *env) {
	_, b := e.pair(t)
	wait := e.async(func() error {
		var h wire.Header
		return b.ReadHeader(&h)
	})
	settle()
	require.NoError(t, b.Close())
	require.ErrorIs(t, wait(t), net.ErrClosed)
}

func testCloseUnblocksWrite(t *testing.T, e *env) {
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			a, _ := e.pair(t)
			h := header(0, 1, e.large)
			payload := make([]byte, e.large)
			wait := e.async(func() error { return w.send(a, context.Background(), h, payload) })
			settle()
			require.NoError(t, a.Close())
			require.ErrorIs(t, wait(t), net.ErrClosed)
		})
	}
}

func testPeerCloseFailsWrite(t *testing.T, e *env) {
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			a, b := e.pair(t)
			h := header(0, 1, e.large)
			payload := make([]byte, e.large)
			wait := e.async(func() error { return w.send(a, context.Background(), h, payload) })
			settle()
			require.NoError(t, b.Close())
			err := wait(t)
			require.Error(t, err, "a write whose reader closed must fail")
			require.False(t, errors.Is(err, net.ErrClosed), "the writer's own link was not closed, got %v", err)
		})
	}
}

func testUseAfterClose(t *testing.T, e *env) {
	a, b := e.pair(t)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "Close is idempotent")
	var h wire.Header
	require.ErrorIs(t, a.ReadHeader(&h), net.ErrClosed)
	require.ErrorIs(t, a.ReadPayload(make([]byte, 1)), net.ErrClosed)
	w := header(0, 1, 1)
	require.ErrorIs(t, a.WriteMessage(context.Background(), w, []byte{1}), net.ErrClosed)
	require.ErrorIs(t, a.WriteParts(context.Background(), w, nil, []byte{1}), net.ErrClosed)
	require.ErrorIs(t, b.ReadHeader(&h), io.EOF)
	require.NoError(t, b.Close())
	require.ErrorIs(t, b.ReadHeader(&h), net.ErrClosed)
}

func testEOFAtBoundary(t *testing.T, e *env) {
	a, b := e.pair(t)
	sizes := []int{0, 10, 1 << 16, 1}
	wait := e.asyncOK(func() error {
		for i, n := range sizes {
			h := header(0, uint64(i), n)
			if err := a.WriteMessage(context.Background(), h, pattern(make([]byte, n), uint64(i))); err != nil {
				return err
			}
		}
		return a.Close()
	})
	for i, n := range sizes {
		h, p, err := ReadMessage(b)
		require.NoError(t, err, "messages written before Close must be delivered")
		require.Equal(t, uint64(i), h.Comm)
		require.Equal(t, pattern(make([]byte, n), uint64(i)), p)
	}
	var h wire.Header
	require.ErrorIs(t, b.ReadHeader(&h), io.EOF)
	require.NoError(t, wait(t))
	require.ErrorIs(t, b.ReadHeader(&h), io.EOF, "io.EOF again after the end")
}

func testUnexpectedEOF(t *testing.T, e *env) {
	for _, tc := range []struct {
		name   string
		finish func(l transport.Link) error // reads after the peer closed
	}{
		{"ReadPayload", func(l transport.Link) error { return l.ReadPayload(make([]byte, e.large-e.partRead())) }},
		{"ReadHeader skips", func(l transport.Link) error {
			var h wire.Header
			return l.ReadHeader(&h)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := e.pair(t)
			h := header(0, 1, e.large)
			payload := make([]byte, e.large)
			pattern(payload[:e.partRead()], 1) // what the reader checks
			wait := e.async(func() error { return a.WriteMessage(context.Background(), h, payload) })
			var got wire.Header
			require.NoError(t, b.ReadHeader(&got))
			p := make([]byte, e.partRead())
			require.NoError(t, b.ReadPayload(p))
			require.Equal(t, payload[:len(p)], p)
			require.NoError(t, a.Close())
			require.ErrorIs(t, wait(t), net.ErrClosed)
			require.ErrorIs(t, tc.finish(b), io.ErrUnexpectedEOF)
		})
	}
}

func testCancelBeforeWrite(t *testing.T, e *env) {
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			a, b := e.pair(t)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			h := header(0, 1, 5)
			require.ErrorIs(t, w.send(a, ctx, h, make([]byte, 5)), context.Canceled)
			dl, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel2()
			require.ErrorIs(t, w.send(a, dl, h, make([]byte, 5)), context.DeadlineExceeded)

			// The link still works, and the cancelled messages never
			// went out.
			live, cancel3 := context.WithTimeout(context.Background(), time.Minute)
			defer cancel3()
			h = header(0, 2, 3)
			wait := e.asyncOK(func() error { return w.send(a, live, h, []byte{7, 8, 9}) })
			got, p, err := ReadMessage(b)
			require.NoError(t, err)
			require.Equal(t, uint64(2), got.Comm)
			require.Equal(t, []byte{7, 8, 9}, p)
			require.NoError(t, wait(t))
		})
	}
}

// testCancelMidWrite ends a write's context once the reader has read the
// first part of the payload (partRead): of the body, when it was given
// in parts.
func testCancelMidWrite(t *testing.T, e *env) {
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			a, b := e.pair(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := header(0, 1, e.large)
			payload := make([]byte, e.large)
			wait := e.async(func() error { return w.send(a, ctx, h, payload) })
			var got wire.Header
			require.NoError(t, b.ReadHeader(&got))
			require.NoError(t, b.ReadPayload(make([]byte, e.partRead())))
			cancel()
			err := wait(t)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, err, net.ErrClosed, "a message cut short closes the link")
			next := header(0, 2, 0)
			require.ErrorIs(t, a.WriteMessage(context.Background(), next, nil), net.ErrClosed)
			require.ErrorIs(t, b.ReadPayload(make([]byte, e.large-e.partRead())), io.ErrUnexpectedEOF)
		})
	}
}

func testRefused(t *testing.T, e *env) {
	ln := e.listen(t)
	tests := []struct {
		name string
		cfg  func(c *transport.Config)
		peer int
	}{
		{"wrong secret", func(c *transport.Config) { c.Secret = []byte("not the secret") }, acceptRank},
		{"no secret", func(c *transport.Config) { c.Secret = nil }, acceptRank},
		{"other job", func(c *transport.Config) { c.JobID = JobID + 1 }, acceptRank},
		{"wrong rank", func(c *transport.Config) {}, acceptRank + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.log.lines()
			cfg := e.config(dialRank)
			tc.cfg(&cfg)
			l, err := e.tr.Dial(e.ctx, ln.Addr(), tc.peer, cfg)
			require.ErrorIs(t, err, transport.ErrRefused)
			require.Nil(t, l)
			// The listener logs the refusal, possibly after Dial
			// returned.
			require.Eventually(t, func() bool { return e.log.lines() > before }, 5*time.Second, time.Millisecond,
				"refusal not logged by the listener")
			// And it keeps serving.
			good, err := e.tr.Dial(e.ctx, ln.Addr(), acceptRank, e.config(dialRank))
			require.NoError(t, err)
			e.track(good)
			b := e.accept(t, ln)
			require.Equal(t, dialRank, b.Peer())
			roundTrip(t, e, good, b)
		})
	}
}

// roundTrip checks that one small message goes from a to b.
func roundTrip(t *testing.T, e *env, a, b transport.Link) {
	t.Helper()
	h := header(9, 9, 4)
	wait := e.asyncOK(func() error { return a.WriteMessage(context.Background(), h, []byte("ping")) })
	got, p, err := ReadMessage(b)
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.Equal(t, []byte("ping"), p)
	require.NoError(t, wait(t))
}

func testListenerClose(t *testing.T, e *env) {
	ln := e.listen(t)
	addr := ln.Addr()
	wait := e.async(func() error {
		_, err := ln.Accept()
		return err
	})
	settle()
	require.NoError(t, ln.Close())
	require.ErrorIs(t, wait(t), net.ErrClosed)
	_, err := ln.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = e.tr.Dial(e.ctx, addr, acceptRank, e.config(dialRank))
	require.Error(t, err, "dial to a closed listener")
}

func testGarbage(t *testing.T, e *env) {
	ln := e.listen(t)
	// A connection that never says anything holds a handshake goroutine
	// until the timeout or Close; it must not hold up others.
	silent, err := e.raw(ln.Addr())
	require.NoError(t, err)
	e.track(silent)
	inputs := map[string][]byte{
		"random":    pattern(make([]byte, 4096), 99),
		"short":     []byte("GCAUTH1"),
		"http":      []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n" + string(make([]byte, 64))),
		"empty":     nil,
		"one zero":  {0},
		"long junk": pattern(make([]byte, 1<<20), 98),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			before := e.log.lines()
			c, err := e.raw(ln.Addr())
			require.NoError(t, err)
			e.track(c)
			// The listener may hang up before all of it is written.
			c.Write(in)
			if cw, ok := c.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
			require.Eventually(t, func() bool { return e.log.lines() > before }, 5*time.Second, time.Millisecond,
				"garbage not logged by the listener")
			c.Close()
			good, err := e.tr.Dial(e.ctx, ln.Addr(), acceptRank, e.config(dialRank))
			require.NoError(t, err)
			e.track(good)
			b := e.accept(t, ln)
			roundTrip(t, e, good, b)
		})
	}
	assert.Contains(t, e.log.String(), "remote=", "log lines name the remote address")
}

// logBuffer collects log output; it is safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	n  int
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n += bytes.Count(p, []byte("\n"))
	return l.b.Write(p)
}

func (l *logBuffer) lines() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
