package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/bench"
)

const plotCSV = `impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps
openmpi,shm,2,allreduce,4,0.638,0.0063,0.0063
openmpi,shm,2,allreduce,1024,1.737,0.5894,0.5894
openmpi,tcp,4,bcast,8,16.186,0.0005,0.0005
openmpi,tcp,4,bcast,16384,20.548,0.7973,0.7973
`

func TestBenchPlot(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "openmpi.csv")
	require.NoError(t, os.WriteFile(in, []byte(plotCSV), 0o644))
	empty := filepath.Join(dir, "empty.csv")
	require.NoError(t, os.WriteFile(empty, []byte("impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps\n"), 0o644))
	out := func(name string) string { return filepath.Join(dir, name) }

	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
		wantFile   string // written when the code is 0
	}{
		{"flags after the file", []string{in, "-o", out("a.png")}, 0, "", out("a.png")},
		{"flags first, svg", []string{"-o", out("a.svg"), "--title", "t", in, in}, 0, "", out("a.svg")},
		{"filters", []string{in, "--collective", "bcast", "--np", "4", "--transport", "tcp", "--impl", "openmpi", "-o", out("f.png")}, 0, "", out("f.png")},
		{"nothing passes the filters", []string{in, "--np", "8", "-o", out("n.png")}, 1,
			"no results pass the filters; the files have collectives allreduce,bcast; np 2,4; transports shm,tcp; impls openmpi", ""},
		{"no output", []string{in}, 2, "want -o and at least one result file", ""},
		{"no files", []string{"-o", out("x.png")}, 2, "want -o and at least one result file", ""},
		{"bad np", []string{in, "--np", "two", "-o", out("x.png")}, 2, `"two" is not a rank count`, ""},
		{"unknown flag", []string{in, "--bogus"}, 2, "flag provided but not defined: -bogus", ""},
		{"unknown extension", []string{in, "-o", out("x.gif")}, 1, `unsupported image format "gif"`, ""},
		{"missing file", []string{out("none.csv"), "-o", out("x.png")}, 1, "none.csv: no such file", ""},
		{"empty file", []string{empty, "-o", out("x.png")}, 1, "no results to plot", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := plotMain(tc.args, &stdout, &stderr)
			require.Equal(t, tc.wantCode, code, "stderr: %s", stderr.String())
			require.Contains(t, stderr.String(), tc.wantStderr)
			if tc.wantFile != "" {
				info, err := os.Stat(tc.wantFile)
				require.NoError(t, err)
				require.NotZero(t, info.Size())
			}
		})
	}
}

func TestBenchPlotHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Zero(t, plotMain([]string{"-h"}, &stdout, &stderr))
	require.Equal(t, plotUsage, stdout.String())
	require.Equal(t, "plot", tools["plot"].Name)
}

func TestResultFilter(t *testing.T) {
	results := []bench.Result{
		{Impl: "gocoll", Transport: "tcp", NP: 2, Collective: "allreduce"},
		{Impl: "gocoll", Transport: "shm", NP: 4, Collective: "allreduce"},
		{Impl: "openmpi", Transport: "tcp", NP: 4, Collective: "bcast"},
	}
	for _, tc := range []struct {
		name   string
		filter resultFilter
		want   []int // indices into results
	}{
		{"none", resultFilter{}, []int{0, 1, 2}},
		{"collective", resultFilter{collectives: []string{"allreduce"}}, []int{0, 1}},
		{"np", resultFilter{nps: []int{4}}, []int{1, 2}},
		{"transport and impl", resultFilter{transports: []string{"tcp"}, impls: []string{"gocoll", "openmpi"}}, []int{0, 2}},
		{"all of them", resultFilter{collectives: []string{"bcast"}, nps: []int{2}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []bench.Result
			for _, i := range tc.want {
				want = append(want, results[i])
			}
			require.Equal(t, want, tc.filter.apply(results))
		})
	}
}
