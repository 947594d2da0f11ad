// Command worker is a rank of the multi-host tests (package multihost):
// gocoll run starts it in each container, and GOCOLL_MH_ROLE says what it
// does.
//
//	allreduce  a Hierarchical allreduce, checked against the exact sum
//	wait       say "ready", then wait for a message that never comes,
//	           until the job fails; report whom the failure names
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := comm.Init(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		os.Exit(2)
	}
	defer c.Close()
	if err := run(ctx, c, os.Getenv("GOCOLL_MH_ROLE")); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c *comm.Comm, role string) error {
	switch role {
	case "allreduce":
		return allreduce(ctx, c)
	case "wait":
		if err := collective.Barrier(ctx, c); err != nil {
			return err
		}
		fmt.Println("ready")
		start := time.Now()
		_, err := c.Recv(ctx, (c.Rank()+c.Size()/2)%c.Size(), 0, make([]byte, 1))
		var pe *comm.PeerError
		if errors.As(err, &pe) {
			fmt.Printf("lost ranks %v after %v\n", pe.Ranks, time.Since(start).Round(time.Millisecond))
		}
		return err
	}
	return fmt.Errorf("unknown GOCOLL_MH_ROLE %q", role)
}

// allreduce sums rank·n+i over the ranks with the Hierarchical algorithm
// (shared memory inside each container, links between them) and checks
// every element against the exact sum.
func allreduce(ctx context.Context, c *comm.Comm) error {
	const n = 1<<16 + 3
	size := c.Size()
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(c.Rank()*n + i)
	}
	if err := collective.Allreduce(ctx, c, x, codec.Sum, collective.WithAlgorithm(collective.Hierarchical)); err != nil {
		return err
	}
	for i, got := range x {
		want := float64(n*size*(size-1)/2 + size*i)
		if got != want {
			return fmt.Errorf("element %d is %v, want %v", i, got, want)
		}
	}
	fmt.Printf("rank %d: hierarchical allreduce of %d float64 over %d ranks ok\n", c.Rank(), n, size)
	return nil
}
