//go:build linux

package shm_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/testutil"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/auth"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/shm"
	"github.com/gocoll/gocoll/internal/wire"
)

func header(tag int64, n int) wire.Header {
	return wire.Header{Kind: wire.KindSend, DType: kernel.Uint8, Tag: tag, Count: uint64(n), Length: uint64(n), Root: -1}
}

// fill fills b with bytes that depend on seed.
func fill(b []byte, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5348))
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// async runs f in a goroutine and returns a channel with its result.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// result waits for the result of an async call, failing the test if it
// does not come within d.
func result(t *testing.T, ch <-chan error, d time.Duration) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		require.FailNow(t, "call did not return", "after %v", d)
		return nil
	}
}

// readInPieces reads the payload of the current message of l, n bytes,
// in pieces of random sizes.
func readInPieces(l transport.Link, n int, r *rand.Rand) ([]byte, error) {
	p := make([]byte, n)
	for off := 0; off < n; {
		k := min(n-off, 1+r.IntN(n/3+1))
		if err := l.ReadPayload(p[off : off+k]); err != nil {
			return nil, err
		}
		off += k
	}
	return p, nil
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []shm.Option
		ring int
	}{
		{"default", nil, shm.DefaultRingSize},
		{"power of two", []shm.Option{shm.WithRingSize(64 << 10)}, 64 << 10},
		{"rounded up", []shm.Option{shm.WithRingSize(5000)}, 8192},
		{"below the minimum", []shm.Option{shm.WithRingSize(100)}, shm.MinRingSize},
		{"negative", []shm.Option{shm.WithRingSize(-1)}, shm.MinRingSize},
		{"above the maximum", []shm.Option{shm.WithRingSize(math.MaxInt)}, shm.MaxRingSize},
		{"other options keep the size", []shm.Option{shm.WithRingSize(8192), shm.WithDir("/tmp")}, 8192},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := shm.New(tc.opts...)
			require.Equal(t, "shm", tr.Name())
			require.Equal(t, tc.ring, shm.RingSize(tr))
		})
	}
}

func TestAddresses(t *testing.T) {
	tr := shm.New()
	ln, err := tr.Listen("", linktest.Config(1, nil))
	require.NoError(t, err)
	defer ln.Close()
	require.True(t, strings.HasPrefix(ln.Addr(), "@gocoll-"), "random abstract name, got %q", ln.Addr())

	name := fmt.Sprintf("@gocoll-test-%d", os.Getpid())
	named, err := tr.Listen(name, linktest.Config(1, nil))
	require.NoError(t, err)
	defer named.Close()
	require.Equal(t, name, named.Addr())
	_, err = tr.Listen(named.Addr(), linktest.Config(1, nil))
	require.Error(t, err, "the name is taken")

	for _, bad := range []string{"/tmp/gocoll.sock", "gocoll", "@", "127.0.0.1:1234"} {
		_, err := tr.Listen(bad, linktest.Config(1, nil))
		require.ErrorContains(t, err, "abstract socket", "Listen(%q)", bad)
		_, err = tr.Dial(context.Background(), bad, 1, linktest.Config(0, nil))
		require.ErrorContains(t, err, "abstract socket", "Dial(%q)", bad)
	}
}

// TestWrapAround sends messages of odd sizes through a ring of the
// smallest size, so that records and payloads start and end everywhere
// in it and wrap around its end, and checks every payload's checksum.
func TestWrapAround(t *testing.T) {
	a, b := linktest.Pair(t, shm.New(shm.WithRingSize(shm.MinRingSize)))
	const messages = 8000
	sizes := rand.New(rand.NewPCG(1, 2))
	size := func() int {
		switch sizes.IntN(4) {
		case 0:
			return sizes.IntN(64)
		case 1:
			return sizes.IntN(shm.MinRingSize)
		default:
			return sizes.IntN(3 * shm.MinRingSize)
		}
	}
	done := async(func() error {
		buf := make([]byte, 3*shm.MinRingSize)
		for i := range messages {
			p := fill(buf[:size()], uint64(i))
			h := header(int64(crc32.ChecksumIEEE(p)), len(p))
			h.Comm = uint64(i)
			if err := a.WriteMessage(context.Background(), h, p); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
		}
		return nil
	})
	pieces := rand.New(rand.NewPCG(3, 4))
	for i := range messages {
		var h wire.Header
		require.NoError(t, b.ReadHeader(&h))
		require.Equal(t, uint64(i), h.Comm)
		p, err := readInPieces(b, int(h.Length), pieces)
		require.NoError(t, err)
		require.Equal(t, uint32(h.Tag), crc32.ChecksumIEEE(p), "message %d of %d bytes", i, h.Length)
	}
	require.NoError(t, result(t, done, 10*time.Second))
}

