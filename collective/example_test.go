package collective_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
)

// job runs f on every rank of a job of n ranks in this process, each in
// its own goroutine as it would run in its own process, and closes the
// communicators. A program started by gocoll run, mpirun, srun or
// torchrun calls comm.Init once instead and runs f for its one rank.
func job(n int, f func(ctx context.Context, c *comm.Comm) error) {
	cs, err := comm.NewLocal(n)
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			defer c.Close()
			if err := f(context.Background(), c); err != nil {
				log.Fatalf("rank %d: %v", c.Rank(), err)
			}
		})
	}
	wg.Wait()
}

// Every rank contributes its gradient; every rank gets the average.
func ExampleAllreduce() {
	var out [4][]float32
	job(4, func(ctx context.Context, c *comm.Comm) error {
		grad := []float32{float32(c.Rank()), 1, 2}
		if err := collective.Allreduce(ctx, c, grad, codec.Avg); err != nil {
			return err
		}
		out[c.Rank()] = grad
		return nil
	})
	fmt.Println(out[0], out[3])
	// Output: [1.5 1 2] [1.5 1 2]
}

// Out of place: each rank's counts stay as they were and the totals land
// in a slice of their own.
func ExampleAllreduceInto() {
	var out [3][2][]int64
	job(3, func(ctx context.Context, c *comm.Comm) error {
		counts := []int64{int64(c.Rank()), 10}
		totals := make([]int64, len(counts))
		if err := collective.AllreduceInto(ctx, c, counts, totals, codec.Sum); err != nil {
			return err
		}
		out[c.Rank()] = [2][]int64{counts, totals}
		return nil
	})
	fmt.Println(out[2][0], out[2][1])
	// Output: [2 10] [3 30]
}

// Rank 0 holds the parameters; Bcast gives every rank a copy.
func ExampleBcast() {
	var out [3][]int64
	job(3, func(ctx context.Context, c *comm.Comm) error {
		params := make([]int64, 3)
		if c.Rank() == 0 {
			copy(params, []int64{7, 8, 9})
		}
		if err := collective.Bcast(ctx, c, params, 0); err != nil {
			return err
		}
		out[c.Rank()] = params
		return nil
	})
	fmt.Println(out[1], out[2])
	// Output: [7 8 9] [7 8 9]
}

// Each rank sends two values; the root receives them in rank order.
// recv matters only on the root.
func ExampleGather() {
	var all []int32
	job(3, func(ctx context.Context, c *comm.Comm) error {
		send := []int32{int32(10 * c.Rank()), int32(10*c.Rank() + 1)}
		var recv []int32
		if c.Rank() == 0 {
			recv = make([]int32, 2*c.Size())
		}
		if err := collective.Gather(ctx, c, send, recv, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			all = recv
		}
		return nil
	})
	fmt.Println(all)
	// Output: [0 1 10 11 20 21]
}

// Every rank's partial counts are summed into the root's totals, as
// MPI_Reduce with two buffers does; the counts stay as they were, and
// recv matters only on the root.
func ExampleReduceInto() {
	var totals []int64
	job(3, func(ctx context.Context, c *comm.Comm) error {
		counts := []int64{int64(c.Rank()), 10}
		var recv []int64
		if c.Rank() == 0 {
			recv = make([]int64, len(counts))
		}
		if err := collective.ReduceInto(ctx, c, counts, recv, codec.Sum, 0); err != nil {
			return err
		}
		if c.Rank() == 0 {
			totals = recv
		}
		return nil
	})
	fmt.Println(totals)
	// Output: [3 30]
}

// A user op: the element-wise largest magnitude, which no built-in op
// computes. Every rank must create the op with the same name.
func ExampleAllreduce_userOp() {
	maxAbs := codec.NewOp("maxabs", func(dst, src []float64) {
		for i, v := range src {
			if max(v, -v) > max(dst[i], -dst[i]) {
				dst[i] = v
			}
		}
	}, true)
	var out []float64
	job(3, func(ctx context.Context, c *comm.Comm) error {
		x := []float64{float64(c.Rank()), -float64(c.Rank()) * 2}
		if err := collective.Allreduce(ctx, c, x, maxAbs); err != nil {
			return err
		}
		if c.Rank() == 0 {
			out = x
		}
		return nil
	})
	fmt.Println(out)
	// Output: [2 -4]
}

