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
	"strings"
	"syscall"
	"time"

	"github.com/gocoll/gocoll/internal/bench"
	"github.com/gocoll/gocoll/internal/cli"
	"github.com/gocoll/gocoll/internal/launch"
)

var benchCmd = &cli.Command{
	Name:  "bench",
	Short: "measure collectives over message sizes",
	Run:   benchMain,
	Usage: benchUsage,
}

const benchUsage = `usage: gocoll bench [-n ranks] [--transport t] [--collectives list]
                    [--sizes spec] [--algos list] [--chunks list] [--codec list]
                    [--iters auto|N] [--scale f] [--csv file] [--json file]
                    [--objects] [--registered] [--progress] [--cpuprofile file]
                    [--timeout d]

Bench starts a job of n ranks on this machine and sweeps collectives over
message sizes the way the OSU micro-benchmarks and the scripts in
bench/reference time them: for each collective, algorithm, chunk size, codec and size it makes
a few warm-up calls, then times each call alone, between barriers. A
rank's figure is its average; the one reported is the largest over the
ranks, with the fastest and the slowest single call on any rank. Every
call's result is checked against the data each rank sent, and one wrong
value fails the run.

The table goes to stdout: per point the algorithm that ran, marked
(auto) where the selector chose it, and the link that carried it (tcp,
shm or mem links, or the host's shared segment), as the communicator
counted the calls; its chunk size and codec when --chunks or a codec
other than none is given; the average, fastest, median (p50), 99th
percentile (p99) and slowest call in µs (of a rank's calls, the largest over the ranks), the CPU time a rank's process
spends per call in µs (user and system, all its threads, the largest
over the ranks: what a rank that spins while it waits pays; measured on
a quarter as many calls again after the timed ones, since reading it
would delay the call it brackets, less the 1-1.5 µs that two readings
with nothing between them take), and the
algorithm and bus bandwidths in GB/s (1e9 bytes/s). algbw is bytes/avg; busbw is algbw
times nccl-tests' factor for n ranks, which makes figures of different
rank counts comparable and comes close to a link's bandwidth when the
collective uses the link fully:

	allreduce                                 2(n-1)/n
	reducescatter, allgather, allgatherv,
	gather, gatherv, scatter, scatterv,
	alltoall                                  (n-1)/n
	bcast, reduce, scan, exscan               1
	barrier                                   0

bytes counts the reduced vector (allreduce, reduce, reducescatter, scan,
exscan), the broadcast buffer (bcast), the whole gathered or scattered
buffer (gather, scatter, allgather and their v forms, whose counts are
all equal, as OSU's osu_gatherv, osu_scatterv and osu_allgatherv have
them) and one rank's send buffer (alltoall). With a codec
(--codec), bytes and both bandwidths still count the float32 data, not
the compressed bytes on the wire: they are effective bandwidths, which
compare across codecs. The data are float32, summed where reduced; a
size that is not a whole number of elements, or of n equal blocks for
the collectives that split their buffer, is skipped for that collective.
They are pseudo-random whole numbers, so that the lossless codecs meet
data that shrinks little rather than a repeating pattern, and small
enough that every sum, and every value a lossy codec rounds, is exact.

The flags are:

	-n ranks
		number of ranks (default 2)
	--transport t
		auto (the default), shm or tcp: the ranks are processes of this
		program, linked as gocoll run links them; mem: the ranks are
		goroutines of this process, linked in memory
	--collectives list
		comma-separated, from allreduce, reduce, bcast, gather, scatter,
		gatherv, scatterv, allgather, allgatherv, reducescatter, alltoall,
		scan, exscan and barrier (default
		allreduce,bcast,gather)
	--sizes spec
		message sizes in bytes: comma-separated sizes and ranges, with
		suffixes K, M and G for powers of 1024. A range lo:hi is lo, the
		powers of two between, and hi (default 8:64M)
	--algos list
		auto, the selector's choice per call (the default); all, every
		algorithm each collective accepts on this job (shm needs shared
		memory, hierarchical several hosts); or comma-separated algorithm
		names (ring, ring_chunked, recursive_doubling, rabenseifner, tree,
		chain, scatter_allgather, linear, bruck, recursive_halving,
		pairwise, shm, hierarchical), each measured with the collectives
		it applies to. auto combines with the others
	--chunks list
		chunk sizes in bytes (K, M and G suffixes) to measure each
		pipelined algorithm (ring_chunked, chain) with, named in the
		chunk column; the default chunk only when not given
	--codec list
		comma-separated wire codecs to measure each algorithm and chunk
		size with, named in the codec column: none (the default), the
		lossy bf16 and fp16, which send the float32 data as 16-bit
		floats and round the results, and the lossless zstd and s2.
		Every call is given its point's codec, so GOCOLL_CODEC does not
		change a sweep, except with auto, which passes no codec and
		leaves it to GOCOLL_CODEC or the tuning table (GOCOLL_TUNING):
		a tuned table against the defaults is --codec auto with the
		table against --codec none without it. shm and hierarchical do not compress and are
		measured with none only; barrier and the object collectives
		(--objects, which then needs none in the list) take no codec.
		Lossy results are checked exactly too, which limits a lossy
		allreduce, reduce or reducescatter to 256 ranks with bf16 and
		2048 with fp16
	--iters auto|N
		timed calls per point; auto is mpi_coll_bench.c's count, enough
		calls to move about 256 MiB, at least 10 and at most 1000 (the
		default). A tenth as many warm-up calls, at least 2, come first
	--scale f
		multiplies the automatic count; at least 2 calls remain (default 1)
	--csv file
		also write the results as CSV, with the anchors' columns
		impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps
		then algo,codec,chunk,min_us,max_us,cpu_us,p50_us,p99_us,link,auto:
		transport is the one asked for, algo and link what ran, auto
		true where the selector chose algo
	--json file
		also write the results as JSON, with the machine and this command
	--objects
		also measure allreduce, bcast and allgather of the same data inside
		a Go value sent through the object codec (allreduce_object,
		bcast_object, allgather_object, algo raw), as mpi4py's lowercase methods pickle, to show what
		serialisation costs; uncompressed, whatever --codec says
	--registered
		place every rank's buffers in registered memory
		(collective.Alloc), which the shared-memory calls read and write
		directly instead of copying through the segment; the impl
		column says gocoll-registered. Where the ranks have no segment
		(--transport tcp, or ranks on several hosts) the calls go over
		links as with ordinary buffers, which the link column shows
	--progress
		draw a progress bar on stderr even when stderr is not a terminal
	--cpuprofile file
		write each rank's CPU profile of the sweep to file.<rank> (over
		mem, where the ranks share a process, the process's to file)
	--timeout d
		the communicator timeout of the ranks (0: the library default)

The command benchtool, in the repository's tools module, works on the
result files: compare sets gocoll's results side by side with other
implementations', plot draws bandwidth and latency against message size,
model fits the alpha-beta cost model and projects it to more ranks:

	cd tools && go run ./benchtool help

Bench exits with status 2 for bad arguments and 1 when the sweep fails.
`