// TestLargerThanRing streams messages of several MiB through a 64 KiB
// ring, reading some whole, some in pieces and skipping some in part.
func TestLargerThanRing(t *testing.T) {
	a, b := linktest.Pair(t, shm.New(shm.WithRingSize(64<<10)))
	tests := []struct {
		name string
		size int
		read int // bytes read before the next header skips the rest; -1: all
	}{
		{"4 MiB whole", 4 << 20, -1},
		{"odd size in pieces", 3<<20 + 12345, -1},
		{"8 MiB", 8 << 20, -1},
		{"skipped after 1 MiB", 5 << 20, 1 << 20},
		{"skipped at once", 2<<20 + 1, 0},
		{"after the skips", 1<<20 + 7, -1},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload := fill(make([]byte, tc.size), uint64(i))
			done := async(func() error { return a.WriteMessage(context.Background(), header(int64(i), tc.size), payload) })
			var h wire.Header
			require.NoError(t, b.ReadHeader(&h))
			require.Equal(t, int64(i), h.Tag, "a skipped payload was read as a header")
			n := tc.read
			if n < 0 {
				n = tc.size
			}
			got, err := readInPieces(b, n, r)
			require.NoError(t, err)
			require.True(t, bytes.Equal(payload[:n], got), "payload differs")
			if tc.read >= 0 {
				// The writer finishes when the next ReadHeader skips
				// the rest; a marker message follows to read it.
				first := done
				marker := async(func() error {
					if err := <-first; err != nil {
						return err
					}
					return a.WriteMessage(context.Background(), header(-1, 0), nil)
				})
				require.NoError(t, b.ReadHeader(&h))
				require.Equal(t, int64(-1), h.Tag)
				done = marker
			}
			require.NoError(t, result(t, done, 10*time.Second))
		})
	}
}

// TestPollStreaming: a message that fits in the ring but is longer than
// a chunk is Streaming from its first published chunk, here while the
// writer is held there, and a reader that takes it then waits for the
// rest and gets it whole; a message within a chunk goes from Nothing to
// Whole.
func TestPollStreaming(t *testing.T) {
	a, b := linktest.Pair(t, shm.New(shm.WithRingSize(1<<20)))
	p := b.(transport.Poller)
	tests := []struct {
		name string
		size int
		want transport.Arrival
	}{
		{"within a chunk", 1000, transport.Whole},
		{"chunks", 200 << 10, transport.Streaming},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hold := make(chan struct{})
			var first sync.Once
			shm.SetStreamed(t, func() { first.Do(func() { <-hold }) })
			payload := fill(make([]byte, tc.size), uint64(i))
			done := async(func() error { return a.WriteMessage(context.Background(), header(int64(i), tc.size), payload) })
			var h wire.Header
			arrival := transport.Nothing
			for arrival == transport.Nothing {
				var err error
				arrival, err = p.Poll(&h)
				require.NoError(t, err)
				if arrival == transport.Nothing {
					require.NoError(t, p.WaitReadable())
				}
			}
			require.Equal(t, tc.want, arrival)
			close(hold)
			require.NoError(t, readWhole(b, payload))
			require.NoError(t, result(t, done, 10*time.Second))
		})
	}
}

// TestWaitReadableBesideAReader: WaitReadable, which may run without the
// reading side (transport.Poller), waits beside a reader that waits for
// the rest of a streaming message, both asleep on the reader's bell at
// once. The rest comes in one piece, which rings the bell once: the
// message arrives whole, and both waits end. They shared the reading
// side's Waiter once, which the race detector caught in CI (2026-11-29,
// TestPolledLinkDelivers in core), and then its knock channel, so that
// the one knock woke one of them and the other slept out its park; with
// the parks unbounded here, that is a hang.
func TestWaitReadableBesideAReader(t *testing.T) {
	shm.SetParkTimeout(t, time.Hour)
	a, b := linktest.Pair(t, shm.New(shm.WithRingSize(1<<20)))
	p := b.(transport.Poller)
	hold := make(chan struct{})
	var first sync.Once
	shm.SetStreamed(t, func() { first.Do(func() { <-hold }) })
	// A first chunk, and a rest that is shorter than a chunk.
	payload := fill(make([]byte, shm.MaxChunk+shm.MaxChunk/2), 7)
	written := async(func() error { return a.WriteMessage(context.Background(), header(7, len(payload)), payload) })
	var h wire.Header
	for arrival := transport.Nothing; arrival != transport.Streaming; {
		var err error
		arrival, err = p.Poll(&h)
		require.NoError(t, err)
		if arrival == transport.Nothing {
			require.NoError(t, p.WaitReadable())
		}
	}
	read := async(func() error { return readWhole(b, payload) })
	waited := async(p.WaitReadable)
	// Both sleep once each has polled for its spin window.
	for i := 0; shm.ReaderSleepers(b) < 2; i++ {
		require.Less(t, i, 10000, "the reader and WaitReadable never slept at once")
		time.Sleep(time.Millisecond)
	}
	close(hold)
	require.NoError(t, result(t, written, 10*time.Second))
	require.NoError(t, result(t, read, 10*time.Second), "the reader slept on")
	require.NoError(t, result(t, waited, 10*time.Second), "WaitReadable slept on")
}

