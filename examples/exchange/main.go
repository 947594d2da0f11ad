// Command exchange passes typed buffers around a ring of ranks: every rank
// sends a []float32 to the next rank and receives one from the previous,
// straight from and into the slices' memory, then times a stream of large
// buffers to report the bandwidth each rank achieved.
//
// Run it with gocoll run:
//
//	go build -o /tmp/exchange ./examples/exchange
//	go run ./cmd/gocoll run -n 4 /tmp/exchange
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

func main() {
	mib := flag.Int("mib", 16, "size of the buffers timed, in MiB")
	rounds := flag.Int("rounds", 20, "number of timed rounds")
	flag.Parse()

	ctx := context.Background()
	c, err := comm.Init(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	me, size := c.Rank(), c.Size()
	next, prev := (me+1)%size, (me+size-1)%size

	// A small typed exchange whose contents each rank can check.
	mine := make([]float32, 8)
	for i := range mine {
		mine[i] = float32(me) + float32(i)/8
	}
	got := make([]float32, len(mine))
	if err := exchange(ctx, c, next, prev, 0, mine, got); err != nil {
		log.Fatal(err)
	}
	for i, v := range got {
		if want := float32(prev) + float32(i)/8; v != want {
			log.Fatalf("element %d from rank %d is %v, want %v", i, prev, v, want)
		}
	}
	fmt.Printf("rank %d/%d received from rank %d: %v\n", me, size, prev, got)

	// Bandwidth: every rank streams buffers to its neighbour at once.
	n := *mib << 20 / 4
	out, in := make([]float32, n), make([]float32, n)
	for i := range out {
		out[i] = float32(me)
	}
	if err := exchange(ctx, c, next, prev, 1, out, in); err != nil { // warm-up
		log.Fatal(err)
	}
	start := time.Now()
	for r := range *rounds {
		if err := exchange(ctx, c, next, prev, 2+r, out, in); err != nil {
			log.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	if in[n-1] != float32(prev) {
		log.Fatalf("last element of the stream is %v, want %v", in[n-1], float32(prev))
	}
	bytes := float64(*rounds) * float64(4*n)
	fmt.Printf("rank %d/%d: %d × %d MiB to rank %d in %v: %.2f GB/s per direction\n",
		me, size, *rounds, *mib, next, elapsed.Round(time.Millisecond), bytes/elapsed.Seconds()/1e9)
}

// exchange sends out to rank next and receives in from rank prev. The
// receive is posted first, so the payload lands straight in in.
func exchange(ctx context.Context, c *comm.Comm, next, prev, tag int, out, in []float32) error {
	inBytes := codec.Bytes(in)
	req, err := c.Irecv(prev, tag, inBytes)
	if err != nil {
		return err
	}
	if err := c.Send(ctx, next, tag, codec.Bytes(out)); err != nil {
		return err
	}
	if _, err := req.Wait(ctx); err != nil {
		return err
	}
	codec.Store(in, inBytes) // a no-op unless built with -tags purego
	return nil
}
