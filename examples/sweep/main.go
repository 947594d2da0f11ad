// Command sweep compares two algorithms of one collective over a list of
// message sizes, through the public API only: each call forces its
// algorithm with collective.WithAlgorithm. For every size and algorithm
// it makes warm-up calls, checks the first one's result, times the
// others, and takes the slowest rank's mean time per call (an Allreduce
// with Max of each rank's), since a collective is as fast as its last
// rank. Rank 0 prints one row per size: each algorithm's time and their
// ratio.
//
//	go build -o /tmp/sweep ./examples/sweep
//	go run ./cmd/gocoll run -n 4 /tmp/sweep
//	go run ./examples/sweep -local 4 -collective allgather -algos ring,bruck -sizes 8,64K,4M
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
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/examples/internal/ranks"
)

func main() {
	local := flag.Int("local", 0, "run this many ranks in this process (comm.NewLocal) instead of joining a launcher's job")
	coll := flag.String("collective", "allreduce", "the collective: allreduce, allgather, bcast or reducescatter")
	algos := flag.String("algos", "", "the two algorithms to compare, comma-separated (default: the collective's usual pair, see defaultAlgos)")
	sizes := flag.String("sizes", "8,1K,64K,1M", "message sizes in bytes of float32, comma-separated, with an optional K or M (KiB, MiB): each rank's buffer (allreduce, bcast) or block (allgather, reducescatter)")
	iters := flag.Int("iters", 20, "timed calls per size and algorithm")
	warmup := flag.Int("warmup", 3, "untimed calls before them, at least 1: the first one's result is checked")
	flag.Parse()

	cfg, err := parseConfig(*coll, *algos, *sizes, *iters, *warmup)
	if err != nil {
		log.Fatal(err)
	}
	err = ranks.Run(context.Background(), *local, nil, func(ctx context.Context, c *comm.Comm) error {
		var w io.Writer = io.Discard
		if c.Rank() == 0 {
			w = os.Stdout
		}
		_, err := sweep(ctx, c, cfg, w)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}

// config is a sweep; every rank must use the same one.
type config struct {
	Collective string
	Algos      [2]collective.Algorithm
	Sizes      []int // bytes, multiples of 4
	Iters      int
	Warmup     int
}

// defaultAlgos are the pairs compared unless -algos names others: for
// each collective, its latency-optimal algorithm (log p steps) against
// its bandwidth-optimal ring, the choice the selector makes by size.
var defaultAlgos = map[string]string{
	"allreduce":     "ring,recursive_doubling",
	"allgather":     "ring,bruck",
	"bcast":         "tree,scatter_allgather",
	"reducescatter": "ring,recursive_halving",
}

// parseConfig checks the flags' values and turns them into a config.
func parseConfig(coll, algos, sizes string, iters, warmup int) (config, error) {
	cfg := config{Collective: strings.ToLower(coll), Iters: iters, Warmup: warmup}
	pair, ok := defaultAlgos[cfg.Collective]
	if !ok {
		return cfg, fmt.Errorf("-collective %q: want allreduce, allgather, bcast or reducescatter", coll)
	}
	if algos != "" {
		pair = algos
	}
	names := strings.Split(pair, ",")
	if len(names) != 2 {
		return cfg, fmt.Errorf("-algos %q: want two algorithms, comma-separated", algos)
	}
	for i, name := range names {
		a, err := collective.ParseAlgorithm(strings.TrimSpace(name))
		if err != nil {
			return cfg, fmt.Errorf("-algos: %w", err)
		}
		cfg.Algos[i] = a
	}
	for f := range strings.SplitSeq(sizes, ",") {
		n, err := parseSize(strings.TrimSpace(f))
		if err != nil {
			return cfg, fmt.Errorf("-sizes: %w", err)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	if iters < 1 || warmup < 1 {
		return cfg, fmt.Errorf("-iters %d and -warmup %d must be at least 1", iters, warmup)
	}
	return cfg, nil
}

// parseSize parses a byte count with an optional K or M suffix (KiB, MiB),
// which must be a positive multiple of 4, the size of a float32.
func parseSize(s string) (int, error) {
	unit := 1
	switch {
	case strings.HasSuffix(s, "K"):
		unit, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		unit, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n*unit%4 != 0 {
		return 0, fmt.Errorf("%q is not a positive multiple of 4 bytes", s)
	}
	return n * unit, nil
}

// row is the result of one size: the slowest rank's mean time per call
// of each algorithm.
type row struct {
	Bytes  int
	Micros [2]float64
}

// sweep runs cfg on c and writes the table to w.
func sweep(ctx context.Context, c *comm.Comm, cfg config, w io.Writer) ([]row, error) {
	a, b := cfg.Algos[0].String(), cfg.Algos[1].String()
	width := max(len(a), len(b)) + 3 // and " µs"
	fmt.Fprintf(w, "%s of float32 over %d ranks, %d timed calls after %d warm-up; µs per call, the slowest rank's mean; ratio = %s / %s\n",
		cfg.Collective, c.Size(), cfg.Iters, cfg.Warmup, b, a)
	fmt.Fprintf(w, "%10s  %*s  %*s  %6s\n", "size", width, a+" µs", width, b+" µs", "ratio")
	var rows []row
	for _, size := range cfg.Sizes {
		bn, err := newBench(c, cfg.Collective, size/4)
		if err != nil {
			return rows, err
		}
		r := row{Bytes: size}
		for i, algo := range cfg.Algos {
			if r.Micros[i], err = measure(ctx, c, bn, algo, cfg); err != nil {
				return rows, fmt.Errorf("%s of %d bytes with %s: %w", cfg.Collective, size, algo, err)
			}
		}
		rows = append(rows, r)
		fmt.Fprintf(w, "%10s  %*.1f  %*.1f  %6.2f\n", binary(size), width, r.Micros[0], width, r.Micros[1], r.Micros[1]/r.Micros[0])
	}
	return rows, nil
}

// measure returns the slowest rank's mean time per call of bn with algo,
// in microseconds, after checking the result of the first warm-up call.
func measure(ctx context.Context, c *comm.Comm, bn *bench, algo collective.Algorithm, cfg config) (float64, error) {
	opt := collective.WithAlgorithm(algo)
	bn.reset()
	for i := range cfg.Warmup {
		if err := bn.run(ctx, opt); err != nil {
			return 0, err
		}
		if i == 0 {
			if err := bn.check(); err != nil {
				return 0, err
			}
		}
	}
	// Every rank starts the clock together, so that no rank's time
	// includes waiting for the others to finish the warm-up.
	if err := collective.Barrier(ctx, c); err != nil {
		return 0, err
	}
	start := time.Now()
	for range cfg.Iters {
		if err := bn.run(ctx, opt); err != nil {
			return 0, err
		}
	}
	mean := []float64{float64(time.Since(start).Nanoseconds()) / 1e3 / float64(cfg.Iters)}
	if err := collective.Allreduce(ctx, c, mean, codec.Max); err != nil {
		return 0, err
	}
	return mean[0], nil
}

// bench is one collective on buffers of one size. Its inputs are never
// written, so every call computes the same result, want, in out.
type bench struct {
	run  func(ctx context.Context, opt collective.Option) error
	out  []float32
	want []float32
	root bool // out is this rank's input too: the root of a Bcast
}

// value is element i of rank r's input: small integers, whose float32
// sums are exact in any order, so one expected result holds for every
// algorithm.
func value(r, i int) float32 { return float32(r + 1 + i%16) }

// newBench makes the buffers of coll on c, count elements per rank.
func newBench(c *comm.Comm, coll string, count int) (*bench, error) {
	me, n := c.Rank(), c.Size()
	input := func(r int) []float32 {
		s := make([]float32, count)
		for i := range s {
			s[i] = value(r, i)
		}
		return s
	}
	// sum is the Sum over the ranks of their inputs of blocks×count
	// elements.
	sum := func(blocks int) []float32 {
		s := make([]float32, blocks*count)
		for r := range n {
			for i := range s {
				s[i] += value(r, i)
			}
		}
		return s
	}
	bn := new(bench)
	switch coll {
	case "allreduce":
		send := input(me)
		bn.out, bn.want = make([]float32, count), sum(1)
		bn.run = func(ctx context.Context, opt collective.Option) error {
			return collective.AllreduceInto(ctx, c, send, bn.out, codec.Sum, opt)
		}
	case "allgather":
		send := input(me)
		bn.out = make([]float32, n*count)
		for r := range n {
			bn.want = append(bn.want, input(r)...)
		}
		bn.run = func(ctx context.Context, opt collective.Option) error {
			return collective.Allgather(ctx, c, send, bn.out, opt)
		}
	case "bcast":
		// The root's buffer is its input, the others' their output.
		bn.out, bn.want, bn.root = input(0), input(0), me == 0
		bn.run = func(ctx context.Context, opt collective.Option) error {
			return collective.Bcast(ctx, c, bn.out, 0, opt)
		}
	case "reducescatter":
		send := make([]float32, n*count)
		for i := range send {
			send[i] = value(me, i)
		}
		bn.out, bn.want = make([]float32, count), sum(n)[me*count:][:count]
		bn.run = func(ctx context.Context, opt collective.Option) error {
			return collective.ReduceScatter(ctx, c, send, bn.out, codec.Sum, opt)
		}
	default:
		return nil, fmt.Errorf("no collective %q", coll)
	}
	return bn, nil
}

// reset fills bn's output with NaN, so that check sees only what the
// calls after it write.
func (bn *bench) reset() {
	if bn.root {
		return
	}
	for i := range bn.out {
		bn.out[i] = float32(math.NaN())
	}
}

// check compares bn's output with the expected result, bit for bit.
func (bn *bench) check() error {
	for i, v := range bn.out {
		if math.Float32bits(v) != math.Float32bits(bn.want[i]) {
			return fmt.Errorf("wrong result: element %d of %d is %v, want %v", i, len(bn.out), v, bn.want[i])
		}
	}
	return nil
}

// binary writes a byte count in binary units, as -sizes takes them.
func binary(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
