package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/bench"
	"github.com/gocoll/gocoll/internal/launch"
)

// A sweep over processes runs gocoll itself as its ranks, with the same
// arguments and two more variables: benchResultsVar makes the process a
// rank and names the file rank 0 leaves the results in, and
// benchProgressVar asks rank 0 to report progress on its stdout, in lines
// that start with benchProgressMarker, which the launching gocoll draws
// as the bar instead of printing.
const (
	benchResultsVar     = "GOCOLL_BENCH_RESULTS"
	benchProgressVar    = "GOCOLL_BENCH_PROGRESS"
	benchProgressMarker = "gocoll-bench-progress"
)

// benchJob runs the sweep in f.n processes and returns rank 0's results.
func benchJob(ctx context.Context, f benchFlags, args []string, bar *bench.ProgressBar, stdout, stderr io.Writer) ([]bench.Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start its ranks: %w", err)
	}
	dir, err := os.MkdirTemp("", "gocoll-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "results.json")
	env := []string{"GOCOLL_TRANSPORT=" + f.transport, benchResultsVar + "=" + path}
	if f.timeout > 0 {
		env = append(env, "GOCOLL_TIMEOUT="+f.timeout.String())
	}
	if bar != nil {
		env = append(env, benchProgressVar+"=1")
	}
	err = launch.Run(ctx, launch.Job{
		Program: exe, Args: append([]string{"bench"}, args...), Ranks: f.n,
		Env: env, Stdout: &rankOutput{w: stdout, bar: bar}, Stderr: stderr,
	})
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading rank 0's results: %w", err)
	}
	var results []bench.Result
	if err := json.Unmarshal(b, &results); err != nil {
		return nil, fmt.Errorf("reading rank 0's results from %s: %w", path, err)
	}
	return results, nil
}

// benchRank is one rank of a sweep over processes; with profile, it
// writes its CPU profile of the sweep to profile.<rank>.
func benchRank(cfg bench.Config, profile, path string, progress bool, stdout, stderr io.Writer) int {
	ctx := context.Background()
	c, err := comm.Init(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "gocoll bench: %v\n", err)
		return 1
	}
	defer c.Close()
	if profile != "" {
		stop, err := startProfile(fmt.Sprintf("%s.%d", profile, c.Rank()))
		if err != nil {
			fmt.Fprintf(stderr, "gocoll bench: --cpuprofile: %v\n", err)
			return 1
		}
		defer stop()
	}
	var report func(done, total int)
	if progress && c.Rank() == 0 {
		report = func(done, total int) { fmt.Fprintf(stdout, "%s %d %d\n", benchProgressMarker, done, total) }
	}
	results, err := bench.Run(ctx, c, cfg, report)
	if err != nil {
		fmt.Fprintf(stderr, "gocoll bench: %v\n", err)
		return 1
	}
	if c.Rank() != 0 {
		return 0
	}
	b, err := json.Marshal(results)
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gocoll bench: handing the results over: %v\n", err)
		return 1
	}
	return 0
}

// rankOutput receives the ranks' stdout from launch, each line prefixed
// with its rank: it draws rank 0's progress lines on the bar and passes
// everything else on.
type rankOutput struct {
	w   io.Writer
	bar *bench.ProgressBar

	mu      sync.Mutex
	partial []byte
}

func (o *rankOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		line, rest, ok := bytes.Cut(o.partial, []byte("\n"))
		if !ok {
			return len(p), nil
		}
		var done, total int
		if _, err := fmt.Sscanf(string(line), "[0] "+benchProgressMarker+" %d %d", &done, &total); err == nil && o.bar != nil {
			o.bar.Update(done, total)
		} else if _, err := o.w.Write(o.partial[:len(line)+1]); err != nil {
			return 0, err
		}
		o.partial = rest
	}
}

// benchLocal runs the sweep in f.n goroutines linked in memory and returns
// rank 0's results.
func benchLocal(ctx context.Context, f benchFlags, cfg bench.Config, bar *bench.ProgressBar) ([]bench.Result, error) {
	var opts []comm.Option
	if f.timeout > 0 {
		opts = append(opts, comm.WithTimeout(f.timeout))
	}
	comms, err := comm.NewLocal(f.n, opts...)
	if err != nil {
		return nil, err
	}
	results := make([][]bench.Result, f.n)
	errs := make([]error, f.n)
	var wg sync.WaitGroup
	for r, c := range comms {
		var report func(done, total int)
		if r == 0 && bar != nil {
			report = bar.Update
		}
		wg.Go(func() {
			defer c.Close()
			results[r], errs[r] = bench.Run(ctx, c, cfg, report)
		})
	}
	wg.Wait()
	return results[0], rootCause(errs)
}

// rootCause picks, of the ranks' errors, the one that made the others
// fail: the first that is not an abort by another rank.
func rootCause(errs []error) error {
	first := -1
	for r, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, comm.ErrAborted) {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		if first < 0 {
			first = r
		}
	}
	if first < 0 {
		return nil
	}
	return fmt.Errorf("rank %d: %w", first, errs[first])
}

// startProfile starts writing this process's CPU profile to path, if
// path is not empty, and returns what stops it.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
