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

// modelCSV writes points timed exactly by the model with α = 5 µs, β for
// 4 GB/s and γ for 10 GB/s, plus shared-memory and auto points that it
// cannot fit, and returns the file's path.
func modelCSV(t *testing.T) string {
	t.Helper()
	params := model.Params{Alpha: 5, Beta: 2.5e-4, Gamma: 1e-4}
	var results []bench.Result
	for _, algo := range []string{"recursive_doubling", "ring", "rabenseifner", "auto", "shm"} {
		for _, np := range []int{2, 4} {
			for n := int64(8); n <= 16<<20; n *= 8 {
				r := bench.Result{Impl: "gocoll", Transport: "tcp", NP: np, Collective: "allreduce", Algo: algo, Bytes: n, Codec: "none"}
				us := 3.0
				if terms, err := model.TermsOf(&r); err == nil {
					us = terms.Time(params)
				}
				r.SetTime(us)
				results = append(results, r)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "result.csv")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, bench.WriteCSV(f, results))
	require.NoError(t, f.Close())
	return path
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

// TestBenchModelNothingToFit runs the model on the anchors' kind of file,
// which records no algorithm.
func TestBenchModelNothingToFit(t *testing.T) {
	dir := writeFiles(t, map[string]string{"ref.csv": compareRef})
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, modelMain([]string{filepath.Join(dir, "ref.csv")}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "openmpi shm: skipped 2 points: no cost formula")
	require.Contains(t, stderr.String(), "openmpi shm: 0 points: need at least 3")
	require.Contains(t, stderr.String(), "no group of points could be fitted")
}

func TestBenchModelHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Zero(t, modelMain([]string{"--help"}, &stdout, &stderr))
	require.Equal(t, modelUsage, stdout.String())
	require.Equal(t, "model", tools["model"].Name)
}
