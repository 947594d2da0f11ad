// Command slowrank is the worked example of the README's "Finding where
// the time goes": a data-parallel loop in which the last rank computes
// longer than the others before every Allreduce, so that the others wait
// for it. Each rank prints what its communicator's Stats say of the
// calls: the waiting ranks' time goes to Wait, the slow rank's to the
// work of the call itself.
//
//	go build -o /tmp/slowrank ./examples/slowrank
//	go run ./cmd/gocoll run -n 4 --trace /tmp/slowrank.json /tmp/slowrank
//	go run ./cmd/gocoll run -n 4 --timeout 5s /tmp/slowrank -hang
//
// With -hang the slow rank stops calling collectives after the first
// step, and the others wait until the communicator's timeout fails the
// job; gocoll run then prints the flight recorder's diagnosis.
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
	steps := flag.Int("steps", 20, "training steps, one Allreduce each")
	slow := flag.Duration("slow", 20*time.Millisecond, "how much longer the last rank computes each step")
	hang := flag.Bool("hang", false, "the last rank stops calling collectives after the first step")
	flag.Parse()

	ctx := context.Background()
	c, err := comm.Init(ctx, comm.WithStatsSampling(1))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := run(ctx, c, os.Stdout, *steps, *slow, *hang); err != nil {
		log.Fatal(err)
	}
}

// run is the loop on one rank, writing its Stats to w.
func run(ctx context.Context, c *comm.Comm, w io.Writer, steps int, slow time.Duration, hang bool) error {
	last := c.Rank() == c.Size()-1
	grad := make([]float32, 256<<10) // 1 MiB
	for step := range steps {
		compute(grad, time.Millisecond)
		if last {
			if hang && step == 1 {
				select {} // stuck in its own code
			}
			compute(grad, slow)
		}
		if err := collective.Allreduce(ctx, c, grad, codec.Avg); err != nil {
			return err
		}
	}
	for _, s := range c.Stats() {
		mean := func(d time.Duration) time.Duration {
			return (d / time.Duration(max(s.Timed, 1))).Round(time.Microsecond)
		}
		fmt.Fprintf(w, "rank %d: %s %s over %s, %d calls, %.1f MB sent; per call %v: wait %v, wire %v, copy %v, reduce %v, other %v\n",
			c.Rank(), s.Collective, s.Algorithm, s.Transport, s.Calls, float64(s.BytesSent)/1e6,
			mean(s.Time), mean(s.Wait), mean(s.Wire), mean(s.Copy), mean(s.Reduce), mean(s.Other()))
	}
	return nil
}

// compute stands for a step's forward and backward pass: it works on
// grad for d.
func compute(grad []float32, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range grad[:1024] {
			grad[i] = grad[i]*0.5 + 1
		}
	}
}
