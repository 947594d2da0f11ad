package testutil

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExactPattern(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"BenchmarkX", "^BenchmarkX$"},
		{"BenchmarkX/shm/bound/typed/64KiB", "^BenchmarkX$/^shm$/^bound$/^typed$/^64KiB$"},
		{"BenchmarkX/np=2/a+b", `^BenchmarkX$/^np=2$/^a\+b$`},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, exactPattern(tc.name)) })
	}
}

func TestBenchMetrics(t *testing.T) {
	const name = "BenchmarkX/shm/bound/typed/64KiB"
	for _, tc := range []struct {
		desc, out string
		want      []metric
		err       string
	}{
		{"figures", "goos: linux\n" + name + " \t    2000\t     12144 ns/op\t5396.55 MB/s\t  89 B/op\t  4 allocs/op\nPASS\n",
			[]metric{{12144, "ns/op"}, {5396.55, "MB/s"}, {89, "B/op"}, {4, "allocs/op"}}, ""},
		{"custom units", name + "\t5000\t12770 ns/op\t11677 p50-ns/op\n",
			[]metric{{12770, "ns/op"}, {11677, "p50-ns/op"}}, ""},
		{"another benchmark's line", name + "-2\t5000\t12770 ns/op\n" + name + "/more\t1\t3 ns/op\n", nil, "no result line"},
		{"a log line that names it", name + " started\n", nil, "no result line"},
		{"a figure that is not a number", name + "\t1\tfast ns/op\n", nil, "result line"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := benchMetrics(tc.out, name)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// BenchmarkBoundProbe reports where it runs, for TestRunBound: its
// process, that process's GOMAXPROCS and the CPUs it had when it started
// (runtime.NumCPU reads its affinity then).
func BenchmarkBoundProbe(b *testing.B) {
	if !InBoundRun() {
		RunBound(b)
		return
	}
	for range b.N {
	}
	b.ReportMetric(float64(os.Getpid()), "pid")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
	b.ReportMetric(float64(runtime.NumCPU()), "cpus")
}

// TestRunBound runs BenchmarkBoundProbe and sees it report a process of
// its own that started on one CPU at GOMAXPROCS=1, as a launcher that
// binds ranks starts one: a benchmark that binds its own process and
// sets GOMAXPROCS as it runs does not run as such a rank does.
func TestRunBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if runtime.GOOS != "linux" || runtime.NumCPU() < 2 {
		t.Skip("binding a process to a CPU needs Linux and two CPUs")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	outer := exec.Command(exe, "-test.run=^$", "-test.bench=^BenchmarkBoundProbe$", "-test.benchtime=1x")
	outer.Env = append(os.Environ(), "GOMAXPROCS=2")
	out, err := outer.CombinedOutput()
	require.NoError(t, err, "%s", out)
	metrics, err := benchMetrics(string(out), "BenchmarkBoundProbe-2")
	require.NoError(t, err, "%s", out)
	got := map[string]float64{}
	for _, m := range metrics {
		got[m.unit] = m.value
	}
	assert.NotEqual(t, float64(outer.Process.Pid), got["pid"], "the benchmark ran in the process that runs the benchmarks")
	assert.Equal(t, 1.0, got["procs"], "GOMAXPROCS")
	assert.Equal(t, 1.0, got["cpus"], "CPUs when the process started")
}

func TestSetProcs(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	undo := SetProcs(1)
	assert.Equal(t, 1, runtime.GOMAXPROCS(0))
	undo()
	assert.Equal(t, was, runtime.GOMAXPROCS(0))
}

func TestSettle(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		desc    string
		d       time.Duration
		failAt  int // the call of trips that fails, from 1; 0 for none
		batches []int
		err     error
	}{
		{"no time to settle makes one round trip", 0, 0, []int{1}, nil},
		{"batches double up to their bound", time.Hour, 9, []int{1, 2, 4, 8, 16, 32, 64, 64, 64}, boom},
		{"a failing first batch ends it", time.Hour, 1, []int{1}, boom},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var batches []int
			err := Settle(tc.d, func(n int) error {
				batches = append(batches, n)
				if len(batches) == tc.failAt {
					return boom
				}
				return nil
			})
			assert.Equal(t, tc.batches, batches)
			assert.ErrorIs(t, err, tc.err)
		})
	}
}
