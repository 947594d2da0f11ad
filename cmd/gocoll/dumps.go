package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gocoll/gocoll/internal/flight"
	"github.com/gocoll/gocoll/internal/launch"
)

// The flight recorder's dumps. gocoll run has its ranks write their dumps
// (GOCOLL_DUMP) into a directory of its own, unless the user named a
// place, and reads them: when the job fails, since every rank dumps
// when it learns of the failure, and a moment after run passes a SIGUSR1
// on to the ranks, which makes each dump what it does. From the dumps it
// prints one diagnosis: who waits for whom, in which call (package
// flight).

// dumpVar names where a job's ranks write their flight-recorder dumps.
const dumpVar = "GOCOLL_DUMP"

// dumpWait is how long run waits for the ranks' dumps after passing on a
// SIGUSR1: a rank dumps at once, unless it is stopped or cannot run.
const dumpWait = 500 * time.Millisecond

// jobDumps is where a job's ranks dump, and which ranks run here.
type jobDumps struct {
	path  string // as the ranks get it in GOCOLL_DUMP
	dir   string // run's own directory, removed at the end; "" when the user named path
	size  int
	ranks []int
	done  chan struct{} // ends relay
	mu    sync.Mutex    // one diagnosis at a time
}

// prepareDumps gives job's ranks a GOCOLL_DUMP in a directory of run's
// own, unless the user set one.
func prepareDumps(job *launch.Job) (*jobDumps, error) {
	d := &jobDumps{size: max(job.Nodes, 1) * job.Ranks, ranks: nodeRanks(*job), done: make(chan struct{})}
	if d.path = lookupVar(job.Env, dumpVar); d.path != "" {
		return d, nil
	}
	dir, err := os.MkdirTemp("", "gocoll-dumps-")
	if err != nil {
		return nil, fmt.Errorf("making a directory for the ranks' flight-recorder dumps: %w", err)
	}
	d.dir, d.path = dir, filepath.Join(dir, "dump.json")
	job.Env = append(job.Env, dumpVar+"="+d.path)
	return d, nil
}

// cleanup ends relay and removes run's directory of dumps.
func (d *jobDumps) cleanup() {
	close(d.done)
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

// relay passes the signals of in on to the launcher's channel it returns,
// and prints a diagnosis a moment after each SIGUSR1, which the ranks
// answer with their dumps.
func (d *jobDumps) relay(in <-chan os.Signal, stderr io.Writer) <-chan os.Signal {
	out := make(chan os.Signal, cap(in))
	go func() {
		for {
			var sig os.Signal
			select {
			case sig = <-in:
			case <-d.done:
				return
			}
			select {
			case out <- sig:
			case <-d.done:
				return
			}
			if sig == syscall.SIGUSR1 {
				time.AfterFunc(dumpWait, func() {
					select {
					case <-d.done:
					default:
						d.diagnose(stderr, "on SIGUSR1")
					}
				})
			}
		}
	}()
	return out
}

// diagnose reads the dumps this machine's ranks wrote and prints the
// diagnosis, if any rank dumped.
func (d *jobDumps) diagnose(stderr io.Writer, when string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var dumps []*flight.Dump
	var unread []string
	for _, rank := range d.ranks {
		dump, err := readDump(flight.RankPath(d.path, rank))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			unread = append(unread, fmt.Sprintf("rank %d: %v", rank, err))
			continue
		}
		dumps = append(dumps, dump)
	}
	if len(dumps) == 0 && len(unread) == 0 {
		return
	}
	fmt.Fprintf(stderr, "gocoll run: flight recorder, %s (%d of %d ranks dumped):\n", when, len(dumps), len(d.ranks))
	for _, line := range flight.Diagnose(d.size, dumps) {
		fmt.Fprintf(stderr, "gocoll run:   %s\n", line)
	}
	for _, u := range unread {
		fmt.Fprintf(stderr, "gocoll run:   dump not read: %s\n", u)
	}
}
