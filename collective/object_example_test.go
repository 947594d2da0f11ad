package collective_test

import (
	"context"
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
)

// Rank 0 reads the run's configuration; every rank gets it. The
// gradient travels as raw bytes, as a typed Bcast would send it.
func ExampleBcastObject() {
	type config struct {
		Model string
		LR    float64
		Warm  []float32
	}
	var got [3]config
	job(3, func(ctx context.Context, c *comm.Comm) error {
		var cfg config
		if c.Rank() == 0 {
			cfg = config{Model: "resnet50", LR: 0.1, Warm: []float32{0.5, 0.25}}
		}
		if err := collective.BcastObject(ctx, c, &cfg, 0); err != nil {
			return err
		}
		got[c.Rank()] = cfg
		return nil
	})
	for r, cfg := range got {
		fmt.Printf("rank %d: %+v\n", r, cfg)
	}
	// Output:
	// rank 0: {Model:resnet50 LR:0.1 Warm:[0.5 0.25]}
	// rank 1: {Model:resnet50 LR:0.1 Warm:[0.5 0.25]}
	// rank 2: {Model:resnet50 LR:0.1 Warm:[0.5 0.25]}
}

// Each rank's training step holds its loss and gradient; every rank
// ends with their sums, folded in rank order.
func ExampleAllreduceObject() {
	type step struct {
		Loss float64
		Grad []float32
	}
	sum := func(acc, x *step) error {
		acc.Loss += x.Loss
		return collective.ReduceLocal(acc.Grad, x.Grad, codec.Sum)
	}
	var got [3]step
	job(3, func(ctx context.Context, c *comm.Comm) error {
		r := float32(c.Rank())
		s := step{Loss: 0.5 * float64(c.Rank()+1), Grad: []float32{r, 10 * r}}
		if err := collective.AllreduceObject(ctx, c, &s, sum); err != nil {
			return err
		}
		got[c.Rank()] = s
		return nil
	})
	for r, s := range got {
		fmt.Printf("rank %d: %+v\n", r, s)
	}
	// Output:
	// rank 0: {Loss:3 Grad:[3 30]}
	// rank 1: {Loss:3 Grad:[3 30]}
	// rank 2: {Loss:3 Grad:[3 30]}
}

// The root hands each rank its shard of the work; every rank reports
// what it did, and the root gathers the reports.
func ExampleScatterObject() {
	type shard struct {
		Files []string
	}
	var reports []string
	job(3, func(ctx context.Context, c *comm.Comm) error {
		const root = 2
		var shards []shard
		if c.Rank() == root {
			shards = []shard{{[]string{"a", "b"}}, {[]string{"c"}}, {nil}}
		}
		mine, err := collective.ScatterObject(ctx, c, shards, root)
		if err != nil {
			return err
		}
		all, err := collective.GatherObject(ctx, c, fmt.Sprintf("rank %d read %v", c.Rank(), mine.Files), root)
		if c.Rank() == root {
			reports = all
		}
		return err
	})
	for _, r := range reports {
		fmt.Println(r)
	}
	// Output:
	// rank 0 read [a b]
	// rank 1 read [c]
	// rank 2 read []
}

// GobCodec sends self-describing encodings, for values that RawCodec
// would hand to gob anyway (an interface field) or whose types differ
// between ranks in ways gob reconciles.
func ExampleWithObjectCodec() {
	type event struct {
		Name    string
		Payload any
	}
	var got []event
	job(2, func(ctx context.Context, c *comm.Comm) error {
		all, err := collective.AllgatherObject(ctx, c, event{Name: fmt.Sprint("rank", c.Rank()), Payload: c.Rank() * 10},
			collective.WithObjectCodec(collective.GobCodec))
		if c.Rank() == 0 {
			got = all
		}
		return err
	})
	fmt.Println(got)
	// Output:
	// [{rank0 0} {rank1 10}]
}
