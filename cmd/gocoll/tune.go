package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"

	"github.com/gocoll/gocoll/bench"
)

var tuneCmd = &command{
	name:  "tune",
	short: "measure this machine and write a tuning table",
	run:   tuneMain,
	usage: tuneUsage,
}

const tuneUsage = `usage: gocoll tune [-n ranks] [--transport t] [--collectives list]
                   [--sizes spec] [--chunks list] [--iters auto|N] [--scale f]
                   [--noise f] [--timeout d] [--progress] [-o file]

Tune measures, with the sweep of gocoll bench, every algorithm each
collective accepts on this job, the pipelined ones (ring_chunked, chain)
once per chunk size, and the selector's default choice, at every size.
Per size it picks the fastest, keeping the default unless a candidate is
faster by more than the noise share, so the table never picks something
slower than the default at a size it measured. It prints what it chose
and why, one line per collective and size: the choice and its time, the
default's time and the speedup; then writes the sizes where the default
lost as a tuning table. A measured size covers the bytes from it to just
below the next measured size (only itself for the largest); adjacent sizes
with the same choice become one range, and other sizes keep the default.

A table is JSON:

	{"entries": [
	  {"collective": "allreduce", "ranks": 4, "transport": "tcp",
	   "min_bytes": 1048576, "max_bytes": 4194303,
	   "algorithm": "ring_chunked", "chunk": 65536, "codec": "none"}
	]}

An entry applies to its collective on a communicator of exactly its
number of ranks over its transport, for messages of min_bytes to
max_bytes bytes. chunk is 0 for the default chunk size; codec is none
until wire compression exists. comm.WithTuning(file) or GOCOLL_TUNING=file
loads a table, and every rank must load the same one. A call's
WithAlgorithm and WithChunkSize come first, then GOCOLL_ALGO and
GOCOLL_CHUNK, then the table, then the built-in selection; an entry whose
algorithm the communicator cannot run (shm without shared memory) keeps
the built-in selection.

The flags are:

	-n ranks
		number of ranks (default 2)
	--transport t
		auto (the default), shm, tcp or mem, as gocoll bench takes it;
		the table's entries are for this transport
	--collectives list
		as gocoll bench (default allreduce,bcast,gather)
	--sizes spec
		as gocoll bench (default 8:64M)
	--chunks list
		chunk sizes in bytes for the pipelined algorithms (default
		256K,1M,16M; the default choice measures the default chunk,
		4 MiB, wherever it is pipelined)
	--iters auto|N, --scale f
		timed calls per point, as gocoll bench
	--noise f
		the share by which a candidate must beat the default to be chosen
		(default 0.05)
	--timeout d
		the communicator timeout of the ranks (0: the library default)
	--progress
		draw a progress bar on stderr even when stderr is not a terminal
	-o file
		the table to write (default tuning.json)

Tune exits with status 2 for bad arguments and 1 when the sweep fails.
`

func tuneMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 2, "")
	transport := fs.String("transport", "auto", "")
	collectives := fs.String("collectives", "allreduce,bcast,gather", "")
	sizes := fs.String("sizes", "8:64M", "")
	chunks := fs.String("chunks", "256K,1M,16M", "")
	iters := fs.String("iters", "auto", "")
	scale := fs.String("scale", "1", "")
	noise := fs.Float64("noise", bench.DefaultNoise, "")
	timeout := fs.String("timeout", "0s", "")
	progress := fs.Bool("progress", false, "")
	out := fs.String("o", "tuning.json", "")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, tuneUsage)
		return 0
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q: tune takes only flags", fs.Arg(0))
	}
	if err == nil && !(*noise > 0 && *noise < 1) {
		err = fmt.Errorf("--noise %v: want a share between 0 and 1", *noise)
	}
	// The ranks run gocoll bench's sweep with every algorithm and the
	// default, so its flags are checked, and passed on, as bench's.
	benchArgs := []string{"-n", strconv.Itoa(*n), "--transport", *transport, "--collectives", *collectives,
		"--sizes", *sizes, "--algos", "auto,all", "--chunks", *chunks, "--iters", *iters, "--scale", *scale, "--timeout", *timeout}
	var f benchFlags
	var cfg bench.Config
	if err == nil {
		f, cfg, err = parseBench(benchArgs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gocoll tune: %v\nRun 'gocoll help tune' for usage.\n", err)
		return 2
	}
	file, err := os.Create(*out)
	if err != nil {
		fmt.Fprintf(stderr, "gocoll tune: -o: %v\n", err)
		return 2
	}

	var bar *bench.ProgressBar
	if *progress || isTerminal(stderr) {
		bar = bench.NewProgressBar(stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var results []bench.Result
	if f.transport == "mem" {
		results, err = benchLocal(ctx, f, cfg, bar)
	} else {
		results, err = benchJob(ctx, f, benchArgs[2:], bar, stdout, stderr)
	}
	if bar != nil {
		bar.Clear()
	}
	if err != nil {
		discardOutput(file)
		fmt.Fprintf(stderr, "gocoll tune: %v\n", err)
		return 1
	}
	for i := range results {
		results[i].Transport = f.transport
	}
	decisions, table, err := bench.Tune(results, *noise)
	if err != nil {
		discardOutput(file)
		fmt.Fprintf(stderr, "gocoll tune: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%d ranks over %s; a candidate must beat the default by %.0f%%\n\n", f.n, f.transport, *noise*100)
	err = errors.Join(writeDecisions(stdout, decisions),
		writeOutput(file, table.Write))
	if err != nil {
		fmt.Fprintf(stderr, "gocoll tune: %v\n", err)
		return 1
	}
	noun := "entries"
	if len(table.Entries) == 1 {
		noun = "entry"
	}
	fmt.Fprintf(stdout, "\n%d %s written to %s\n", len(table.Entries), noun, *out)
	return 0
}

// writeDecisions prints what tune chose at each size and why.
func writeDecisions(w io.Writer, decisions []bench.Decision) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "collective\tbytes\tchosen\tchunk\tus\tdefault us\tspeedup\t")
	for _, d := range decisions {
		chosen, chunk := d.Chosen.Algo, "-"
		if d.Kept {
			chosen = "default"
		}
		if d.Chosen.Chunk > 0 {
			chunk = strconv.Itoa(d.Chosen.Chunk)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2f\t%.2f\t%.2fx\t\n", d.Chosen.Collective, d.Chosen.Bytes, chosen, chunk,
			d.Chosen.AvgUS, d.Default.AvgUS, d.Speedup())
	}
	return tw.Flush()
}