// benchFlags are the flags of gocoll bench that are not part of the
// sweep's bench.Config.
type benchFlags struct {
	n         int
	transport string
	timeout   time.Duration
	csv, json string
	progress  bool
	profile   string // --cpuprofile
}

func benchMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "gocoll bench %s: a sweep takes only flags; compare, plot and model are benchtool's (cd tools && go run ./benchtool %s)\n",
			args[0], args[0])
		return 2
	}
	f, cfg, err := parseBench(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, benchUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gocoll bench: %v\nRun 'gocoll help bench' for usage.\n", err)
		return 2
	}
	if path := os.Getenv(benchResultsVar); path != "" {
		return benchRank(cfg, f.profile, path, os.Getenv(benchProgressVar) != "", stdout, stderr)
	}

	// The output files are made first, so that a bad path fails now and
	// not after the sweep.
	csvFile, err := createOutput(f.csv)
	if err != nil {
		fmt.Fprintf(stderr, "gocoll bench: --csv: %v\n", err)
		return 2
	}
	jsonFile, err := createOutput(f.json)
	if err != nil {
		discardOutput(csvFile)
		fmt.Fprintf(stderr, "gocoll bench: --json: %v\n", err)
		return 2
	}

	var bar *bench.ProgressBar
	if f.progress || isTerminal(stderr) {
		bar = bench.NewProgressBar(stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	var results []bench.Result
	if f.transport == "mem" {
		var stopProfile func()
		if stopProfile, err = startProfile(f.profile); err != nil {
			err = fmt.Errorf("--cpuprofile: %w", err)
		} else {
			results, err = benchLocal(ctx, f, cfg, bar)
			stopProfile()
		}
	} else {
		results, err = benchJob(ctx, f, args, bar, stdout, stderr)
	}
	if bar != nil {
		bar.Clear()
	}
	if err != nil {
		discardOutput(csvFile)
		discardOutput(jsonFile)
		var re *launch.RankError
		switch {
		case errors.As(err, &re):
			fmt.Fprintf(stderr, "gocoll bench: rank %d failed (%v); the job was stopped after %v\n", re.Rank, re.Err, time.Since(start).Round(time.Millisecond))
		case ctx.Err() != nil:
			fmt.Fprintf(stderr, "gocoll bench: interrupted; the job was stopped\n")
		default:
			fmt.Fprintf(stderr, "gocoll bench: %v\n", err)
		}
		return 1
	}

	fmt.Fprintf(stdout, "%d ranks over %s\n\n", f.n, f.transport)
	err = errors.Join(bench.WriteTable(stdout, results),
		writeOutput(csvFile, func(w io.Writer) error { return bench.WriteCSV(w, results) }),
		writeOutput(jsonFile, func(w io.Writer) error {
			return bench.WriteJSON(w, &bench.Report{Date: start, Command: os.Args, Machine: bench.ThisMachine(), Results: results})
		}))
	if err != nil {
		fmt.Fprintf(stderr, "gocoll bench: %v\n", err)
		return 1
	}
	return 0
}

// parseBench parses the flags of a sweep.
func parseBench(args []string) (benchFlags, bench.Config, error) {
	var f benchFlags
	var cfg bench.Config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&f.n, "n", 2, "")
	fs.StringVar(&f.transport, "transport", "auto", "")
	fs.DurationVar(&f.timeout, "timeout", 0, "")
	fs.StringVar(&f.csv, "csv", "", "")
	fs.StringVar(&f.json, "json", "", "")
	fs.BoolVar(&f.progress, "progress", false, "")
	fs.StringVar(&f.profile, "cpuprofile", "", "")
	collectives := fs.String("collectives", strings.Join(bench.DefaultCollectives, ","), "")
	sizes := fs.String("sizes", "8:64M", "")
	algos := fs.String("algos", "auto", "")
	codecs := fs.String("codec", "none", "")
	chunks := fs.String("chunks", "", "")
	iters := fs.String("iters", "auto", "")
	fs.Float64Var(&cfg.Scale, "scale", 1, "")
	fs.BoolVar(&cfg.Objects, "objects", false, "")
	fs.BoolVar(&cfg.Registered, "registered", false, "")
	if err := fs.Parse(args); err != nil {
		return f, cfg, err
	}
	if fs.NArg() > 0 {
		return f, cfg, fmt.Errorf("unexpected argument %q: a sweep takes only flags", fs.Arg(0))
	}
	if f.n < 1 {
		return f, cfg, fmt.Errorf("-n %d: want at least 1 rank", f.n)
	}
	switch f.transport {
	case "auto", "shm", "tcp", "mem":
	default:
		return f, cfg, fmt.Errorf("--transport: unknown transport %q (want auto, shm, tcp or mem)", f.transport)
	}
	if *iters != "auto" {
		n, err := strconv.Atoi(*iters)
		if err != nil || n < 1 {
			return f, cfg, fmt.Errorf("--iters %q: want auto or a positive number of calls", *iters)
		}
		cfg.Iters = n
	}
	if !(cfg.Scale > 0) {
		return f, cfg, fmt.Errorf("--scale %v: want a positive factor", cfg.Scale)
	}
	var err error
	if cfg.Sizes, err = bench.ParseSizes(*sizes); err != nil {
		return f, cfg, fmt.Errorf("--sizes: %w", err)
	}
	if *chunks != "" {
		list, err := bench.ParseSizes(*chunks)
		if err != nil {
			return f, cfg, fmt.Errorf("--chunks: %w", err)
		}
		for _, c := range list {
			cfg.Chunks = append(cfg.Chunks, int(c))
		}
	}
	cfg.Collectives, cfg.Algorithms, cfg.Codecs = splitList(*collectives), splitList(*algos), splitList(*codecs)
	cfg.Transport = f.transport
	if err := cfg.Validate(); err != nil {
		return f, cfg, err
	}
	return f, cfg, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var items []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

func createOutput(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	return os.Create(path)
}

// discardOutput removes an output file of a sweep that failed.
func discardOutput(f *os.File) {
	if f != nil {
		f.Close()
		os.Remove(f.Name())
	}
}

func writeOutput(f *os.File, write func(io.Writer) error) error {
	if f == nil {
		return nil
	}
	if err := errors.Join(write(f), f.Close()); err != nil {
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return nil
}

// isTerminal reports whether w is a terminal, where a progress bar that
// redraws itself in place makes sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
