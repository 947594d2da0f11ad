package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
)

// config is a training run; every rank must use the same one.
type config struct {
	Features, Classes int
	Hidden            []int // sizes of the hidden layers
	Samples           int
	Batch             int // global batch: samples per step over all ranks
	Epochs            int
	LR                float64
	Seed              uint64
	BucketBytes       int
	BF16              bool
}

// defaultConfig is the run of the command without flags: a few seconds
// of training on a laptop, with the gradients of the 128×64 and 64×8
// layers in buckets of their own (16 KiB is far below DDP's 25 MiB, in
// proportion to this model), so that the last layers' allreduce overlaps
// the first layers' backward pass.
func defaultConfig() config {
	return config{
		Features: 32, Hidden: []int{128, 64}, Classes: 8,
		Samples: 8192, Batch: 256, Epochs: 10, LR: 0.1, Seed: 1,
		BucketBytes: 16 << 10,
	}
}

// check says what is wrong with cfg on n ranks.
func (cfg config) check(n int) error {
	switch {
	case cfg.Features <= 0 || cfg.Classes < 2 || cfg.Epochs <= 0 || cfg.LR <= 0:
		return errors.New("features, epochs and the learning rate must be positive, and there must be two classes or more")
	case cfg.Batch <= 0 || cfg.Batch%n != 0:
		return fmt.Errorf("a global batch of %d samples does not split evenly over %d ranks", cfg.Batch, n)
	case cfg.Samples < cfg.Batch:
		return fmt.Errorf("%d samples do not fill one batch of %d", cfg.Samples, cfg.Batch)
	}
	return nil
}

// sizes are the widths of the model's layers, inputs first.
func (cfg config) sizes() []int {
	return append(append([]int{cfg.Features}, cfg.Hidden...), cfg.Classes)
}

// result is what training leaves on one rank.
type result struct {
	Loss     []float64     // mean training loss of each epoch, the same on every rank
	Params   []float32     // the final parameters, layer by layer
	Hash     uint64        // hash(Params), checked equal on every rank
	PerEpoch time.Duration // wall time per epoch on this rank
}

// train trains the model of cfg on c's ranks and writes its progress to
// w. Each step, every rank takes its share of the same global batch
// (rank r the r-th slice of it), so the batches do not depend on the
// number of ranks, and averages its gradients with the others'. Each
// epoch, the ranks reduce their loss sums.
func train(ctx context.Context, c *comm.Comm, cfg config, w io.Writer) (result, error) {
	n, me := c.Size(), c.Rank()
	if err := cfg.check(n); err != nil {
		return result{}, fmt.Errorf("train: %w", err)
	}
	shard := cfg.Batch / n
	sizes := cfg.sizes()
	data := newDataset(cfg.Seed, cfg.Samples, cfg.Features, cfg.Classes)
	m := newMLP(cfg.Seed, sizes, shard)

	// Every rank starts from rank 0's parameters, as DDP does, so that the
	// ranks agree even if their initialisations did not.
	for _, ly := range m.layers {
		if err := collective.Bcast(ctx, c, ly.w, 0); err != nil {
			return result{}, err
		}
		if err := collective.Bcast(ctx, c, ly.b, 0); err != nil {
			return result{}, err
		}
	}

	// Avg of each rank's mean over its equal share is the mean over the
	// global batch.
	var wire []collective.Option
	if cfg.BF16 {
		wire = append(wire, collective.WithCompression(codec.BF16))
	}
	b, err := collective.NewBucketer(c, codec.Avg, collective.WithBucketBytes(cfg.BucketBytes), collective.WithAllreduceOptions(wire...))
	if err != nil {
		return result{}, err
	}
	defer b.Close()
	// Registered in the order backward finishes them, last layer first:
	// the order of the buckets, which start in that order.
	tensors := make([][2]int, len(m.layers))
	for l := len(m.layers) - 1; l >= 0; l-- {
		ly := m.layers[l]
		if tensors[l][0], err = collective.Register(b, ly.gw); err != nil {
			return result{}, err
		}
		if tensors[l][1], err = collective.Register(b, ly.gb); err != nil {
			return result{}, err
		}
	}
	ready := func(l int) error {
		if err := b.Ready(ctx, tensors[l][0]); err != nil {
			return err
		}
		return b.Ready(ctx, tensors[l][1])
	}

	steps := cfg.Samples / cfg.Batch
	shape := make([]string, len(sizes))
	for i, s := range sizes {
		shape[i] = strconv.Itoa(s)
	}
	gradients := "float32"
	if cfg.BF16 {
		gradients = "bf16"
	}
	fmt.Fprintf(w, "training a %s MLP (%d parameters) on %s: %d steps per epoch of %d samples (%d per rank), gradients in buckets of up to %d bytes sent as %s\n",
		strings.Join(shape, "-"), len(m.params()), plural(n, "rank"), steps, cfg.Batch, shard, cfg.BucketBytes, gradients)

	// The epoch's loss is reduced by AllreduceAsync during the next
	// epoch, so that reporting it never stalls training: a trainer that
	// waited for it at once would idle every rank for a round trip per
	// epoch.
	var res result
	var pending *collective.Request
	lossSum := make([]float64, 1)
	report := func() error {
		if err := pending.Wait(ctx); err != nil {
			return fmt.Errorf("train: reducing the loss of epoch %d: %w", len(res.Loss)+1, err)
		}
		loss := lossSum[0] / float64(steps*cfg.Batch)
		res.Loss = append(res.Loss, loss)
		fmt.Fprintf(w, "epoch %d/%d: loss %.6f\n", len(res.Loss), cfg.Epochs, loss)
		return nil
	}
	// Every rank draws the same permutations, so every rank count sees
	// the same global batches.
	shuffle := rand.New(rand.NewPCG(cfg.Seed, 3))
	start := time.Now()
	for range cfg.Epochs {
		order := shuffle.Perm(cfg.Samples)
		var sum float64
		for s := range steps {
			m.load(data, order[s*cfg.Batch+me*shard:][:shard])
			m.forward()
			sum += m.loss()
			if err := m.backward(ready); err != nil {
				return res, err
			}
			if err := b.Wait(ctx); err != nil {
				return res, err
			}
			m.step(float32(cfg.LR))
		}
		if pending != nil {
			if err := report(); err != nil {
				return res, err
			}
		}
		lossSum[0] = sum // the last epoch's reduction is done: report waited for it
		pending = collective.AllreduceAsync(ctx, c, lossSum, codec.Sum)
	}
	if err := report(); err != nil {
		return res, err
	}
	res.PerEpoch = time.Since(start) / time.Duration(cfg.Epochs)

	// The check a data-parallel trainer relies on: identical averaged
	// gradients applied to identical parameters leave every rank with the
	// same bits.
	res.Params = m.params()
	res.Hash = hash(res.Params)
	hashes := make([]uint64, n)
	if err := collective.Allgather(ctx, c, []uint64{res.Hash}, hashes); err != nil {
		return res, err
	}
	for r, h := range hashes {
		if h != res.Hash {
			return res, fmt.Errorf("train: the parameters of rank %d (FNV-1a %016x) differ from rank %d's (%016x)", r, h, me, res.Hash)
		}
	}
	fmt.Fprintf(w, "time per epoch: %v (mean of %d)\n", res.PerEpoch.Round(10*time.Microsecond), cfg.Epochs)
	fmt.Fprintf(w, "parameters bitwise identical on %s (FNV-1a %016x)\n", plural(n, "rank"), res.Hash)
	return res, b.Close()
}

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