// TestConcurrentWriters has many goroutines write messages of many
// tags and sizes, CMA ones included, on one link: every message arrives
// whole and each writer's in order.
func TestConcurrentWriters(t *testing.T) {
	tests := []struct {
		name string
		opts []shm.Option
	}{
		{"default", nil},
		{"without CMA, small ring", []shm.Option{shm.WithRingSize(16 << 10)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := linktest.Pair(t, shm.New(tc.opts...))
			const writers, perWriter, tags = 16, 200, 37
			size := func(w, i int) int {
				if (w+i)%50 == 0 {
					return shm.CMAThreshold + w*1000 + i
				}
				return (w*7919 + i*104729) % 3000
			}
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						n := size(w, i)
						h := header(int64(w*tags+i%tags), n)
						h.Comm = uint64(i)
						if err := a.WriteMessage(context.Background(), h, fill(make([]byte, n), uint64(w)<<32|uint64(i))); err != nil {
							errs <- fmt.Errorf("writer %d message %d: %w", w, i, err)
							return
						}
					}
				})
			}
			next := make([]int, writers)
			for range writers * perWriter {
				var h wire.Header
				require.NoError(t, b.ReadHeader(&h))
				w, i := int(h.Tag)/tags, int(h.Comm)
				require.Equal(t, next[w], i, "writer %d: messages out of order", w)
				require.Equal(t, int64(w*tags+i%tags), h.Tag)
				next[w]++
				p := make([]byte, h.Length)
				require.NoError(t, b.ReadPayload(p))
				require.Len(t, p, size(w, i))
				require.True(t, bytes.Equal(fill(make([]byte, len(p)), uint64(w)<<32|uint64(i)), p), "writer %d message %d: interleaved payload", w, i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}

// TestLargePayloads sends payloads around the CMA threshold and far
// above it by CMA, through the ring, and with CMA refused by the reader,
// and checks their contents. A payload read whole by CMA is copied half
// by the writer, unless the writer may not write into the reader, which
// then copies it all and stops asking; read in pieces, by the reader
// alone. The writers never park here, or a slow reader would find them
// asleep and not ask (TestSleepingWriterIsNotAsked).
func TestLargePayloads(t *testing.T) {
	shm.SetAckSpin(t, time.Hour)
	tests := []struct {
		name       string
		opts       []shm.Option
		refused    bool // the reader acts as if process_vm_readv were refused
		whole      bool // the reader reads each payload in one piece
		refuseHelp bool // the writer acts as if process_vm_writev were refused
	}{
		{"CMA", []shm.Option{shm.WithCMA()}, false, false, false},
		{"CMA whole", []shm.Option{shm.WithCMA()}, false, true, false},
		{"CMA whole, help refused", []shm.Option{shm.WithCMA()}, false, true, true},
		{"ring", nil, false, false, false},
		{"CMA refused", []shm.Option{shm.WithCMA()}, true, false, false},
		{"CMA refused, whole", []shm.Option{shm.WithCMA()}, true, true, false},
	}
	sizes := []int{shm.CMAThreshold - 1, shm.CMAThreshold, 1<<20 + 3, 6<<20 + 1}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := linktest.Pair(t, shm.New(tc.opts...))
			if tc.refused {
				shm.RefuseCMA(b)
			}
			if tc.refuseHelp {
				shm.RefuseHelp(a)
			}
			r := rand.New(rand.NewPCG(7, 8))
			for round := range 2 {
				for i, n := range sizes {
					seed := uint64(round*100 + i)
					payload := fill(make([]byte, n), seed)
					done := async(func() error { return a.WriteMessage(context.Background(), header(int64(i), n), payload) })
					var h wire.Header
					require.NoError(t, b.ReadHeader(&h))
					require.Equal(t, uint64(n), h.Length)
					got := make([]byte, n)
					var err error
					if tc.whole {
						err = b.ReadPayload(got)
					} else {
						got, err = readInPieces(b, n, r)
					}
					require.NoError(t, err)
					require.True(t, bytes.Equal(payload, got), "%d bytes, round %d: payload differs", n, round)
					require.NoError(t, result(t, done, 10*time.Second))
					if n >= shm.CMAThreshold && tc.whole && !tc.refused {
						assert.Equal(t, !tc.refuseHelp, shm.Helped(a), "%d bytes, round %d: the writer helped", n, round)
					}
					// The writer must not need the payload any more.
					clear(payload)
				}
			}
			assert.Equal(t, tc.refused, shm.CMARefused(a), "the writer remembers a refusal, and only a refusal")
			assert.Equal(t, tc.refuseHelp, shm.Unhelped(b), "the reader stops asking for help after a refusal, and only then")
		})
	}
}

