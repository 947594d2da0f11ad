// Command allreduce is the smallest useful gocoll program: every rank
// holds a gradient, and one call leaves every rank with the average. It
// then times large allreduces, prints the bandwidth achieved and, from
// the communicator's counts, which algorithm and transport the calls
// used.
//
//	go build -o /tmp/allreduce ./examples/allreduce
//	go run ./cmd/gocoll run -n 4 /tmp/allreduce
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
)

func main() {
	size := flag.Int("bytes", 16<<20, "size of the timed allreduce in bytes (float32, so a multiple of 4)")
	rounds := flag.Int("rounds", 10, "number of timed allreduces")
	flag.Parse()

	ctx := context.Background()
	c, err := comm.Init(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := run(ctx, c, os.Stdout, *size, *rounds); err != nil {
		log.Fatal(err)
	}
}

// run is the program on one rank, writing to w.
func run(ctx context.Context, c *comm.Comm, w io.Writer, size, rounds int) error {
	me, n := c.Rank(), c.Size()

	// Rank r's gradient is r+1 everywhere; the average is (n+1)/2.
	grad := make([]float32, 8)
	for i := range grad {
		grad[i] = float32(me + 1)
	}
	if err := collective.Allreduce(ctx, c, grad, codec.Avg); err != nil {
		return err
	}
	if want := float32(n+1) / 2; grad[0] != want {
		return fmt.Errorf("average is %v, want %v", grad[0], want)
	}
	fmt.Fprintf(w, "rank %d/%d: average gradient %v\n", me, n, grad)

	big := make([]float32, max(size/4, 1))
	if err := collective.Allreduce(ctx, c, big, codec.Sum); err != nil { // warm-up
		return err
	}
	if err := collective.Barrier(ctx, c); err != nil {
		return err
	}
	start := time.Now()
	for range rounds {
		if err := collective.Allreduce(ctx, c, big, codec.Sum); err != nil {
			return err
		}
	}
	per := time.Since(start) / time.Duration(rounds)
	bytes := float64(4 * len(big))
	busbw := bytes / per.Seconds() / 1e9 * 2 * float64(n-1) / float64(n)
	if me != 0 {
		return nil
	}
	fmt.Fprintf(w, "allreduce of %d bytes of float32 over %d ranks: %v each, algbw %.2f GB/s, busbw %.2f GB/s\n",
		4*len(big), n, per.Round(100*time.Nanosecond), bytes/per.Seconds()/1e9, busbw)
	// What the selector chose for these calls, and what carried them.
	for _, s := range c.Stats() {
		calls := "calls"
		if s.Calls == 1 {
			calls = "call"
		}
		fmt.Fprintf(w, "%s: %s over %s, %d %s, %s sent\n", s.Collective, s.Algorithm, s.Transport, s.Calls, calls, decimal(s.BytesSent))
	}
	return nil
}

// decimal writes n bytes in decimal units, as the bandwidths count them.
func decimal(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
