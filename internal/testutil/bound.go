package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocoll/gocoll/internal/launch"
)

// StartPeer starts this test binary again as rank 1 of a job of two
// processes on this machine over transport, with worker ("NAME=value",
// which sends the binary to the peer's code) in its environment, and sets
// tb's environment so that comm.Init in this process joins the job as
// rank 0: for benchmarks of two processes. With bound, the peer starts
// on CPU 1 at GOMAXPROCS=1, as gocoll run and mpirun place the second of
// two ranks on a host of two CPUs; this process must then be the child
// that RunBound started on CPU 0 at GOMAXPROCS=1. The caller waits for
// the peer once rank 0 is done, and kills it if rank 0 cannot join.
func StartPeer(tb testing.TB, worker, transport string, bound bool) *exec.Cmd {
	tb.Helper()
	if bound && !InBoundRun() {
		tb.Fatal("a bound peer starts from a benchmark that RunBound started")
	}
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	port, err := launch.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	env := map[string]string{"GOCOLL_SIZE": "2", "GOCOLL_ADDR": "127.0.0.1:" + strconv.Itoa(port),
		"GOCOLL_SECRET": launch.NewSecret(), "GOCOLL_TRANSPORT": transport}
	peer := exec.Command(exe, "-test.run=^$")
	peer.Env = append(os.Environ(), worker, "GOCOLL_RANK=1")
	for k, v := range env {
		peer.Env = append(peer.Env, k+"="+v)
	}
	peer.Stderr = os.Stderr
	start := peer.Start
	if bound {
		peer.Env = append(peer.Env, "GOMAXPROCS=1")
		start = func() error { return launch.StartOnCPU(1, peer.Start) }
	}
	if err := start(); err != nil {
		tb.Fatal(err)
	}
	env["GOCOLL_RANK"] = "0"
	for k, v := range env {
		tb.Setenv(k, v)
	}
	// Init lowers this process's GOMAXPROCS to its share of the CPUs where
	// the environment does not set it, as it does a rank's; what runs
	// after tb gets it back.
	tb.Cleanup(SetProcs(runtime.GOMAXPROCS(0)))
	return peer
}

// SetProcs sets GOMAXPROCS to procs and returns what sets it back. The
// testing package sets GOMAXPROCS to its -test.cpu value before every
// benchmark it runs, sub-benchmarks too, which undoes the share that
// comm.Init gave a two-process benchmark's process, as it gives a rank
// (two ranks on two CPUs: one P each); so each case sets that share
// again, and sets testing's value back before testing looks (it reports
// a benchmark that leaves GOMAXPROCS changed).
func SetProcs(procs int) (undo func()) {
	was := runtime.GOMAXPROCS(procs)
	return func() { runtime.GOMAXPROCS(was) }
}

// SettleFor is how long a benchmark of two processes makes untimed round
// trips (Settle) before it times any, as gocoll bench runs barriers for
// 100 ms before its first point. A process that has just started makes
// system calls and parks its goroutines as it joins the job, and each
// time it does Go's runtime monitor goes back to looking at it every 20
// µs, backing off over some 25 ms; on a VM under PVM each look took a
// spinning rank's CPU for 20-28 µs (perf sched timehist, 2026-11-30).
// Two bound processes' shm ping-pongs, 4000 of them timed right after
// one untimed round trip and after 30, 100 and 300 ms of them, µs a
// round trip, two runs each: 8 B 5.35-5.51 against 2.13-2.46, 2.19-4.35
// and 2.24-2.60; 64 KiB 15.3-17.0 against 10.6-13.5, 10.8-12.2 and
// 10.5-12.1, the medians level (1.9-2.2 and 9.2-10.6). What the timed
// round trips then measure is a job that has been running, as the C and
// Python references measure theirs after their warm-up calls.
const SettleFor = 100 * time.Millisecond

// settleBatchMax bounds the round trips of one of Settle's batches.
const settleBatchMax = 64

// Settle calls trips, which makes n untimed round trips with the peer
// (asking it for as many), in batches of 1, 2, 4 and so on up to
// settleBatchMax round trips, until d has passed, and at least once; a
// batch of large messages then overshoots d by little. It returns the
// first error of trips.
func Settle(d time.Duration, trips func(n int) error) error {
	start := time.Now()
	for n := 1; ; n = min(2*n, settleBatchMax) {
		if err := trips(n); err != nil {
			return err
		}
		if time.Since(start) >= d {
			return nil
		}
	}
}

// boundVar marks the child process of RunBound.
const boundVar = "GOCOLL_TEST_BOUND"

// InBoundRun reports whether this process is a child that RunBound
// started to run one benchmark bound.
func InBoundRun() bool { return os.Getenv(boundVar) != "" }

// RunBound runs benchmark b, b.N times, in a child process of this test
// binary that starts on CPU 0 at GOMAXPROCS=1, as a launcher that binds
// ranks starts rank 0 of two on a host of two CPUs, and reports the
// child's figures as b's. The child runs the same benchmark, in which
// InBoundRun is true: it does the work, with StartPeer's peer bound.
//
// The bound benchmarks once bound their own process and set GOMAXPROCS=1
// as they ran, which testing undid before each case (see SetProcs): rank
// 0 then ran two Ps on one CPU, and its 64 KiB RecvObject round trips
// over shared memory took 40-55 µs against 19-22 in a process started at
// GOMAXPROCS=1 (two-vCPU AMD EPYC host, 2026-11-29; typed 1 MiB ones 86
// against 76), with five times the voluntary context switches.
func RunBound(b *testing.B) {
	b.Helper()
	if runtime.NumCPU() < 2 {
		b.Skip("binding two processes needs two CPUs")
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	child := exec.Command(exe, "-test.run=^$", "-test.bench="+exactPattern(b.Name()),
		"-test.benchtime="+strconv.Itoa(b.N)+"x", "-test.benchmem")
	child.Env = append(os.Environ(), boundVar+"=1", "GOMAXPROCS=1")
	child.Stdout, child.Stderr = &out, &out
	if err := launch.StartOnCPU(0, child.Start); err != nil {
		b.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		b.Fatalf("the bound run of %s: %v\n%s", b.Name(), err, out.Bytes())
	}
	metrics, err := benchMetrics(out.String(), b.Name())
	if err != nil {
		b.Fatalf("the bound run of %s: %v\n%s", b.Name(), err, out.Bytes())
	}
	b.ReportAllocs() // shows the child's B/op and allocs/op, which the loop below reports
	for _, m := range metrics {
		b.ReportMetric(m.value, m.unit)
	}
}

// exactPattern is the -test.bench pattern that selects the benchmark
// named name and nothing else: each of its /-separated elements anchored
// and quoted.
func exactPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// A metric is one figure of a benchmark's result line.
type metric struct {
	value float64
	unit  string
}

// benchMetrics returns the figures of benchmark name's result line in
// out, the output of a test binary run at GOMAXPROCS=1 (whose lines carry
// no -procs suffix): every value and unit after the iteration count.
func benchMetrics(out, name string) ([]metric, error) {
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != name || len(f)%2 != 0 {
			continue
		}
		var ms []metric
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("result line %q: %w", strings.TrimSpace(line), err)
			}
			ms = append(ms, metric{v, f[i+1]})
		}
		return ms, nil
	}
	return nil, fmt.Errorf("no result line for %s", name)
}
