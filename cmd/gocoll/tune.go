package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/gocoll/gocoll/internal/bench"
	"github.com/gocoll/gocoll/internal/cli"
	"github.com/gocoll/gocoll/internal/tuning"
)

var tuneCmd = &cli.Command{
	Name:  "tune",
	Short: "measure this machine and write a tuning table",
	Run:   tuneMain,
	Usage: tuneUsage,
}

const tuneUsage = `usage: gocoll tune [-n ranks] [--transport t] [--collectives list]
                   [--sizes spec] [--chunks list] [--codecs list]
                   [--iters auto|N] [--scale f] [--noise f] [--timeout d]
                   [--progress] [-o file]

Tune measures, with the sweep of gocoll bench, every algorithm each
collective accepts on this job, the pipelined ones (ring_chunked, chain)
once per chunk size, each once per codec, and the selector's default
choice (its algorithm, the default chunk, no codec), at every size. Per
size it picks the fastest, keeping the default unless a candidate is
faster by more than the noise share, so the table never picks something
slower than the default at a size it measured. It prints what it chose
and why, one line per collective and size: the choice and its time, the
default's time and the speedup, and a line for each range where it chose
a lossy codec, whose results are rounded; then writes the sizes where
the default lost as a tuning table. A measured size covers the bytes
from it to just below the next measured size (only itself for the
largest); adjacent sizes with the same choice become one range, and
other sizes keep the default.

A table is JSON:

	{"entries": [
	  {"collective": "allreduce", "ranks": 4, "transport": "tcp",
	   "min_bytes": 1048576, "max_bytes": 4194303,
	   "algorithm": "ring_chunked", "chunk": 65536, "codec": "none"}
	]}

An entry applies to its collective on a communicator of exactly its
number of ranks over its transport, for messages of min_bytes to
max_bytes bytes. chunk is 0 for the default chunk size. codec is the wire
codec: none, the lossless zstd or s2, or the lossy bf16 or fp16, which
round the results to 16-bit precision and apply to float32 and float64
calls only (calls of other types in the range go uncompressed).
comm.WithTuning(file) or GOCOLL_TUNING=file loads a table, and every rank
must load the same one. A call's WithAlgorithm, WithChunkSize and
WithCompression come first, then GOCOLL_ALGO, GOCOLL_CHUNK and
GOCOLL_CODEC (a codec name, such as bf16), then the table, then the
built-in selection; an entry whose algorithm the communicator cannot run
(shm without shared memory) keeps the built-in selection.

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
	--codecs list
		wire codecs to measure every algorithm and chunk size with, as
		gocoll bench's --codec takes them (default none; none is always
		measured, as the default's). A lossy codec (bf16, fp16) is
		chosen on speed like any other, and rounds the results of the
		calls the entry covers: leave it out to keep results exact. zstd
		and s2 are measured on the sweep's data, which they hardly
		shrink; on data that shrinks more they gain more
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
	codecs := fs.String("codecs", "none", "")
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
	// The ranks run gocoll bench's sweep with every algorithm and codec
	// and the default, so its flags are checked, and passed on, as
	// bench's. The default is uncompressed, so none is always measured.
	codecList := splitList(*codecs)
	if err == nil && slices.Contains(codecList, "auto") {
		err = errors.New("--codecs auto: a table entry names its codec; auto (the selector's codec) is for gocoll bench")
	}
	if !slices.Contains(codecList, "none") {
		codecList = append([]string{"none"}, codecList...)
	}
	benchArgs := []string{"-n", strconv.Itoa(*n), "--transport", *transport, "--collectives", *collectives,
		"--sizes", *sizes, "--algos", "auto,all", "--chunks", *chunks, "--codec", strings.Join(codecList, ","),
		"--iters", *iters, "--scale", *scale, "--timeout", *timeout}
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
	err = writeDecisions(stdout, decisions)
	if err == nil {
		err = writeLossy(stdout, table)
	}
	err = errors.Join(err, writeOutput(file, table.Write))
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
	fmt.Fprintln(tw, "collective\tbytes\tchosen\tchunk\tcodec\tus\tdefault us\tspeedup\t")
	for _, d := range decisions {
		chosen, chunk := d.Chosen.Algo, "-"
		if d.Kept {
			chosen = "default"
		}
		if d.Chosen.Chunk > 0 {
			chunk = strconv.Itoa(d.Chosen.Chunk)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.2f\t%.2f\t%.2fx\t\n", d.Chosen.Collective, d.Chosen.Bytes, chosen, chunk,
			d.Chosen.Codec, d.Chosen.AvgUS, d.Default.AvgUS, d.Speedup())
	}
	return tw.Flush()
}

// writeLossy prints a line for each entry of table that chooses a lossy
// codec: unlike an algorithm or a chunk size, it changes the results of
// the calls it covers, which the user of the table should know.
func writeLossy(w io.Writer, table *tuning.Table) error {
	var b strings.Builder
	for i := range table.Entries {
		e := &table.Entries[i]
		if c := e.Choice().Codec; c.Lossy() {
			fmt.Fprintf(&b, "%s chosen for %s of %d to %d bytes: float32 and float64 results rounded to %s precision\n",
				c, e.Collective, e.MinBytes, e.MaxBytes, c)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	_, err := io.WriteString(w, "\n"+b.String())
	return err
}
