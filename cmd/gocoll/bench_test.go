package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/bench"
)

func TestBenchUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"help", "bench"}, 0, "usage: gocoll bench"},
		{[]string{"bench", "-h"}, 0, "2(n-1)/n"},
		{[]string{"bench", "-n", "0"}, 2, "-n 0: want at least 1 rank"},
		{[]string{"bench", "--transport", "pigeon"}, 2, `--transport: unknown transport "pigeon"`},
		{[]string{"bench", "--sizes", "64:8"}, 2, `--sizes: size list "64:8": range "64:8" runs backwards`},
		{[]string{"bench", "--sizes", "8Q"}, 2, `size "8Q"`},
		{[]string{"bench", "--iters", "0"}, 2, `--iters "0": want auto or a positive number of calls`},
		{[]string{"bench", "--iters", "many"}, 2, `--iters "many"`},
		{[]string{"bench", "--scale", "0"}, 2, "--scale 0: want a positive factor"},
		{[]string{"bench", "--codec", "none,lz4"}, 2, `unknown codec "lz4" (want one of [none bf16 fp16 zstd s2])`},
		{[]string{"bench", "--codec", "BF16"}, 2, `unknown codec "BF16"`},
		{[]string{"bench", "--codec", "bf16", "--objects"}, 2, "the object collectives take no codec and are measured uncompressed, and the codecs (bf16) leave out none"},
		{[]string{"bench", "--collectives", "allreduce,allsum"}, 2, `unknown collective "allsum"`},
		{[]string{"bench", "--algos", "bruck", "--collectives", "allreduce"}, 2, "algorithm bruck applies to none of allreduce"},
		{[]string{"bench", "--objects", "--collectives", "gather"}, 2, "the object sweep measures allreduce, bcast and allgather"},
		{[]string{"bench", "-n", "2", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"bench", "--frobnicate"}, 2, "flag provided but not defined: -frobnicate"},
		{[]string{"bench", "frobnicate"}, 2, "gocoll bench frobnicate: a sweep takes only flags"},
		{[]string{"bench", "--transport", "mem", "--sizes", "8", "--csv", "/nonexistent/dir/out.csv"}, 2, "--csv: open /nonexistent/dir/out.csv"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch(tt.args, &stdout, &stderr)
			require.Equal(t, tt.code, code, "stderr: %s", stderr.String())
			require.Contains(t, stdout.String()+stderr.String(), tt.want)
		})
	}
}

// TestBenchPointsToBenchtool: the result-file tools left gocoll for
// benchtool, and gocoll bench says where they went.
func TestBenchPointsToBenchtool(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, dispatch([]string{"bench", "plot", "-o", "x.png", "a.csv"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "go run ./benchtool plot")
}

// checkOutputs reads the CSV and JSON files of a sweep and checks that
// they hold the points wanted, as collective/bytes, each with impl, the
// algorithm that ran and its link: the transport asked for, or with auto
// shared memory, as a sweep's ranks on one machine share it.
func checkOutputs(t *testing.T, csvPath, jsonPath, impl, transport string, np int, want []string) {
	t.Helper()
	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	rows, err := bench.ReadCSV(f)
	require.NoError(t, err)
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s/%d", r.Collective, r.Bytes))
		require.Equal(t, impl, r.Impl)
		require.Equal(t, transport, r.Transport)
		require.Equal(t, np, r.NP)
		require.Positive(t, r.AvgUS)
		require.NotContains(t, []string{"", "auto"}, r.Algo, "%+v: the algorithm that ran", r)
		if transport == "auto" {
			require.Equal(t, "shm", r.Over(), "%+v", r)
		} else {
			require.Equal(t, transport, r.Link, "%+v", r)
		}
	}
	require.Equal(t, want, got)

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Results, len(want))
	for i, r := range rep.Results {
		require.Equal(t, rows[i].Algo, r.Algo)
		require.Equal(t, rows[i].Link, r.Link)
		require.Equal(t, rows[i].Auto, r.Auto)
	}
	require.NotEmpty(t, rep.Machine.GoVersion)
	require.Positive(t, rep.Machine.Cores)
	require.NotEmpty(t, rep.Command)
	require.False(t, rep.Date.IsZero())
}

