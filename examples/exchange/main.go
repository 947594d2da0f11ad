// Command exchange passes typed buffers around a ring of ranks: every rank
// sends a []float32 to the next rank and receives one from the previous,
// straight from and into the slices' memory, then times a stream of large
// buffers to report the bandwidth each rank achieved.
//
//	go build -o /tmp/exchange ./examples/exchange
//	go run ./cmd/gocoll run -n 4 /tmp/exchange
//	go run ./examples/exchange -local 4 -mib 4
//
// With -local n it runs n ranks as goroutines of one process, over
// in-memory links, without a launcher.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/examples/internal/ranks"
)

func main() {
	local := flag.Int("local", 0, "run this many ranks in this process (comm.NewLocal) instead of joining a launcher's job")
	mib := flag.Int("mib", 16, "size of the buffers timed, in MiB")
	rounds := flag.Int("rounds", 20, "number of timed rounds")
	flag.Parse()

	err := ranks.Run(context.Background(), *local, nil, func(ctx context.Context, c *comm.Comm) error {
		_, err := run(ctx, c, *mib, *rounds, os.Stdout)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run passes a small typed buffer around the ring and checks what arrives,
// then times rounds exchanges of mib MiB; every rank writes a line to w
// for each. It returns the small buffer this rank received from the
// previous one.
func run(ctx context.Context, c *comm.Comm, mib, rounds int, w io.Writer) ([]float32, error) {
	// An empty stream has no last element to check, and zero rounds
	// would time nothing. Every rank checks before its first message, so
	// all of them fail alike rather than wait for one that gave up.
	if mib < 1 || rounds < 1 {
		return nil, fmt.Errorf("-mib %d and -rounds %d must be at least 1", mib, rounds)
	}
	me, size := c.Rank(), c.Size()
	next, prev := (me+1)%size, (me+size-1)%size

	// A small typed exchange whose contents each rank can check.
	mine := make([]float32, 8)
	for i := range mine {
		mine[i] = float32(me) + float32(i)/8
	}
	got := make([]float32, len(mine))
	if err := exchange(ctx, c, next, prev, 0, mine, got); err != nil {
		return nil, err
	}
	for i, v := range got {
		if want := float32(prev) + float32(i)/8; v != want {
			return nil, fmt.Errorf("element %d from rank %d is %v, want %v", i, prev, v, want)
		}
	}
	fmt.Fprintf(w, "rank %d/%d received from rank %d: %v\n", me, size, prev, got)

	// Bandwidth: every rank streams buffers to its neighbour at once.
	n := mib << 20 / 4
	out, in := make([]float32, n), make([]float32, n)
	for i := range out {
		out[i] = float32(me)
	}
	if err := exchange(ctx, c, next, prev, 1, out, in); err != nil { // warm-up
		return nil, err
	}
	start := time.Now()
	for r := range rounds {
		if err := exchange(ctx, c, next, prev, 2+r, out, in); err != nil {
			return nil, err
		}
	}
	elapsed := time.Since(start)
	if in[n-1] != float32(prev) {
		return nil, fmt.Errorf("last element of the stream is %v, want %v", in[n-1], float32(prev))
	}
	bytes := float64(rounds) * float64(4*n)
	fmt.Fprintf(w, "rank %d/%d: %d × %d MiB to rank %d in %v: %.2f GB/s per direction\n",
		me, size, rounds, mib, next, elapsed.Round(time.Millisecond), bytes/elapsed.Seconds()/1e9)
	return got, nil
}

// exchange sends out to rank next and receives in from rank prev, as
// MPI_Sendrecv does. The receive is posted first, so the payload lands
// straight in in, and it checks that the message holds float32s.
func exchange(ctx context.Context, c *comm.Comm, next, prev, tag int, out, in []float32) error {
	_, err := comm.Sendrecv(ctx, c, out, next, tag, in, prev, tag)
	return err
}
