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
	"syscall"
	"time"

	"github.com/gocoll/gocoll/internal/launch"
)

var runCmd = &command{
	name:  "run",
	short: "start the ranks of a job on this machine",
	run:   runMain,
	usage: runUsage,
}

const runUsage = `usage: gocoll run [-n ranks] [--timeout d] [--transport t] [--nnodes k --node-rank i --master host:port --secret s] prog [args...]

Run starts the ranks of a job as local processes of prog, with the
environment that comm.Init reads (GOCOLL_RANK, GOCOLL_SIZE, GOCOLL_ADDR,
GOCOLL_SECRET, plus GOCOLL_LOCAL_RANK and GOCOLL_LOCAL_SIZE). Each line a
rank prints is prefixed with its rank, as in "[2] ...". A fresh job secret
is generated unless --secret is given.

When any rank fails, run terminates the others (SIGTERM, then SIGKILL after
a grace period) and exits with status 1 and a one-line reason. SIGINT and
SIGTERM sent to run are passed on to every rank.

A job over several machines runs gocoll run on each of them with the same
--nnodes, --master and --secret and its own --node-rank; node i starts the
ranks i*n .. i*n+n-1, and rank 0 (on node 0) serves the rendezvous at
--master.

The flags are:

	-n ranks
		number of ranks to start on this machine (default 2)
	--timeout d
		communicator timeout handed to the ranks as GOCOLL_TIMEOUT (0 means
		the library default)
	--transport t
		how ranks talk, handed over as GOCOLL_TRANSPORT: auto (shared memory
		between ranks of one host, tcp between hosts, chosen per pair; the
		default), shm (shared memory only: every rank on one host) or tcp
		(no shared memory)
	--nnodes k, --node-rank i, --master host:port, --secret s
		place this machine's ranks in a job over k machines
`

func runMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 2, "")
	timeout := fs.Duration("timeout", 0, "")
	transport := fs.String("transport", "auto", "")
	nnodes := fs.Int("nnodes", 1, "")
	nodeRank := fs.Int("node-rank", 0, "")
	master := fs.String("master", "", "")
	secret := fs.String("secret", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, runUsage)
			return 0
		}
		fmt.Fprintf(stderr, "gocoll run: %v\n%s", err, runUsage)
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "gocoll run: no program given\n%s", runUsage)
		return 2
	}
	switch *transport {
	case "auto", "shm", "tcp":
	default:
		fmt.Fprintf(stderr, "gocoll run: unknown transport %q (want auto, shm or tcp)\n", *transport)
		return 2
	}
	prog, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "gocoll run: %v\n", err)
		return 2
	}
	env := []string{"GOCOLL_TRANSPORT=" + *transport}
	if *timeout > 0 {
		env = append(env, "GOCOLL_TIMEOUT="+timeout.String())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	err = launch.Run(ctx, launch.Job{
		Program: prog, Args: fs.Args()[1:], Ranks: *n,
		Nodes: *nnodes, NodeRank: *nodeRank, Master: *master, Secret: *secret,
		Env: env, Stdout: stdout, Stderr: stderr,
	})
	if err != nil {
		var re *launch.RankError
		switch {
		case errors.As(err, &re):
			fmt.Fprintf(stderr, "gocoll run: rank %d failed (%v); the job was stopped after %v\n", re.Rank, re.Err, time.Since(start).Round(time.Millisecond))
		case ctx.Err() != nil:
			fmt.Fprintf(stderr, "gocoll run: interrupted; the job was stopped\n")
		default:
			fmt.Fprintf(stderr, "gocoll run: %v\n", err)
		}
		return 1
	}
	return 0
}