// TestCMAWhereFaster: a link made WithCMAWhereFaster sends its large
// payloads through the ring at first and then tries CMA, whatever the
// two cost on this host: shmem.SingleCopy learns each way before it
// compares them. It learns nothing from the writes of the ring's first
// lap, which fault the ring's pages in, and keeps to the ring while its
// chooser rents it before a slow first reach. A link made WithCMA sends
// every large payload by CMA, one made without either none. Every
// payload arrives whole; a reader that refuses CMA gets the rest of that
// payload and every later one through the ring.
func TestCMAWhereFaster(t *testing.T) {
	shm.SetAckSpin(t, time.Hour)
	const writes, payloadSize = 40, 128 << 10
	tests := []struct {
		name    string
		opts    []shm.Option
		refused bool
		check   func(t *testing.T, ways []bool)
	}{
		{"chosen", []shm.Option{shm.WithCMAWhereFaster(new(shmem.SingleCopy))}, false, func(t *testing.T, ways []bool) {
			require.Len(t, ways, writes)
			first := slices.Index(ways, true)
			assert.GreaterOrEqual(t, first, shm.DefaultRingSize/payloadSize,
				"the writes of the ring's first lap go through the ring, untimed, and then some timed ones")
			assert.Contains(t, ways[first+1:], false, "some payload after the first by CMA goes through the ring")
		}},
		{"chosen, refused", []shm.Option{shm.WithCMAWhereFaster(new(shmem.SingleCopy))}, true, func(t *testing.T, ways []bool) {
			first := slices.Index(ways, true)
			require.GreaterOrEqual(t, first, 1, "the first payload goes through the ring, and a later one by CMA")
			assert.Len(t, ways, first+1, "the writer asks nothing of its chooser after the refusal")
		}},
		// A host whose single copy's first reach of a page costs a
		// second: the ring's writes never pay that rent in 40 writes.
		{"chosen, renting", []shm.Option{shm.WithCMAWhereFaster(reaching(time.Second))}, false, func(t *testing.T, ways []bool) {
			assert.Equal(t, slices.Repeat([]bool{false}, writes), ways)
		}},
		{"CMA", []shm.Option{shm.WithCMA()}, false, func(t *testing.T, ways []bool) {
			assert.Equal(t, slices.Repeat([]bool{true}, writes), ways)
		}},
		{"ring", nil, false, func(t *testing.T, ways []bool) {
			assert.Empty(t, ways)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ways []bool // written by the writing goroutine, read after its write returned
			shm.SetWrote(t, func(cma bool) { ways = append(ways, cma) })
			a, b := linktest.Pair(t, shm.New(tc.opts...))
			if tc.refused {
				shm.RefuseCMA(b)
			}
			for i := range writes {
				payload := fill(make([]byte, payloadSize), uint64(i))
				done := async(func() error { return a.WriteMessage(context.Background(), header(int64(i), len(payload)), payload) })
				var h wire.Header
				require.NoError(t, b.ReadHeader(&h))
				got := make([]byte, h.Length)
				require.NoError(t, b.ReadPayload(got))
				require.NoError(t, result(t, done, 10*time.Second))
				require.True(t, bytes.Equal(payload, got), "write %d: payload differs", i)
			}
			assert.Equal(t, tc.refused, shm.CMARefused(a), "the writer remembers a refusal, and only a refusal")
			tc.check(t, ways)
		})
	}
}

// reaching is a chooser told that a single copy's first reach of a page
// costs perPage.
func reaching(perPage time.Duration) *shmem.SingleCopy {
	sc := new(shmem.SingleCopy)
	sc.SetFirstReach(perPage)
	return sc
}

// TestSleepingWriterIsNotAsked: a reader that comes to a CMA payload
// whose writer has parked copies it alone rather than wake the writer to
// help.
func TestSleepingWriterIsNotAsked(t *testing.T) {
	a, b := linktest.Pair(t, shm.New(shm.WithCMA()))
	payload := fill(make([]byte, 256<<10), 3)
	done := async(func() error { return a.WriteMessage(context.Background(), header(1, len(payload)), payload) })
	var h wire.Header
	require.NoError(t, b.ReadHeader(&h))
	for i := 0; !shm.WriterParked(a); i++ {
		require.Less(t, i, 10000, "the writer never parked")
		time.Sleep(time.Millisecond)
	}
	p := make([]byte, len(payload))
	require.NoError(t, b.ReadPayload(p))
	require.Equal(t, payload, p)
	require.NoError(t, result(t, done, 10*time.Second))
	require.False(t, shm.Helped(a), "the writer was woken to help")
	require.False(t, shm.Unhelped(b), "the reader gave up asking")
}

