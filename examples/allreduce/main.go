// Command allreduce is the smallest useful gocoll program: every rank
// holds a gradient, and one call leaves every rank with the average. It
// then times large allreduces and prints the bandwidth achieved.
//
//	go build -o /tmp/allreduce ./examples/allreduce
//	go run ./cmd/gocoll run -n 4 /tmp/allreduce
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
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
	me, n := c.Rank(), c.Size()

	// Rank r's gradient is r+1 everywhere; the average is (n+1)/2.
	grad := make([]float32, 8)
	for i := range grad {
		grad[i] = float32(me + 1)
	}
	if err := collective.Allreduce(ctx, c, grad, codec.Avg); err != nil {
		log.Fatal(err)
	}
	if want := float32(n+1) / 2; grad[0] != want {
		log.Fatalf("average is %v, want %v", grad[0], want)
	}
	fmt.Printf("rank %d/%d: average gradient %v\n", me, n, grad)

	big := make([]float32, max(*size/4, 1))
	if err := collective.Allreduce(ctx, c, big, codec.Sum); err != nil { // warm-up
		log.Fatal(err)
	}
	if err := collective.Barrier(ctx, c); err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	for range *rounds {
		if err := collective.Allreduce(ctx, c, big, codec.Sum); err != nil {
			log.Fatal(err)
		}
	}
	per := time.Since(start) / time.Duration(*rounds)
	bytes := float64(4 * len(big))
	busbw := bytes / per.Seconds() / 1e9 * 2 * float64(n-1) / float64(n)
	if me == 0 {
		fmt.Printf("allreduce of %d bytes of float32 over %d ranks: %v each, algbw %.2f GB/s, busbw %.2f GB/s\n",
			4*len(big), n, per.Round(100*time.Nanosecond), bytes/per.Seconds()/1e9, busbw)
	}
}
