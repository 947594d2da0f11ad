// Command workerpool is the worker-fleet pattern on gocoll's
// point-to-point calls: rank 0 holds a list of tasks of random sizes and
// hands the next one to whichever worker asks, receiving the requests
// with AnySource; each worker rank asks, learns the size and the id of its
// task with Probe, computes it, and sends the result with its next
// request. Rank 0 checks every result and prints the throughput. Then it
// runs the same tasks the way Go programs usually do, over net/rpc (gob
// over loopback TCP, a goroutine per worker pulling from a channel), and
// prints how the two compare.
//
//	go build -o /tmp/workerpool ./examples/workerpool
//	go run ./cmd/gocoll run -n 4 /tmp/workerpool
//	go run ./examples/workerpool -local 4
//
// With -local n it runs n ranks as goroutines of one process, over tcp
// links on 127.0.0.1 unless -transport says mem or shm, without a
// launcher. The net/rpc baseline needs every rank on one host; on more
// it is skipped.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/examples/internal/ranks"
)

func main() {
	cfg := defaultConfig()
	local := flag.Int("local", 0, "run this many ranks in this process (comm.NewLocal) instead of joining a launcher's job")
	transport := flag.String("transport", "", "links between the ranks: mem, tcp or shm (default: tcp with -local; under a launcher, GOCOLL_TRANSPORT or auto)")
	flag.IntVar(&cfg.Tasks, "tasks", cfg.Tasks, "number of tasks")
	flag.IntVar(&cfg.MinElems, "min", cfg.MinElems, "length of the shortest task, in float64 elements")
	flag.IntVar(&cfg.MaxElems, "max", cfg.MaxElems, "length of the longest task, in float64 elements")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the tasks' sizes and data")
	flag.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "untimed passes of the job before the timed one, for each method")
	flag.BoolVar(&cfg.Baseline, "baseline", cfg.Baseline, "also run the tasks over net/rpc on loopback TCP (ranks on one host only)")
	flag.Parse()
	if err := cfg.check(); err != nil {
		log.Fatal(err)
	}

	var opts []comm.Option
	cfg.Links = *transport
	if cfg.Links == "" && *local > 0 {
		cfg.Links = "tcp"
	}
	switch cfg.Links {
	case "":
		cfg.Links = os.Getenv("GOCOLL_TRANSPORT")
		if cfg.Links == "" {
			cfg.Links = "auto"
		}
	case "mem", "tcp", "shm":
		opts = append(opts, comm.WithTransport(cfg.Links))
	default:
		log.Fatalf("-transport %q: want mem, tcp or shm", cfg.Links)
	}

	err := ranks.Run(context.Background(), *local, opts, func(ctx context.Context, c *comm.Comm) error {
		var w io.Writer = io.Discard
		if c.Rank() == 0 {
			w = os.Stdout
		}
		return run(ctx, c, cfg, w)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run is the program on one rank: rank 0 coordinates and writes to w,
// the others work; first with gocoll, then, if cfg.Baseline, over net/rpc.
func run(ctx context.Context, c *comm.Comm, cfg config, w io.Writer) error {
	if c.Size() < 2 {
		return fmt.Errorf("workerpool needs 2 ranks or more, a coordinator and workers, not %d: run it with gocoll run -n 4, or with -local 4", c.Size())
	}
	var j *job
	if c.Rank() == 0 {
		j = newJob(cfg)
		fmt.Fprintf(w, "workerpool: %d tasks of %d to %d float64 (%.1f MB, seed %d); rank 0 hands them to %s over %s, after %s of each method\n",
			cfg.Tasks, cfg.MinElems, cfg.MaxElems, float64(j.bytes)/1e6, cfg.Seed,
			count(c.Size()-1, "worker", "workers"), cfg.Links, count(cfg.Warmup, "untimed pass", "untimed passes"))
	}
	gp, err := passes(ctx, c, cfg.Warmup,
		func() (*pass, error) { return coordinate(ctx, c, j) },
		func() (int, error) { return work(ctx, c) })
	if err != nil {
		return err
	}
	// The same on every rank, so that all run the baseline or none.
	baseline := cfg.Baseline && c.LocalSize() == c.Size()
	rpcPasses := func() (*pass, error) {
		return passes(ctx, c, cfg.Warmup,
			func() (*pass, error) { return rpcBaseline(ctx, c, j) },
			func() (int, error) { return rpcServe(ctx, c) })
	}
	if c.Rank() != 0 {
		if baseline {
			_, err = rpcPasses()
		}
		return err
	}

	gp.print(w)
	switch {
	case !cfg.Baseline:
		return nil
	case !baseline:
		fmt.Fprintf(w, "net/rpc baseline skipped: it listens on loopback only, and %d of the %d ranks run on other hosts\n", c.Size()-c.LocalSize(), c.Size())
		return nil
	}
	rp, err := rpcPasses()
	if err != nil {
		return fmt.Errorf("net/rpc baseline: %w", err)
	}
	rp.print(w)
	// Each pass checked its results against the expected ones already.
	fmt.Fprintf(w, "gocoll / net/rpc: %.2f× the tasks/s (and MB/s) on the same tasks\n", rp.Elapsed.Seconds()/gp.Elapsed.Seconds())
	return nil
}

// passes runs the job warmup+1 times with one method, each pass after a
// Barrier, so that no pass takes a message of the one before and the
// clock starts once every worker is ready to ask: rank 0 runs coordinate,
// the others work. It returns rank 0's last pass, and nil elsewhere. The
// untimed passes let the process grow its heap to what the messages in
// flight need, which makes the first pass of gocoll up to five times as
// slow as the next ones; net/rpc's change less.
func passes(ctx context.Context, c *comm.Comm, warmup int, coordinate func() (*pass, error), work func() (int, error)) (*pass, error) {
	var p *pass
	for range warmup + 1 {
		if err := collective.Barrier(ctx, c); err != nil {
			return nil, err
		}
		var err error
		if c.Rank() == 0 {
			p, err = coordinate()
		} else {
			_, err = work()
		}
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// print writes p's throughput, and on a second line how many tasks each
// worker did.
func (p *pass) print(w io.Writer) {
	s := p.Elapsed.Seconds()
	fmt.Fprintf(w, "%-8s %d tasks, %.1f MB in %v: %.0f tasks/s, %.1f MB/s\n",
		p.Method+":", len(p.Results), float64(p.Bytes)/1e6, p.Elapsed.Round(time.Microsecond), float64(len(p.Results))/s, float64(p.Bytes)/1e6/s)
	fmt.Fprintf(w, "%8s tasks per worker:", "")
	for r := 1; r < len(p.PerWorker); r++ {
		sep := ","
		if r == len(p.PerWorker)-1 {
			sep = "\n"
		}
		fmt.Fprintf(w, " rank %d %d%s", r, p.PerWorker[r], sep)
	}
}

// count writes n things, in the singular or the plural.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