// TestReaderWaitsForTheWritersHalf: a reader that asked the writer to
// write half of a payload returns only once the writer has answered,
// though the writer's side closes meanwhile: else the caller would have
// its buffer back while the writer could still write into it. The
// reader must look at the closed writer twice without returning (a test
// hook counts its looks), which no sleep decides.
func TestReaderWaitsForTheWritersHalf(t *testing.T) {
	shm.SetAckSpin(t, time.Hour)
	a, b := linktest.Pair(t, shm.New(shm.WithCMA()))
	entered, release := make(chan struct{}), make(chan struct{})
	shm.SetHelping(t, func() {
		close(entered)
		<-release
	})
	// Once the writer's side has closed, the reader finds it so, and
	// looks again: it waits on rather than returning.
	looked, look := looks()
	shm.SetWaitsOnClosed(t, look)
	payload := fill(make([]byte, 256<<10), 5)
	written := async(func() error { return a.WriteMessage(context.Background(), header(1, len(payload)), payload) })
	var h wire.Header
	require.NoError(t, b.ReadHeader(&h))
	p := make([]byte, len(payload))
	read := async(func() error { return b.ReadPayload(p) })
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the reader never asked for help")
	}
	require.NoError(t, a.Close())
	requireWaitsOn(t, looked, read, "the reader returned while the writer could still write into its buffer")
	close(release)
	require.ErrorIs(t, result(t, read, 10*time.Second), io.ErrUnexpectedEOF)
	require.Error(t, result(t, written, 10*time.Second))
}

// looks makes a test hook that counts a waiting call's looks at what it
// waits for, and the channel that gets a value for each of its first two
// looks since the channel was last drained.
func looks() (looked chan struct{}, look func()) {
	looked = make(chan struct{}, 2)
	return looked, func() {
		select {
		case looked <- struct{}{}:
		default:
		}
	}
}

// requireWaitsOn requires a call, whose result comes on done, to look
// twice at what it waits for (looked, from looks) without returning:
// then it waits. returned says what returning would mean.
func requireWaitsOn(t *testing.T, looked <-chan struct{}, done <-chan error, returned string) {
	t.Helper()
	for i := range 2 {
		select {
		case <-looked:
		case err := <-done:
			require.FailNow(t, returned, "err: %v", err)
		case <-time.After(10 * time.Second):
			require.FailNow(t, "the call neither returned nor looked at what it waits for", "looks: %d", i)
		}
	}
	select {
	case err := <-done:
		require.FailNow(t, returned, "err: %v", err)
	default:
	}
}

// TestCMAWaitsForReader checks that a CMA write returns only once the
// reader has read or skipped the payload, and that after a refusal the
// link sends large payloads through the ring, without waiting.
func TestCMAWaitsForReader(t *testing.T) {
	a, b := linktest.Pair(t, shm.New(shm.WithCMA()))
	payload := fill(make([]byte, 256<<10), 1)
	h := header(1, len(payload))
	write := func() <-chan error {
		return async(func() error { return a.WriteMessage(context.Background(), h, payload) })
	}
	// A write that has looked twice whether to stop waiting for its
	// reader, and not returned, waits for it.
	looked, look := looks()
	shm.SetWaitsForReader(t, look)
	var got wire.Header
	p := make([]byte, len(payload))
	pending := func(t *testing.T, done <-chan error) {
		t.Helper()
		for len(looked) > 0 {
			<-looked // of the write before, which has returned
		}
		requireWaitsOn(t, looked, done, "a CMA write returned before its payload was read")
	}

	t.Run("read", func(t *testing.T) {
		done := write()
		require.NoError(t, b.ReadHeader(&got))
		pending(t, done)
		require.NoError(t, b.ReadPayload(p))
		require.Equal(t, payload, p)
		require.NoError(t, result(t, done, 10*time.Second))
	})
	t.Run("skipped", func(t *testing.T) {
		done := write()
		require.NoError(t, b.ReadHeader(&got))
		pending(t, done)
		// The next message waits for the first; ReadHeader skips the
		// first's payload, which releases its writer.
		next := async(func() error { return a.WriteMessage(context.Background(), header(2, 0), nil) })
		require.NoError(t, b.ReadHeader(&got))
		require.Equal(t, int64(2), got.Tag)
		require.NoError(t, result(t, done, 10*time.Second))
		require.NoError(t, result(t, next, 10*time.Second))
	})
	t.Run("refused mid-payload", func(t *testing.T) {
		done := write()
		require.NoError(t, b.ReadHeader(&got))
		clear(p)
		require.NoError(t, b.ReadPayload(p[:1000]), "by CMA")
		shm.RefuseCMA(b)
		require.NoError(t, b.ReadPayload(p[1000:]), "through the ring, from where the reader stopped")
		require.Equal(t, payload, p)
		require.NoError(t, result(t, done, 10*time.Second))
		require.True(t, shm.CMARefused(a))
	})
	t.Run("after the refusal", func(t *testing.T) {
		require.NoError(t, result(t, write(), 10*time.Second), "a payload that fits in the ring goes without the reader")
		require.NoError(t, b.ReadHeader(&got))
		clear(p)
		require.NoError(t, b.ReadPayload(p))
		require.Equal(t, payload, p)
	})
}

