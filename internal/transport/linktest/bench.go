package linktest

import (
	"context"
	"testing"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// The benchmarks measure a link from one end, a; the other end runs Echo
// or Sink, in a goroutine of this process (BenchmarkPingPong,
// BenchmarkStream) or in another process (PingPong, Stream with a peer
// that a transport's tests start), so that every transport, and every
// arrangement of its ends, is measured alike.

// BenchmarkPingPong measures the round trip of a message of size bytes
// from a to z and back, with z in this process; see PingPong.
func BenchmarkPingPong(b *testing.B, a, z transport.Link, size int) {
	withPeer(a, z, Echo, func() { PingPong(b, a, size) })
}

// BenchmarkStream measures one-way bandwidth from a to z, with z in this
// process; see Stream.
func BenchmarkStream(b *testing.B, a, z transport.Link, size int) {
	withPeer(a, z, Sink, func() { Stream(b, a, size) })
}

// withPeer runs peer on z in a goroutine while measure runs, and then
// (also when measure fails the benchmark) closes a and waits for peer to
// end.
func withPeer(a, z transport.Link, peer func(transport.Link) error, measure func()) {
	done := make(chan error, 1)
	go func() { done <- peer(z) }()
	defer func() {
		a.Close()
		<-done
	}()
	measure()
}

// PingPong measures the round trip of a message of size bytes from a to
// its peer, which runs Echo, and back: each iteration is one round trip,
// and the one-way latency is reported as "ns/oneway".
func PingPong(b *testing.B, a transport.Link, size int) {
	h := header(0, 0, size)
	out := make([]byte, size)
	in := make([]byte, size)
	ctx := context.Background()
	var got wire.Header
	roundTrip := func() {
		if err := a.WriteMessage(ctx, h, out); err != nil {
			b.Fatal(err)
		}
		if err := a.ReadHeader(&got); err != nil {
			b.Fatal(err)
		}
		if err := a.ReadPayload(in); err != nil {
			b.Fatal(err)
		}
	}
	for range 100 {
		roundTrip()
	}
	b.SetBytes(int64(2 * size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		roundTrip()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "ns/oneway")
}

// Stream measures one-way bandwidth: a writes messages of size bytes
// back to back to its peer, which runs Sink. The last message of a batch
// is flagged wire.FlagLast and the peer answers it, so that the timer
// stops when the last message has been read, not merely written into
// buffers.
func Stream(b *testing.B, a transport.Link, size int) {
	h := header(0, 0, size)
	out := make([]byte, size)
	ctx := context.Background()
	var got wire.Header
	batch := func(n int) {
		for i := range n {
			h.Flags = 0
			if i == n-1 {
				h.Flags = wire.FlagLast
			}
			if err := a.WriteMessage(ctx, h, out); err != nil {
				b.Fatal(err)
			}
		}
		if err := a.ReadHeader(&got); err != nil {
			b.Fatal(err)
		}
	}
	batch(4)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	batch(b.N)
	b.StopTimer()
}

// Echo sends every message that l receives back, until l fails, and
// returns that error. It is the peer of PingPong.
func Echo(l transport.Link) error {
	return serve(l, func(h *wire.Header, p []byte) error {
		return l.WriteMessage(context.Background(), *h, p)
	})
}

// Sink reads every message of l and answers each one flagged
// wire.FlagLast with an empty message, until l fails, and returns that
// error. It is the peer of Stream.
func Sink(l transport.Link) error {
	ack := header(0, 0, 0)
	return serve(l, func(h *wire.Header, p []byte) error {
		if h.Flags&wire.FlagLast == 0 {
			return nil
		}
		return l.WriteMessage(context.Background(), ack, nil)
	})
}

// serve reads every message of l into one buffer, which grows as needed,
// and hands it to f, until l or f fails.
func serve(l transport.Link, f func(h *wire.Header, p []byte) error) error {
	var h wire.Header
	var buf []byte
	for {
		if err := l.ReadHeader(&h); err != nil {
			return err
		}
		if uint64(cap(buf)) < h.Length {
			buf = make([]byte, h.Length)
		}
		p := buf[:h.Length]
		if err := l.ReadPayload(p); err != nil {
			return err
		}
		if err := f(&h, p); err != nil {
			return err
		}
	}
}
