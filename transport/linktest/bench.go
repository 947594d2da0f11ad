package linktest

import (
	"context"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/transport"
)

// BenchmarkPingPong measures the round trip of a message of size bytes
// from a to b and back: each iteration is one round trip, and the
// one-way latency is reported as "ns/oneway". Every transport's
// benchmarks call it alike, so the numbers compare.
func BenchmarkPingPong(b *testing.B, a, z transport.Link, size int) {
	h := codec.Header{Kind: codec.KindSend, DType: codec.Uint8, Count: uint64(size), Length: uint64(size), Root: -1}
	out := make([]byte, size)
	in := make([]byte, size)
	echoBuf := make([]byte, size)
	ctx := context.Background()
	echoErr := make(chan error, 1)
	go func() {
		var eh codec.Header
		for {
			if err := z.ReadHeader(&eh); err != nil {
				echoErr <- err
				return
			}
			if err := z.ReadPayload(echoBuf[:eh.Length]); err != nil {
				echoErr <- err
				return
			}
			if err := z.WriteMessage(ctx, eh, echoBuf[:eh.Length]); err != nil {
				echoErr <- err
				return
			}
		}
	}()
	var got codec.Header
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
	a.Close()
	<-echoErr
}

// BenchmarkStream measures one-way bandwidth: a writes messages of size
// bytes back to back and b reads each straight into one buffer.
func BenchmarkStream(b *testing.B, a, z transport.Link, size int) {
	h := codec.Header{Kind: codec.KindSend, DType: codec.Uint8, Count: uint64(size), Length: uint64(size), Root: -1}
	out := make([]byte, size)
	ctx := context.Background()
	// The reader acknowledges every message with an empty one, so that
	// the timer stops when the last message has been read, not merely
	// written into socket buffers.
	ack := codec.Header{Kind: codec.KindSend, DType: codec.Uint8, Root: -1}
	readErr := make(chan error, 1)
	go func() {
		in := make([]byte, size)
		var rh codec.Header
		for {
			if err := z.ReadHeader(&rh); err != nil {
				readErr <- err
				return
			}
			if err := z.ReadPayload(in[:rh.Length]); err != nil {
				readErr <- err
				return
			}
			if rh.Flags&codec.FlagLast != 0 {
				if err := z.WriteMessage(ctx, ack, nil); err != nil {
					readErr <- err
					return
				}
			}
		}
	}()
	var got codec.Header
	batch := func(n int) {
		for i := range n {
			h.Flags = 0
			if i == n-1 {
				h.Flags = codec.FlagLast
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
	a.Close()
	<-readErr
}
