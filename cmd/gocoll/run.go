package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/cli"
	"github.com/gocoll/gocoll/internal/launch"
	"github.com/gocoll/gocoll/internal/ranklist"
	"github.com/gocoll/gocoll/internal/timeline"
)

var runCmd = &cli.Command{
	Name:  "run",
	Short: "start the ranks of a job on this machine",
	Run:   runMain,
	Usage: runUsage,
}

const runUsage = `usage: gocoll run [-n ranks] [--timeout d] [--heartbeat d] [--transport t] [--bind-to core|none] [--trace path] [--nnodes k --node-rank i --master host:port] prog [args...]

Run starts the ranks of a job as local processes of prog, with the
environment that comm.Init reads (GOCOLL_RANK, GOCOLL_SIZE, GOCOLL_ADDR,
GOCOLL_SECRET, plus GOCOLL_LOCAL_RANK and GOCOLL_LOCAL_SIZE). Each line a
rank prints is prefixed with its rank, as in "[2] ...".

Each rank gets its share of the machine's CPUs as GOMAXPROCS (the CPUs
divided by the ranks, at least 1) and, when there are no more ranks than
CPUs, is bound to that many CPUs of its own, as mpirun binds each rank
to its own cores: ranks that each run a thread per CPU take turns on the
CPUs, a rank whose message has arrived waits for one, and two ranks that
wait by polling must not share a CPU while another stands idle. Set
GOMAXPROCS to choose another number for every rank, and --bind-to none
to leave the ranks wherever the kernel puts them.

When any rank fails, run gives the others a second to end by themselves
(those waiting for the failed rank learn of it and report it), then
terminates the rest (SIGTERM, then SIGKILL after a grace period), prints a one-line reason that names the rank to blame (the
rank that was lost or aborted, as the ranks reported it, not merely the
first to exit) and exits with the failing rank's exit status, or 128 plus
the signal that killed it. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
SIGUSR2 sent to run are passed on to every rank as they are; the first four
also end the job, and run exits with 128 plus the signal (130 for SIGINT).
The ranks die with run, even when run is killed with SIGKILL (Linux).

The job secret authenticates every link and the rendezvous. On one machine
run makes a fresh one. It is taken from, in this order: --secret-file,
the GOCOLL_SECRET environment variable, --secret (visible to every user of
the machine in ps; run warns).

With --trace path (or GOCOLL_TRACE=path in run's environment) every rank
records a timeline of its collectives, each call with its steps and
waits, in its own file: path with ".rankN" before the extension. When
the job ends, successfully or not, run merges the files into path, one
track per rank, for ui.perfetto.dev or chrome://tracing, removes them and
says where the trace is. A merge that fails leaves the rank files for
gocoll trace merge and makes run exit 1 if the job itself succeeded.

A job over several machines runs gocoll run on each of them with the same
-n, --nnodes, --master and secret and its own --node-rank; node i starts
the ranks i*n .. i*n+n-1, and rank 0 (on node 0) serves the rendezvous at
--master.

The flags are:

	-n ranks
		number of ranks to start on this machine (default 2)
	--timeout d
		communicator timeout handed to the ranks as GOCOLL_TIMEOUT (0 means
		the library default)
	--heartbeat d
		heartbeat period handed to the ranks as GOCOLL_HEARTBEAT: a rank
		frozen or cut off is reported lost within it (default 4s; off turns
		heartbeats off)
	--transport t
		how ranks talk, handed over as GOCOLL_TRANSPORT: auto (shared memory
		between ranks of one host, tcp between hosts, chosen per pair; the
		default), shm (shared memory only: every rank on one host) or tcp
		(no shared memory)
	--bind-to core|none
		core (the default) binds each rank to its share of the CPUs this
		command may use when there are no more ranks than CPUs; none
		binds nothing
	--trace path
		write a timeline of the job to path (handed to the ranks as
		GOCOLL_TRACE, made absolute). In a job over several machines,
		each machine's run leaves its ranks' files, to be merged with
		the other machines' by gocoll trace merge
	--nnodes k, --node-rank i, --master host:port
		place this machine's ranks in a job over k machines
	--secret-file path
		read the job secret from the file (surrounding white space is
		dropped)
	--secret s
		the job secret itself; prefer GOCOLL_SECRET or --secret-file
`

