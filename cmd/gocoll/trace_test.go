package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/timeline"
)

// rank1Var says what rank 1 of a "trace" job does with its timeline.
const rank1Var = "GOCOLL_CMD_TEST_RANK1"

// traceRank is a rank of a "trace" job: it writes one span to the file
// of its rank for the trace GOCOLL_TRACE names, as the library's ranks do,
// and exits 0, except rank 1, which does as rank1Var says: "fails" (it
// closes its file and exits 3), "dies" (it exits 3 before it closes its
// file), "none" (it writes no file), "garbage" (its file is not a
// timeline), "garbage-fails" (that, and it exits 5).
func traceRank() int {
	rank, _ := strconv.Atoi(os.Getenv("GOCOLL_RANK"))
	size, _ := strconv.Atoi(os.Getenv("GOCOLL_SIZE"))
	path := timeline.RankPath(os.Getenv("GOCOLL_TRACE"), rank)
	how := "ok"
	if rank == 1 {
		how = os.Getenv(rank1Var)
	}
	switch how {
	case "none":
		return 0
	case "garbage", "garbage-fails":
		os.WriteFile(path, []byte("garbage\n"), 0o600)
		if how == "garbage-fails" {
			return 5
		}
		return 0
	}
	r, err := timeline.Open(path, rank, size)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	start := r.Now()
	r.Add(&timeline.Span{Name: "Barrier", Cat: "collective", Start: start, End: r.Now(), Comm: 1, Peer: -1, Step: -1})
	if how == "dies" {
		return 3
	}
	if err := r.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if how == "fails" {
		return 3
	}
	return 0
}

// mergedTrace is what a test reads of a merged trace: the name of each
// rank's track and its complete events, by pid.
type mergedTrace struct {
	procs map[int]string
	spans map[int]int
}