// TestCMARefusedInParts refuses CMA to the reader of a payload given in
// two parts, whose head comes through the ring and whose body the reader
// reads by CMA: before the reader began, at the end of the head, and in
// the middle of the body. The writer must send the rest of the body
// through the ring from where the reader got to in it, which the reader
// reads, or reads in part and skips; and later bodies through the ring.
func TestCMARefusedInParts(t *testing.T) {
	for _, at := range []int{0, 1000, 3000} {
		for _, skip := range []bool{false, true} {
			t.Run(fmt.Sprintf("after %d skip %t", at, skip), func(t *testing.T) {
				a, b := linktest.Pair(t, shm.New(shm.WithCMA()))
				// A reader that waits for bytes that the writer does
				// not send fails rather than hangs.
				watchdog := time.AfterFunc(10*time.Second, func() {
					a.Close()
					b.Close()
				})
				defer watchdog.Stop()
				payload := fill(make([]byte, 1000+256<<10), uint64(at))
				head, body := bytes.Clone(payload[:1000]), bytes.Clone(payload[1000:])
				h := header(1, len(payload))
				write := func() <-chan error {
					return async(func() error { return a.WriteParts(context.Background(), h, head, body) })
				}
				var got wire.Header
				p := make([]byte, len(payload))

				done := write()
				require.NoError(t, b.ReadHeader(&got))
				require.NoError(t, b.ReadPayload(p[:at/2]))
				require.NoError(t, b.ReadPayload(p[at/2:at]))
				shm.RefuseCMA(b)
				// Into the body, which the reader then asks for by CMA.
				require.NoError(t, b.ReadPayload(p[at:at+1500]))
				require.Equal(t, payload[:at+1500], p[:at+1500])
				if !skip {
					require.NoError(t, b.ReadPayload(p[at+1500:]))
					require.True(t, bytes.Equal(payload, p), "payload differs")
				}
				require.NoError(t, result(t, done, 10*time.Second))
				require.True(t, shm.CMARefused(a))

				require.NoError(t, result(t, write(), 10*time.Second), "after the refusal, a payload that fits in the ring goes without the reader")
				require.NoError(t, b.ReadHeader(&got))
				clear(p)
				require.NoError(t, b.ReadPayload(p))
				require.True(t, bytes.Equal(payload, p), "payload after the refusal differs")
			})
		}
	}
}

// TestWakeAfterIdle lets a waiter sleep on its bell, well past the
// spinning, before the other side gives it what it waits for.
func TestWakeAfterIdle(t *testing.T) {
	const idle = 300 * time.Millisecond
	big := fill(make([]byte, 64<<10), 2)
	tests := []struct {
		name   string
		opts   []shm.Option
		wait   func(a, b transport.Link) error // blocks in a or b
		parked func(a, b transport.Link) bool
		wake   func(a, b transport.Link) error
	}{
		{
			"reader waits for data", nil,
			func(a, b transport.Link) error { return readWhole(b, []byte("late")) },
			func(a, b transport.Link) bool { return shm.ReaderSleepers(b) > 0 },
			func(a, b transport.Link) error {
				return a.WriteMessage(context.Background(), header(0, 4), []byte("late"))
			},
		},
		{
			"writer waits for space", []shm.Option{shm.WithRingSize(shm.MinRingSize)},
			func(a, b transport.Link) error { return a.WriteMessage(context.Background(), header(0, len(big)), big) },
			func(a, b transport.Link) bool { return shm.WriterParked(a) },
			func(a, b transport.Link) error { return readWhole(b, big) },
		},
		{
			"writer waits for the ack", []shm.Option{shm.WithCMA()},
			func(a, b transport.Link) error { return a.WriteMessage(context.Background(), header(0, len(big)), big) },
			func(a, b transport.Link) bool { return shm.WriterParked(a) },
			func(a, b transport.Link) error { return readWhole(b, big) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := linktest.Pair(t, shm.New(tc.opts...))
			start := time.Now()
			done := async(func() error { return tc.wait(a, b) })
			require.Eventually(t, func() bool { return tc.parked(a, b) }, 5*time.Second, time.Millisecond, "the waiter never went to sleep")
			// Asleep, the waiter holds no processor: a goroutine in a
			// system call keeps its own until the runtime's monitor
			// takes it back, up to 20 ms later, and the other
			// goroutines of a rank at GOMAXPROCS=1 wait that long.
			state := testutil.Asleep(t, "shmem.(*Waiter).sleep")
			require.NotContains(t, state, "syscall", "the sleeping waiter is in a system call")
			time.Sleep(idle - time.Since(start))
			select {
			case err := <-done:
				require.FailNow(t, "the waiter returned with nothing to wake it", "err: %v", err)
			default:
			}
			require.NoError(t, tc.wake(a, b))
			require.NoError(t, result(t, done, 10*time.Second))
		})
	}
}