func runMain(args []string, stdout, stderr io.Writer) int {
	job, err := parseRun(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, runUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gocoll run: %v\n", err)
		if _, flagErr := err.(flagError); flagErr {
			fmt.Fprint(stderr, runUsage)
		}
		return 2
	}

	trace := lookupVar(job.Env, traceVar)
	if trace != "" {
		// A file left by an earlier job would be merged as this one's
		// if its rank wrote none this time.
		for _, rank := range nodeRanks(job) {
			os.Remove(timeline.RankPath(trace, rank))
		}
	}

	dumps, err := prepareDumps(&job)
	if err != nil {
		fmt.Fprintf(stderr, "gocoll run: %v\n", err)
		return 1
	}
	defer dumps.cleanup()

	signals := make(chan os.Signal, 8)
	signal.Notify(signals, forwarded...)
	defer signal.Stop(signals)
	job.Signals = dumps.relay(signals, stderr)
	job.Stdout, job.Stderr = stdout, stderr
	start := time.Now()
	err = launch.Run(context.Background(), job)
	took := time.Since(start).Round(time.Millisecond)
	code := jobStatus(err, took, stderr)
	if err != nil {
		dumps.diagnose(stderr, "when the job failed")
	}
	if trace != "" {
		// A trace that could not be written fails a job that
		// succeeded; a job that failed keeps its own status.
		if traceCode := collectTrace(job, trace, stderr); code == 0 {
			code = traceCode
		}
	}
	return code
}

// jobStatus says why the job failed, if it did, and returns run's exit
// status for it.
func jobStatus(err error, took time.Duration, stderr io.Writer) int {
	var re *launch.RankError
	var se *launch.SignalError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &se):
		fmt.Fprintf(stderr, "gocoll run: interrupted by %v; the job was stopped after %v\n", unix.SignalName(se.Signal), took)
		return se.ExitCode()
	case errors.As(err, &re) && re.Cause != nil:
		fmt.Fprintf(stderr, "gocoll run: %v (as the ranks reported it); rank %d exited (%v); the job was stopped after %v\n", re.Cause, re.Rank, re.Err, took)
		return re.ExitCode()
	case errors.As(err, &re):
		fmt.Fprintf(stderr, "gocoll run: rank %d failed (%v); the job was stopped after %v\n", re.Rank, re.Err, took)
		return re.ExitCode()
	default:
		fmt.Fprintf(stderr, "gocoll run: %v\n", err)
		return 1
	}
}

// traceVar names the trace a job's ranks write (see package timeline).
const traceVar = "GOCOLL_TRACE"

// collectTrace merges the timeline files this machine's ranks wrote into
// path, removes them and prints one line saying where the trace is, or
// why there is none; it returns 1 when there is none. The ranks of a job
// over several machines write on each machine, so there it leaves the
// files where they are and says how to merge them.
func collectTrace(job launch.Job, path string, stderr io.Writer) int {
	ranks := nodeRanks(job)
	pattern := rankPattern(path)
	if job.Nodes > 1 {
		fmt.Fprintf(stderr, "gocoll run: the timelines of %s are in %s; merge them with the other machines' files: gocoll trace merge -o %s %s\n",
			ranklist.Ranks(ranks), pattern, path, pattern)
		return 0
	}
	var files []string
	for _, rank := range ranks {
		if file := timeline.RankPath(path, rank); fileExists(file) {
			files = append(files, file)
		}
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "gocoll run: no timeline: no rank wrote its file (%s)\n", pattern)
		return 1
	}
	sum, err := mergeTrace(path, files)
	if err != nil {
		fmt.Fprintf(stderr, "gocoll run: timeline not merged: %v; the rank files are left as %s\n", err, pattern)
		return 1
	}
	for _, file := range files {
		os.Remove(file)
	}
	fmt.Fprintf(stderr, "gocoll run: %s\n", describeTrace(sum, path))
	return 0
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// rankPattern is the glob of the files the ranks write for a trace at
// path: "trace.rank*.json" for "trace.json".
func rankPattern(path string) string {
	p := timeline.RankPath(path, 0)
	i := strings.LastIndex(p, ".rank0")
	return p[:i] + ".rank*" + p[i+len(".rank0"):]
}

// nodeRanks are the ranks run starts on this machine.
func nodeRanks(job launch.Job) []int {
	ranks := make([]int, job.Ranks)
	for i := range ranks {
		ranks[i] = job.NodeRank*job.Ranks + i
	}
	return ranks
}

// lookupVar is the value env (as exec.Cmd.Env, the last setting winning)
// gives name, or "".
func lookupVar(env []string, name string) string {
	value := ""
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			value = v
		}
	}
	return value
}