// TestBenchMem runs a sweep in this process over in-memory links.
func TestBenchMem(t *testing.T) {
	dir := t.TempDir()
	csvPath, jsonPath := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out.json")
	profile := filepath.Join(dir, "cpu.prof")
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"bench", "-n", "3", "--transport", "mem", "--collectives", "allreduce,gather", "--sizes", "8,12,48",
		"--iters", "3", "--objects", "--csv", csvPath, "--json", jsonPath, "--cpuprofile", profile}, &stdout, &stderr)
	require.Zero(t, code, stderr.String())
	requireProfile(t, profile)
	out := stdout.String()
	require.Contains(t, out, "3 ranks over mem")
	require.Regexp(t, `(?m)^collective\s+size\s+algo\s+link\s+avg µs\s+min µs\s+p50 µs\s+p99 µs\s+max µs\s+cpu µs\s+algbw GB/s\s+busbw GB/s$`, out)
	require.Regexp(t, `(?m)^allreduce\s+8 B\s+[a-z_]+ \(auto\)\s+mem\s+[0-9.]+`, out, "the selector's choice, named")
	require.Regexp(t, `(?m)^allreduce_object\s+48 B\s+raw\s+mem\s+[0-9.]+`, out)
	checkOutputs(t, csvPath, jsonPath, "gocoll", "mem", 3, []string{"allreduce/8", "allreduce/12", "allreduce/48",
		"allreduce_object/8", "allreduce_object/12", "allreduce_object/48", "gather/12", "gather/48"})
}

// TestBenchMemCodecs sweeps codecs over in-memory links: each point is
// measured once per codec, and the table and the CSV name the codec.
func TestBenchMemCodecs(t *testing.T) {
	csvPath := filepath.Join(t.TempDir(), "out.csv")
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"bench", "-n", "2", "--transport", "mem", "--collectives", "allreduce,allgather", "--sizes", "8,64",
		"--iters", "2", "--codec", "none,bf16,zstd", "--csv", csvPath}, &stdout, &stderr)
	require.Zero(t, code, stderr.String())
	require.Regexp(t, `(?m)^collective\s+size\s+algo\s+link\s+codec\s+avg µs`, stdout.String())
	require.Regexp(t, `(?m)^allgather\s+64 B\s+[a-z_]+ \(auto\)\s+mem\s+zstd\s+[0-9.]+`, stdout.String())

	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	rows, err := bench.ReadCSV(f)
	require.NoError(t, err)
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s/%s/%d", r.Collective, r.Codec, r.Bytes))
	}
	require.Equal(t, []string{
		"allreduce/none/8", "allreduce/none/64", "allreduce/bf16/8", "allreduce/bf16/64", "allreduce/zstd/8", "allreduce/zstd/64",
		"allgather/none/8", "allgather/none/64", "allgather/bf16/8", "allgather/bf16/64", "allgather/zstd/8", "allgather/zstd/64",
	}, got)
}