// readWhole reads the next message of l and checks that it is want.
func readWhole(l transport.Link, want []byte) error {
	var h wire.Header
	if err := l.ReadHeader(&h); err != nil {
		return err
	}
	p := make([]byte, h.Length)
	if err := l.ReadPayload(p); err != nil {
		return err
	}
	if !bytes.Equal(p, want) {
		return fmt.Errorf("payload of %d bytes differs", len(p))
	}
	return nil
}

// TestCloseDuringTraffic closes links, from either end, while both
// directions carry messages of every kind: the calls in progress must
// return (the region is unmapped only after the last of them) and the
// process must not crash.
func TestCloseDuringTraffic(t *testing.T) {
	linktest.CheckGoroutines(t)
	tr := shm.New(shm.WithRingSize(16 << 10))
	r := rand.New(rand.NewPCG(9, 10))
	for round := range 30 {
		a, b := linktest.Pair(t, tr)
		var wg sync.WaitGroup
		for _, l := range []transport.Link{a, b} {
			wg.Go(func() {
				p := fill(make([]byte, 3*shm.CMAThreshold), uint64(round))
				for i := 0; ; i++ {
					n := (i * 7717) % len(p)
					if l.WriteMessage(context.Background(), header(0, n), p[:n]) != nil {
						return
					}
				}
			})
			wg.Go(func() {
				p := make([]byte, 3*shm.CMAThreshold)
				for {
					var h wire.Header
					if l.ReadHeader(&h) != nil {
						return
					}
					if l.ReadPayload(p[:h.Length/2]) != nil {
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
		first, second := a, b
		if round%2 == 1 {
			first, second = b, a
		}
		require.NoError(t, first.Close())
		time.Sleep(time.Duration(r.IntN(1000)) * time.Microsecond)
		require.NoError(t, second.Close())
		wg.Wait()
	}
}

// TestNoSpace dials with the regions in a tmpfs too small for one: Dial
// must fail with shmem.ErrNoSpace (never a SIGBUS), and the listener
// keep serving.
func TestNoSpace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tmpfs")
	require.NoError(t, os.Mkdir(dir, 0o700))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs of the test's own (%v: %s)", err, out)
	}
	defer exec.Command("umount", dir).Run()

	var log testutil.SyncBuffer
	ln, err := shm.New().Listen("", linktest.Config(1, &log))
	require.NoError(t, err)
	defer ln.Close()
	full := shm.New(shm.WithDir(dir))
	_, err = full.Dial(context.Background(), ln.Addr(), 1, linktest.Config(0, nil))
	require.ErrorIs(t, err, shmem.ErrNoSpace)
	require.ErrorContains(t, err, "rank 1")
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "refused connection") }, 5*time.Second, time.Millisecond)

	small := shm.New(shm.WithDir(dir), shm.WithRingSize(64<<10))
	accepted := async(func() error {
		l, err := ln.Accept()
		if err == nil {
			l.Close()
		}
		return err
	})
	l, err := small.Dial(context.Background(), ln.Addr(), 1, linktest.Config(0, nil))
	require.NoError(t, err, "a region that fits")
	l.Close()
	require.NoError(t, result(t, accepted, 5*time.Second))
}

