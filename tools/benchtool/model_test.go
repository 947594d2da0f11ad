package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/bench"
	"github.com/gocoll/gocoll/tools/model"
)

// setModelTime sets r's time to the model's with α = 5 µs, β for 4 GB/s
// and γ for 10 GB/s, or to 3 µs where the model has no formula for r.
func setModelTime(r *bench.Result) {
	params := model.Params{Alpha: 5, Beta: 2.5e-4, Gamma: 1e-4}
	us := 3.0
	if terms, err := model.TermsOf(r); err == nil {
		us = terms.Time(params)
	}
	r.SetTime(us)
}

// writeResults writes results to a CSV file and returns its path.
func writeResults(t *testing.T, results []bench.Result) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "result.csv")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, bench.WriteCSV(f, results))
	require.NoError(t, f.Close())
	return path
}

// modelCSV writes points timed exactly by the model (setModelTime), plus
// shared-memory and auto points that it cannot fit, and returns the
// file's path.
func modelCSV(t *testing.T) string {
	t.Helper()
	var results []bench.Result
	for _, algo := range []string{"recursive_doubling", "ring", "rabenseifner", "auto", "shm"} {
		for _, np := range []int{2, 4} {
			for n := int64(8); n <= 16<<20; n *= 8 {
				r := bench.Result{Impl: "gocoll", Transport: "tcp", NP: np, Collective: "allreduce", Algo: algo, Bytes: n, Codec: "none"}
				setModelTime(&r)
				results = append(results, r)
			}
		}
	}
	return writeResults(t, results)
}

func TestBenchModel(t *testing.T) {
	path := modelCSV(t)
	tests := []toolCase{
		{"default holdout", []string{path}, 0, []string{
			`gocoll tcp: skipped 16 points: no cost formula for allreduce with algorithm "auto"`,
			`skipped 16 points: no cost formula for allreduce with algorithm "shm"`,
			"gocoll tcp: fitted on 36 points, checked on 12 held out",
			"α = 5.000 µs per message",
			"β = 0.00025 µs/byte (4 GB/s)",
			"γ = 0.0001 µs/byte (10 GB/s)",
			"held out (not used to fit): 12 points, median |error| 0.0%",
			"fastest allreduce algorithm by ranks",
			"* marks the fastest",
		}, ""},
		{"largest held out, flags last", []string{path, "-holdout", "largest"}, 0, []string{"checked on 6 held out"}, ""},
		{"no holdout, auto as ring", []string{"-holdout", "0", "-assume", "ring", path}, 0, []string{
			"fitted on 64 points, checked on 0 held out",
			`skipped 16 points: no cost formula for allreduce with algorithm "shm"`,
		}, ""},
		{"bad holdout", []string{"-holdout", "1", path}, 2, nil, `-holdout "1": want a number k ≥ 2`},
		{"no file", nil, 2, nil, "no result file given"},
		{"missing file", []string{filepath.Join(t.TempDir(), "none.csv")}, 1, nil, "no such file"},
	}
	runToolCases(t, "model", tests)
}

// TestBenchModelAutoSweep fits the selector's choices by the algorithm
// each point ran, grouped by the link: those over tcp links are fitted,
// those through the shared segment skipped.
func TestBenchModelAutoSweep(t *testing.T) {
	var results []bench.Result
	for _, np := range []int{2, 4} {
		for n := int64(8); n <= 16<<20; n *= 8 {
			algo := "recursive_doubling"
			if n >= 64<<10 {
				algo = "ring"
			}
			r := bench.Result{Impl: "gocoll", Transport: "auto", NP: np, Collective: "allreduce", Algo: algo, Link: "tcp", Auto: true, Bytes: n, Codec: "none"}
			setModelTime(&r)
			results = append(results, r)
			r = bench.Result{Impl: "gocoll", Transport: "auto", NP: np, Collective: "bcast", Algo: "shm", Link: "segment", Auto: true, Bytes: n, Codec: "none"}
			setModelTime(&r)
			results = append(results, r)
		}
	}
	runToolCases(t, "model", []toolCase{{"auto sweep", []string{"-holdout", "0", writeResults(t, results)}, 0, []string{
		`gocoll shm: skipped 16 points: no cost formula for bcast with algorithm "shm"`,
		"gocoll tcp: fitted on 16 points, checked on 0 held out",
		"α = 5.000 µs per message",
	}, ""}})
}

// TestBenchModelNothingToFit runs the model on files it can fit nothing
// of: the anchors' kind, which records no algorithm, fails and names
// -assume; a sweep whose every point went through shared memory, which
// the model has no formula for, has nothing to fit, and says so.
func TestBenchModelNothingToFit(t *testing.T) {
	const shm = `impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps,algo,codec,chunk,link,auto
gocoll,auto,2,allreduce,8,0.500,0.0160,0.0160,shm,none,0,segment,true
gocoll,auto,2,allreduce,65536,15.000,4.3691,4.3691,shm,none,0,segment,true
gocoll,auto,2,allreduce_object,8,50.000,0.0002,0.0002,gob,none,0,segment+shm,false
`
	dir := writeFiles(t, map[string]string{"ref.csv": compareRef, "shm.csv": shm})
	tests := []toolCase{
		{"no algorithm recorded", []string{filepath.Join(dir, "ref.csv")}, 1,
			[]string{"openmpi shm: skipped 2 points: no cost formula"},
			"no group of points could be fitted; 3 points record no algorithm, which -assume can name"},
		{"shared memory throughout", []string{filepath.Join(dir, "shm.csv")}, 0, []string{
			`gocoll shm: skipped 2 points: no cost formula for allreduce with algorithm "shm"`,
			`gocoll shm: skipped 1 points: no cost formula for allreduce_object with algorithm "gob"`,
			"nothing to fit: every point ran an algorithm the model has no formula for",
		}, ""},
	}
	runToolCases(t, "model", tests)
}

func TestBenchModelHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Zero(t, modelMain([]string{"--help"}, &stdout, &stderr))
	require.Equal(t, modelUsage, stdout.String())
	require.Equal(t, "model", tools["model"].Name)
}
