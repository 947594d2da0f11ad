package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const compareOurs = `impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps,algo,codec,chunk,min_us,max_us
gocoll,shm,2,allreduce,8,1.530,0.0052,0.0052,shm,none,0,1.100,9.800
gocoll,shm,2,allreduce,1048576,250.000,4.1943,4.1943,shm,none,0,240.000,300.000
gocoll,tcp,2,allreduce,8,30.000,0.0003,0.0003,recursive_doubling,none,0,25.000,90.000
`

// compareRef holds lines of the anchors' openmpi.csv and mpi4py.csv.
const compareRef = `impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps
openmpi,shm,2,allreduce,8,0.765,0.0105,0.0105
openmpi,shm,2,allreduce,1048576,292.911,3.5798,3.5798
mpi4py-buffer,shm,2,allreduce,8,2.622,0.0031,0.0031
`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

func TestBenchCompare(t *testing.T) {
	dir := writeFiles(t, map[string]string{"ours.csv": compareOurs, "ref.csv": compareRef, "bad.csv": "impl,np\n"})
	ours, ref := filepath.Join(dir, "ours.csv"), filepath.Join(dir, "ref.csv")
	tests := []toolCase{
		{"two files", []string{ours, ref}, 0, []string{
			"above 1 ours (gocoll, normally) is faster",
			"BEHIND",
			"gocoll/shm vs openmpi: 2 points compared, 1 behind (1 by more than 1.5x)",
			"gocoll/shm vs mpi4py-buffer: 1 points compared, 0 behind",
			"unmatched: 1 points of ours and 0 of the references",
		}, ""},
		{"flags after the files", []string{ours, ref, "-v", "-margin", "3"}, 0, []string{
			"1 behind (0 by more than 3x)",
			"gocoll/recursive_doubling tcp np=2 allreduce 8 B",
		}, ""},
		{"one file", []string{ours}, 2, nil, "want our file and at least one reference file"},
		{"bad margin", []string{"-margin", "0.5", ours, ref}, 2, nil, "-margin 0.5: want a factor of at least 1"},
		{"missing file", []string{ours, filepath.Join(dir, "none.csv")}, 1, nil, "none.csv: no such file"},
		{"malformed file", []string{ours, filepath.Join(dir, "bad.csv")}, 1, nil, "bad.csv: header"},
	}
	runToolCases(t, "compare", tests)
}

func TestBenchCompareHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Zero(t, compareMain([]string{"-h"}, &stdout, &stderr))
	require.Equal(t, compareUsage, stdout.String())
	require.Equal(t, "compare", tools["compare"].Name)
}

// TestDefaultSweep runs gocoll bench as a user would, with its defaults
// but for the sizes and calls, and the tools on its file: compare meets
// Open MPI's points (testdata/openmpi.csv) by the link that the
// selector's choices used, and model fits what ran, or says that nothing
// did that it has a formula for, as through a shared segment.
func TestDefaultSweep(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build gocoll with")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "gocoll")
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, "github.com/gocoll/gocoll/cmd/gocoll").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	sweep := filepath.Join(dir, "sweep.csv")
	out, err = exec.CommandContext(ctx, bin, "bench", "--sizes", "8,64K", "--iters", "3", "--csv", sweep).CombinedOutput()
	require.NoError(t, err, "gocoll bench: %s", out)

	var stdout, stderr bytes.Buffer
	require.Zero(t, compareMain([]string{sweep, filepath.Join("testdata", "openmpi.csv")}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "gocoll/auto vs openmpi: 6 points compared", "every point meets Open MPI's over its link")

	stdout.Reset()
	stderr.Reset()
	require.Zero(t, modelMain([]string{sweep}, &stdout, &stderr), stderr.String())
	require.Regexp(t, `(?m)^gocoll (shm|tcp): `, stdout.String(), "the points go by their link")
	require.NotContains(t, stdout.String(), `algorithm "auto"`)
}