// TestBadOffer sends the listener offers that it must refuse, after a
// valid handshake: it tells the dialer why, logs it and keeps serving.
func TestBadOffer(t *testing.T) {
	var log testutil.SyncBuffer
	ln, err := shm.New().Listen("", linktest.Config(1, &log))
	require.NoError(t, err)
	defer ln.Close()
	reg, err := shmem.Create("", 3*4096) // a link with 4 KiB rings
	require.NoError(t, err)
	defer reg.Close()
	offer := func(magic string, ring uint64, id shmem.Identity) []byte {
		b := []byte(magic)
		b = binary.LittleEndian.AppendUint64(b, ring)
		b = binary.LittleEndian.AppendUint64(b, id.Dev)
		b = binary.LittleEndian.AppendUint64(b, id.Ino)
		return append(b, make([]byte, 16)...)
	}
	const magic = "GCSHM\x00\x00\x01"
	otherID := reg.Identity()
	otherID.Ino++
	tests := []struct {
		name  string
		offer []byte
		fds   []int
		why   string
	}{
		{"no descriptor", offer(magic, 4096, reg.Identity()), nil, "0 descriptors"},
		{"two descriptors", offer(magic, 4096, reg.Identity()), []int{reg.FD(), reg.FD()}, "2 descriptors"},
		{"bad magic", offer("GCSHM\x00\x00\x09", 4096, reg.Identity()), []int{reg.FD()}, "not a shm offer"},
		{"ring not a power of two", offer(magic, 5000, reg.Identity()), []int{reg.FD()}, "offered ring of 5000 bytes"},
		{"region too small", offer(magic, 1<<20, reg.Identity()), []int{reg.FD()}, "want 2101248"},
		{"another file", offer(magic, 4096, otherID), []int{reg.FD()}, "not the shared memory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: ln.Addr(), Net: "unix"})
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
			_, _, err = auth.Client(c, linktest.Params(0), 1)
			require.NoError(t, err)
			var oob []byte
			if tc.fds != nil {
				oob = unix.UnixRights(tc.fds...)
			}
			_, _, err = c.WriteMsgUnix(tc.offer, oob, nil)
			require.NoError(t, err)
			answer, _ := io.ReadAll(c)
			require.NotEmpty(t, answer)
			require.Equal(t, byte(1), answer[0], "refused")
			require.Contains(t, string(answer), tc.why)
			require.Eventually(t, func() bool { return strings.Contains(log.String(), tc.why) }, 5*time.Second, time.Millisecond)
			require.Contains(t, log.String(), fmt.Sprintf(`remote="pid %d"`, os.Getpid()), "the log names the dialer's process")
		})
	}
	// And it keeps serving.
	accepted := async(func() error {
		l, err := ln.Accept()
		if err == nil {
			l.Close()
		}
		return err
	})
	l, err := shm.New().Dial(context.Background(), ln.Addr(), 1, linktest.Config(0, nil))
	require.NoError(t, err)
	l.Close()
	require.NoError(t, result(t, accepted, 5*time.Second))
}

// TestAllocs checks that a message costs no allocation on either side
// once the link runs, through the ring and by CMA, its payload whole or
// in two parts (WriteParts).
func TestAllocs(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		parts bool
	}{
		{"ring", 1000, false},
		{"CMA", 4 * shm.CMAThreshold, false},
		{"ring parts", 1000, true},
		{"CMA parts", 4 * shm.CMAThreshold, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := linktest.Pair(t, shm.New())
			payload := make([]byte, tc.size)
			head, body := make([]byte, 100), payload[100:]
			h := header(0, tc.size)
			dst := make([]byte, tc.size)
			ctx := context.Background()
			// A CMA write returns when the payload has been read, so it
			// runs in a goroutine of its own.
			start := make(chan struct{})
			written := make(chan error)
			go func() {
				for range start {
					if tc.parts {
						written <- a.WriteParts(ctx, h, head, body)
					} else {
						written <- a.WriteMessage(ctx, h, payload)
					}
				}
			}()
			defer close(start)
			var got wire.Header
			allocs := testing.AllocsPerRun(1000, func() {
				start <- struct{}{}
				if err := b.ReadHeader(&got); err != nil {
					t.Fatal(err)
				}
				if err := b.ReadPayload(dst); err != nil {
					t.Fatal(err)
				}
				if err := <-written; err != nil {
					t.Fatal(err)
				}
			})
			assert.Zero(t, allocs, "allocations per message")
		})
	}
}

// TestCloseAfterPublish: a message that this side's Close may have kept
// from the reader counts as not sent, but one the reader took is sent,
// also when the link closes before the write looks. A multi-process job
// saw a Send fail with "peer closed its communicator" after the peer had
// received the message: the peer finished and said goodbye, whose
// arrival closed the sender's link, between the sender's publishing and
// its look.
func TestCloseAfterPublish(t *testing.T) {
	for _, tt := range []struct {
		name  string
		taken bool // the reader takes the message before the close
	}{
		{"taken", true},
		{"not taken", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := linktest.Pair(t, shm.New())
			got := make([]byte, 5)
			shm.SetPublished(t, func() {
				if tt.taken {
					var h wire.Header
					require.NoError(t, b.ReadHeader(&h))
					require.NoError(t, b.ReadPayload(got))
				}
				require.NoError(t, a.Close())
			})
			err := a.WriteMessage(context.Background(), header(1, 5), []byte("taken"))
			if tt.taken {
				require.NoError(t, err, "the reader took the message")
				require.Equal(t, "taken", string(got))
			} else {
				require.ErrorIs(t, err, net.ErrClosed)
			}
		})
	}
}