func readMerged(t *testing.T, path string) mergedTrace {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var tr struct {
		OtherData   map[string]any `json:"otherData"`
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Pid  int            `json:"pid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(data, &tr), "%s", data)
	require.Equal(t, "gocoll timeline merged", tr.OtherData["format"])
	m := mergedTrace{procs: map[int]string{}, spans: map[int]int{}}
	for _, ev := range tr.TraceEvents {
		switch {
		case ev.Ph == "M" && ev.Name == "process_name":
			m.procs[ev.Pid], _ = ev.Args["name"].(string)
		case ev.Ph == "X":
			m.spans[ev.Pid]++
		}
	}
	return m
}

// TestTraceMerge: gocoll trace merge merges the files of Recorders into
// one trace with a track per rank.
func TestTraceMerge(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for rank := range 3 {
		path := timeline.RankPath(filepath.Join(dir, "trace.json"), rank)
		r, err := timeline.Open(path, rank, 3)
		require.NoError(t, err)
		for i := range rank + 1 {
			r.Add(&timeline.Span{Name: "Allreduce", Start: int64(i) * 100, End: int64(i)*100 + 50, Seq: uint64(i), Peer: -1, Step: -1})
		}
		require.NoError(t, r.Close())
		files = append(files, path)
	}
	out := filepath.Join(dir, "merged.json")
	code, stdout, stderr := runGocoll(t, "", append([]string{"trace", "merge", "-o", out}, files...)...)
	require.Zero(t, code, stderr)
	require.Equal(t, "timeline of ranks 0-2 written to "+out+"\n", stdout)
	m := readMerged(t, out)
	require.Equal(t, map[int]string{1: "rank 0", 2: "rank 1", 3: "rank 2"}, m.procs)
	require.Equal(t, map[int]int{1: 1, 2: 2, 3: 3}, m.spans)
	for _, f := range files {
		require.FileExists(t, f, "the rank files are the user's")
	}

	garbage := filepath.Join(dir, "garbage.json")
	require.NoError(t, os.WriteFile(garbage, []byte("{]"), 0o600))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no subcommand", []string{"trace"}, 2, "usage: gocoll trace merge"},
		{"unknown subcommand", []string{"trace", "split"}, 2, "gocoll trace split: unknown command"},
		{"help", []string{"help", "trace"}, 0, "usage: gocoll trace merge"},
		{"merge help", []string{"trace", "merge", "--help"}, 0, "usage: gocoll trace merge"},
		{"no files", []string{"trace", "merge", "-o", out}, 2, "gocoll trace merge: no rank files given"},
		{"output among the inputs", []string{"trace", "merge", "-o", files[0], files[0], files[1]}, 2, "-o " + files[0] + " is one of the files to merge"},
		{"bad flag", []string{"trace", "merge", "-x", files[0]}, 2, "flag provided but not defined: -x"},
		{"garbage", []string{"trace", "merge", "-o", out, files[0], garbage}, 1, "gocoll trace merge: timeline: " + garbage + " is not a gocoll rank trace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGocoll(t, "", tt.args...)
			require.Equal(t, tt.code, code, stdout+stderr)
			require.Contains(t, stdout+stderr, tt.want)
		})
	}
	// The failed merge left the earlier trace as it was.
	require.Equal(t, map[int]int{1: 1, 2: 2, 3: 3}, readMerged(t, out).spans)
	left, err := filepath.Glob(filepath.Join(dir, ".merged.json.*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file left")
}

// TestRunTrace: with --trace or GOCOLL_TRACE, gocoll run merges the files
// its ranks wrote into one trace with a track per rank and removes them,
// also when a rank fails or dies before it closes its file; a merge that
// fails leaves the files and fails a job that succeeded, but not the
// exit status of one that failed.
func TestRunTrace(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	tests := []struct {
		name   string
		rank1  string // what rank 1 does (traceRank)
		env    bool   // GOCOLL_TRACE rather than --trace
		args   []string
		code   int
		tracks map[int]string // the merged trace's, by pid; nil: no merged trace
		spans  map[int]int
		line   string // in run's stderr, %[1]s the trace's path
		left   []int  // the rank files left in place
	}{
		{name: "every rank", rank1: "ok", code: 0,
			tracks: map[int]string{1: "rank 0", 2: "rank 1", 3: "rank 2"}, spans: map[int]int{1: 1, 2: 1, 3: 1},
			line: "gocoll run: timeline of ranks 0-2 written to %[1]s\n"},
		{name: "from the environment", rank1: "ok", env: true, code: 0,
			tracks: map[int]string{1: "rank 0", 2: "rank 1", 3: "rank 2"}, spans: map[int]int{1: 1, 2: 1, 3: 1},
			line: "gocoll run: timeline of ranks 0-2 written to %[1]s\n"},
		{name: "a rank fails", rank1: "fails", code: 3,
			tracks: map[int]string{1: "rank 0", 2: "rank 1", 3: "rank 2"}, spans: map[int]int{1: 1, 2: 1, 3: 1},
			line: "gocoll run: timeline of ranks 0-2 written to %[1]s\n"},
		{name: "a rank dies before it closes its file", rank1: "dies", code: 3,
			tracks: map[int]string{1: "rank 0", 2: "rank 1", 3: "rank 2"}, spans: map[int]int{1: 1, 3: 1},
			line: "gocoll run: timeline of ranks 0-2 written to %[1]s (cut short: rank 1)\n"},
		{name: "a rank writes none", rank1: "none", code: 0,
			tracks: map[int]string{1: "rank 0", 3: "rank 2"}, spans: map[int]int{1: 1, 3: 1},
			line: "gocoll run: timeline of ranks 0 and 2 written to %[1]s (no file from rank 1)\n"},
		{name: "a file is not a timeline", rank1: "garbage", code: 1,
			line: "gocoll run: timeline not merged: timeline: %[2]s is not a gocoll rank trace", left: []int{0, 1, 2}},
		{name: "a file is not a timeline in a failed job", rank1: "garbage-fails", code: 5,
			line: "gocoll run: timeline not merged: timeline: %[2]s is not a gocoll rank trace", left: []int{0, 1, 2}},
		{name: "one machine of several", rank1: "ok", code: 0,
			args: []string{"--nnodes", "2", "--node-rank", "1", "--master", "127.0.0.1:1"},
			line: "gocoll run: the timelines of ranks 3-5 are in %[3]s; merge them with the other machines' files: gocoll trace merge -o %[1]s %[3]s\n",
			left: []int{1, 3, 4, 5}}, // rank 1's file is the other machine's
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.json")
			// A file an earlier job left is not taken for this job's.
			require.NoError(t, os.WriteFile(timeline.RankPath(path, 1), []byte("stale"), 0o600))
			t.Setenv(rank1Var, tt.rank1)
			t.Setenv("GOCOLL_SECRET", "trace-test")
			args := append([]string{"run", "-n", "3"}, tt.args...)
			if tt.env {
				t.Setenv("GOCOLL_TRACE", path)
			} else {
				t.Setenv("GOCOLL_TRACE", filepath.Join(dir, "not-this.json"))
				args = append(args, "--trace", path)
			}
			code, _, errOut := runGocoll(t, "trace", append(args, exe)...)
			require.Equal(t, tt.code, code, errOut)
			require.Contains(t, errOut, fmt.Sprintf(tt.line, path, timeline.RankPath(path, 1), filepath.Join(dir, "trace.rank*.json")))
			if tt.tracks != nil {
				m := readMerged(t, path)
				require.Equal(t, tt.tracks, m.procs)
				require.Equal(t, tt.spans, m.spans)
			} else {
				require.NoFileExists(t, path)
			}
			var left []int
			for rank := range 6 {
				if _, err := os.Stat(timeline.RankPath(path, rank)); err == nil {
					left = append(left, rank)
				}
			}
			require.Equal(t, tt.left, left, "rank files left")
			others, err := filepath.Glob(filepath.Join(dir, "not-this*"))
			require.NoError(t, err)
			require.Empty(t, others, "--trace wins over GOCOLL_TRACE")
		})
	}
}