// forwarded are the signals run passes on to its ranks.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// flagError is a flag that does not parse; the usage follows it.
type flagError struct{ error }

// parseRun turns run's command line into a job, or an error that is the
// user's: exit status 2.
func parseRun(args []string, stderr io.Writer) (launch.Job, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 2, "")
	timeout := fs.Duration("timeout", 0, "")
	heartbeat := fs.String("heartbeat", "", "")
	transport := fs.String("transport", "auto", "")
	nnodes := fs.Int("nnodes", 1, "")
	nodeRank := fs.Int("node-rank", 0, "")
	master := fs.String("master", "", "")
	secretFile := fs.String("secret-file", "", "")
	secretFlag := fs.String("secret", "", "")
	bindTo := fs.String("bind-to", "core", "")
	trace := fs.String("trace", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return launch.Job{}, err
		}
		return launch.Job{}, flagError{err}
	}
	switch {
	case fs.NArg() == 0:
		return launch.Job{}, flagError{errors.New("no program given")}
	case *n < 1:
		return launch.Job{}, fmt.Errorf("-n %d: a job needs at least one rank per machine", *n)
	case *nnodes < 1:
		return launch.Job{}, fmt.Errorf("--nnodes %d: a job needs at least one machine", *nnodes)
	case *nodeRank < 0 || *nodeRank >= *nnodes:
		return launch.Job{}, fmt.Errorf("--node-rank %d is outside 0 .. %d (--nnodes %d)", *nodeRank, *nnodes-1, *nnodes)
	case *timeout < 0:
		return launch.Job{}, fmt.Errorf("--timeout %v is negative", *timeout)
	}
	switch *transport {
	case "auto", "shm", "tcp":
	default:
		return launch.Job{}, fmt.Errorf("unknown transport %q (want auto, shm or tcp)", *transport)
	}
	if *bindTo != "core" && *bindTo != "none" {
		return launch.Job{}, fmt.Errorf("--bind-to %q: want core or none", *bindTo)
	}
	prog, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		return launch.Job{}, err
	}
	secret, err := jobSecret(*secretFile, *secretFlag, stderr)
	if err != nil {
		return launch.Job{}, err
	}
	if *nnodes > 1 && (secret == "" || *master == "") {
		return launch.Job{}, errors.New("a job over several machines needs --master and the same secret on every machine (GOCOLL_SECRET or --secret-file)")
	}
	env := []string{"GOCOLL_TRANSPORT=" + *transport}
	if *timeout > 0 {
		env = append(env, "GOCOLL_TIMEOUT="+timeout.String())
	}
	if *heartbeat != "" {
		env = append(env, "GOCOLL_HEARTBEAT="+*heartbeat)
	}
	traceFrom := "--trace "
	if *trace == "" {
		*trace, traceFrom = os.Getenv(traceVar), traceVar+"="
	}
	if *trace != "" {
		// Absolute, so that a rank that changes directory writes where
		// run looks.
		abs, err := filepath.Abs(*trace)
		if err != nil {
			return launch.Job{}, fmt.Errorf("%s%s: %w", traceFrom, *trace, err)
		}
		// Else every rank would fail to open its file, and say so.
		if fi, err := os.Stat(filepath.Dir(abs)); err != nil || !fi.IsDir() {
			return launch.Job{}, fmt.Errorf("%s%s: no directory %s", traceFrom, *trace, filepath.Dir(abs))
		}
		env = append(env, traceVar+"="+abs)
	}
	return launch.Job{
		Program: prog, Args: fs.Args()[1:], Ranks: *n,
		Nodes: *nnodes, NodeRank: *nodeRank, Master: *master, Secret: secret, Env: env,
		NoBind: *bindTo == "none",
	}, nil
}

// jobSecret picks the job secret: from the file, else GOCOLL_SECRET, else
// the flag, which every user of the machine can read in ps; "" lets the
// launcher make one.
func jobSecret(file, flagValue string, stderr io.Writer) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--secret-file: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("--secret-file %s is empty", file)
		}
		return s, nil
	}
	if s := os.Getenv("GOCOLL_SECRET"); s != "" {
		return s, nil
	}
	if flagValue != "" {
		fmt.Fprintln(stderr, "gocoll run: warning: --secret is visible to every user of this machine (ps); use GOCOLL_SECRET or --secret-file")
	}
	return flagValue, nil
}