// A trainer's backward pass: each layer's gradient is registered once
// and marked ready as it is computed; the Bucketer packs ready gradients
// into buckets and reduces each bucket while the next layers compute.
func ExampleBucketer() {
	var out [][]float32
	job(2, func(ctx context.Context, c *comm.Comm) error {
		b, err := collective.NewBucketer(c, codec.Sum, collective.WithBucketBytes(1<<20))
		if err != nil {
			return err
		}
		layers := [][]float32{make([]float32, 2), make([]float32, 3)}
		for _, g := range layers {
			if _, err := collective.Register(b, g); err != nil {
				return err
			}
		}
		for i := len(layers) - 1; i >= 0; i-- { // backward: last layer first
			for j := range layers[i] {
				layers[i][j] = float32(i + 1)
			}
			if err := b.Ready(ctx, i); err != nil {
				return err
			}
		}
		if err := b.Wait(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			out = layers
		}
		return b.Close()
	})
	fmt.Println(out)
	// Output: [[2 2] [4 4 4]]
}

// Buffers from Alloc on every rank of a host let the shared-memory
// collectives move data straight between the ranks' buffers. Here the
// ranks are goroutines sharing memory as processes of one host do
// (transport auto); a program under gocoll run does the same with its
// world communicator.
func ExampleAlloc() {
	const ranks, n = 2, 1 << 16
	cs, err := comm.NewLocal(ranks, comm.WithTransport("auto"))
	if err != nil {
		log.Fatal(err)
	}
	var first [ranks]float32
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			defer c.Close()
			buf, err := collective.Alloc[float32](n)
			if err != nil {
				log.Fatal(err)
			}
			defer collective.Free(buf)
			for i := range buf {
				buf[i] = float32(c.Rank() + 1)
			}
			if err := collective.Allreduce(context.Background(), c, buf, codec.Sum); err != nil {
				log.Fatal(err)
			}
			first[c.Rank()] = buf[n-1]
		})
	}
	wg.Wait()
	fmt.Println(first)
	// Output: [3 3]
}

// AllreduceAsync returns at once; the call runs while the caller works
// and Wait collects its error.
func ExampleAllreduceAsync() {
	var out []float64
	job(2, func(ctx context.Context, c *comm.Comm) error {
		buf := []float64{1, 2}
		req := collective.AllreduceAsync(ctx, c, buf, codec.Sum)
		// ... compute something that does not touch buf ...
		if err := req.Wait(ctx); err != nil {
			return err
		}
		if c.Rank() == 0 {
			out = buf
		}
		return nil
	})
	fmt.Println(out)
	// Output: [2 4]
}

// BF16 compression halves the bytes a float32 allreduce sends, at about
// three significant digits; the result is the same on every rank.
func ExampleWithCompression() {
	var out [2][]float32
	job(2, func(ctx context.Context, c *comm.Comm) error {
		grad := []float32{0.5, 1.25, 3}
		if err := collective.Allreduce(ctx, c, grad, codec.Sum, collective.WithCompression(codec.BF16)); err != nil {
			return err
		}
		out[c.Rank()] = grad
		return nil
	})
	fmt.Println(out[0], out[1])
	// Output: [1 2.5 6] [1 2.5 6]
}

// ReduceLocal combines values that arrived as objects with the
// collectives' own kernels: here each rank's histogram, gathered with
// AllgatherObject, summed on every rank.
func ExampleReduceLocal() {
	type histogram struct {
		Name   string
		Counts []int64
	}
	var mu sync.Mutex
	job(3, func(ctx context.Context, c *comm.Comm) error {
		mine := histogram{Name: "latency", Counts: []int64{int64(c.Rank()), 1, 10}}
		all, err := collective.AllgatherObject(ctx, c, mine)
		if err != nil {
			return err
		}
		total := all[0].Counts
		for _, h := range all[1:] {
			if err := collective.ReduceLocal(total, h.Counts, codec.Sum); err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			mu.Lock()
			defer mu.Unlock()
			fmt.Println(all[0].Name, total)
		}
		return nil
	})
	// Output: latency [3 3 30]
}