// TestBenchEndToEnd builds gocoll and runs a sweep of two processes over
// tcp, as a user would.
func TestBenchEndToEnd(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build gocoll with")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "gocoll")
	build := exec.CommandContext(ctx, goTool, "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	csvPath, jsonPath := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out.json")
	profile := filepath.Join(dir, "cpu.prof")
	cmd := exec.CommandContext(ctx, bin, "bench", "-n", "2", "--transport", "tcp", "--collectives", "allreduce,bcast",
		"--sizes", "8,1K,32K", "--iters", "5", "--csv", csvPath, "--json", jsonPath, "--progress", "--cpuprofile", profile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	require.Contains(t, stdout.String(), "2 ranks over tcp")
	require.Regexp(t, `(?m)^bcast\s+32 KiB\s+[a-z_]+ \(auto\)\s+tcp\s+[0-9.]+`, stdout.String())
	require.NotContains(t, stdout.String(), benchProgressMarker, "progress lines are drawn, not printed")
	require.Contains(t, stderr.String(), "] 6/6 points")
	checkOutputs(t, csvPath, jsonPath, "gocoll", "tcp", 2, []string{"allreduce/8", "allreduce/1024", "allreduce/32768",
		"bcast/8", "bcast/1024", "bcast/32768"})
	requireProfile(t, profile+".0")
	requireProfile(t, profile+".1")

	// A default sweep, but for its sizes and calls: transport auto, the
	// selector's choices, recorded with what carried them.
	cmd = exec.CommandContext(ctx, bin, "bench", "--sizes", "8,64K", "--iters", "3", "--csv", csvPath, "--json", jsonPath)
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	require.Contains(t, stdout.String(), "2 ranks over auto")
	require.Regexp(t, `(?m)^gather\s+64 KiB\s+[a-z_]+ \(auto\)\s+(segment|shm)\s+[0-9.]+`, stdout.String())
	checkOutputs(t, csvPath, jsonPath, "gocoll", "auto", 2, []string{"allreduce/8", "allreduce/65536", "bcast/8", "bcast/65536", "gather/8", "gather/65536"})

	// The same on registered buffers: the ranks get --registered, and
	// their rows say it.
	cmd = exec.CommandContext(ctx, bin, "bench", "--registered", "--sizes", "8,512K", "--iters", "3", "--csv", csvPath, "--json", jsonPath)
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	checkOutputs(t, csvPath, jsonPath, "gocoll-registered", "auto", 2, []string{"allreduce/8", "allreduce/524288", "bcast/8", "bcast/524288", "gather/8", "gather/524288"})
}

// TestBenchMemRegistered: --registered over in-memory links, where there
// is no segment to go direct through, is no error: the sweep measures its
// registered buffers through the links, and its rows say
// gocoll-registered over mem. (internal/bench's TestRunRegistered checks
// that a registered sweep's calls go direct where there is a segment.)
func TestBenchMemRegistered(t *testing.T) {
	dir := t.TempDir()
	csvPath, jsonPath := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out.json")
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"bench", "-n", "2", "--transport", "mem", "--registered", "--collectives", "allreduce,gather", "--sizes", "8,64K",
		"--iters", "2", "--csv", csvPath, "--json", jsonPath}, &stdout, &stderr)
	require.Zero(t, code, stderr.String())
	checkOutputs(t, csvPath, jsonPath, "gocoll-registered", "mem", 2, []string{"allreduce/8", "allreduce/65536", "gather/8", "gather/65536"})
}

// requireProfile checks that path holds a CPU profile: pprof writes
// gzip-compressed protocol buffers.
func requireProfile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 2, "%s is empty", path)
	require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "%s is not gzip", path)
}

func TestRankOutput(t *testing.T) {
	var out, bar bytes.Buffer
	o := &rankOutput{w: &out, bar: bench.NewProgressBar(&bar)}
	for _, s := range []string{"[1] hello\n[0] gocoll-bench-progress 2 ", "8\n[0] partial", " line\n"} {
		n, err := o.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	require.Equal(t, "[1] hello\n[0] partial line\n", out.String())
	require.Contains(t, bar.String(), "] 2/8 points")

	out.Reset()
	plain := &rankOutput{w: &out} // no bar: progress lines pass through
	_, err := plain.Write([]byte("[0] gocoll-bench-progress 1 2\n"))
	require.NoError(t, err)
	require.Equal(t, "[0] gocoll-bench-progress 1 2\n", out.String())
}

func TestRootCause(t *testing.T) {
	wrong := errors.New("wrong result")
	aborted := fmt.Errorf("allreduce: %w", comm.ErrAborted)
	tests := []struct {
		errs []error
		want string
	}{
		{[]error{nil, nil}, ""},
		{[]error{aborted, wrong, aborted}, "rank 1: wrong result"},
		{[]error{nil, aborted, aborted}, "rank 1: allreduce: job aborted"},
	}
	for _, tt := range tests {
		err := rootCause(tt.errs)
		if tt.want == "" {
			require.NoError(t, err)
			continue
		}
		require.EqualError(t, err, tt.want)
	}
}
