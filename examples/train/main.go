// Command train is data-parallel training in plain Go: every rank holds
// the same small MLP, takes its share of each global batch of a synthetic
// classification task, and averages its gradients with the others'
// through a collective.Bucketer, so that the allreduce of the last
// layers' gradients runs while the first layers' are still being
// computed. Rank 0 prints the training loss of every epoch and, at the
// end, the time per epoch and a check that every rank holds the same
// parameters, bit for bit.
//
//	go build -o /tmp/train ./examples/train
//	go run ./cmd/gocoll run -n 4 /tmp/train
//	go run ./examples/train -local 4 -bf16
//
// With -local n it runs n ranks as goroutines of one process, without a
// launcher; with -bf16 the gradients travel as bfloat16, half the bytes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/examples/internal/ranks"
)

func main() {
	cfg := defaultConfig()
	local := flag.Int("local", 0, "run this many ranks in this process (comm.NewLocal) instead of joining a launcher's job")
	hidden := flag.String("hidden", "128,64", "sizes of the hidden layers, comma-separated; empty for none")
	flag.IntVar(&cfg.Features, "features", cfg.Features, "input features of a sample")
	flag.IntVar(&cfg.Classes, "classes", cfg.Classes, "classes of the task")
	flag.IntVar(&cfg.Samples, "samples", cfg.Samples, "samples in the training set")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "global batch: samples per step over all ranks, a multiple of the rank count")
	flag.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "passes over the training set")
	flag.Float64Var(&cfg.LR, "lr", cfg.LR, "learning rate of plain SGD")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the data set, the shuffles and the initial parameters")
	flag.IntVar(&cfg.BucketBytes, "bucket", cfg.BucketBytes, "gradient bucket size limit in bytes (collective.WithBucketBytes)")
	flag.BoolVar(&cfg.BF16, "bf16", false, "send gradients as bfloat16 (collective.WithCompression(codec.BF16))")
	flag.Parse()
	var err error
	if cfg.Hidden, err = parseSizes(*hidden); err != nil {
		log.Fatalf("-hidden: %v", err)
	}

	err = ranks.Run(context.Background(), *local, nil, func(ctx context.Context, c *comm.Comm) error {
		var w io.Writer = io.Discard
		if c.Rank() == 0 {
			w = os.Stdout
		}
		_, err := train(ctx, c, cfg, w)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}

// parseSizes parses a comma-separated list of positive integers; an empty
// one is a model without hidden layers, softmax regression.
func parseSizes(s string) ([]int, error) {
	var sizes []int
	if s == "" {
		return nil, nil
	}
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}
