package timeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMergeThreeRanks: the merged trace has one named track per rank, in
// rank order, every event of every file, and each rank's events moved by
// the difference of its clock's start from the earliest.
func TestMergeThreeRanks(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	starts := []time.Duration{2 * time.Millisecond, 0, 5*time.Millisecond + 300}
	var files []string
	for _, rank := range []int{2, 0, 1} { // not in rank order
		files = append(files, writeRank(t, dir, rank, 3, 3, func() *Recorder {
			r, err := openAt(filepath.Join(dir, fmt.Sprintf("t.rank%d.json", rank)), rank, 3, 16, base.Add(starts[rank]))
			require.NoError(t, err)
			go r.writer()
			return r
		}))
	}
	out := filepath.Join(dir, "t.json")
	f, err := os.Create(out)
	require.NoError(t, err)
	sum, err := MergeFiles(f, files)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	tr := readTrace(t, out)
	require.Equal(t, Summary{Ranks: []int{0, 1, 2}, Size: 3, Events: 3 * (3 + 2*3)}, sum)
	require.Len(t, tr.TraceEvents, sum.Events, "every event of every file")
	require.Equal(t, "gocoll timeline merged", tr.OtherData["format"])
	require.Equal(t, fmt.Sprint(base.UnixNano()), tr.OtherData["start_unix_ns"], "the earliest start")
	procs, threads := tr.names()
	require.Equal(t, map[int]string{1: "rank 0", 2: "rank 1", 3: "rank 2"}, procs)
	require.Equal(t, map[[2]int]string{{1, 1}: "calls", {2, 1}: "calls", {3, 1}: "calls"}, threads)

	pid := 0
	calls := map[int][]traceEvent{}
	for _, ev := range tr.TraceEvents {
		require.GreaterOrEqual(t, *ev.Pid, pid, "tracks in rank order")
		pid = *ev.Pid
		if ev.Name == "Allreduce" {
			calls[pid] = append(calls[pid], ev)
		}
	}
	for rank, start := range starts {
		require.Len(t, calls[rank+1], 3)
		first := calls[rank+1][0]
		require.InDelta(t, float64(start)/1e3, *first.Ts, 1e-6, "rank %d's first call on the merged clock", rank)
	}
	for _, step := range tr.phase("X") {
		if step.Name != "step 0" {
			continue
		}
		nested := false
		for _, call := range calls[*step.Pid] {
			nested = nested || contains(call, step)
		}
		require.True(t, nested, "step %+v in its call", step)
	}
}

// TestMergeRejects: a file that is no rank trace, two files of one rank
// and files of different jobs are refused with the file's name, before
// anything is written.
func TestMergeRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	good := rankFile(t, dir, 0, 2, 1)
	sub := t.TempDir()
	rank1 := rankFile(t, sub, 1, 2, 1)
	otherJob := rankFile(t, t.TempDir(), 1, 3, 1)
	garbage := write("garbage.json", "this is not a trace\n")
	tests := []struct {
		name  string
		files []string
		want  []string
	}{
		{"garbage", []string{good, garbage}, []string{garbage, "is not a gocoll rank trace", "invalid character"}},
		{"empty", []string{write("empty.json", "")}, []string{"empty.json is not a gocoll rank trace", "EOF"}},
		{"a JSON array", []string{write("array.json", `[{"ph":"X"}]`)}, []string{"array.json", "not a JSON object"}},
		{"another program's trace", []string{good, write("chrome.json", `{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1,"pid":1,"tid":1}]}`)}, []string{"chrome.json", "no otherData"}},
		{"another format", []string{write("other.json", `{"otherData":{"format":"pytorch"},"traceEvents":[]}`)}, []string{"other.json", `otherData.format is "pytorch"`}},
		{"a later version", []string{write("v2.json", `{"otherData":{"format":"gocoll timeline","version":2},"traceEvents":[]}`)}, []string{"v2.json", "version 2"}},
		{"no rank", []string{write("norank.json", `{"otherData":{"format":"gocoll timeline","version":1,"size":2,"start_unix_ns":"5"},"traceEvents":[]}`)}, []string{"norank.json", "no valid rank"}},
		{"missing", []string{filepath.Join(dir, "missing.json")}, []string{"missing.json", "no such file"}},
		{"one rank twice", []string{good, rank1, good}, []string{good + " and " + good + " are both rank 0"}},
		{"two jobs", []string{good, otherJob}, []string{otherJob, "is of a job of 3 ranks", good + " of 2"}},
		{"nothing", nil, []string{"no files to merge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Merge(&out, tt.files)
			require.Error(t, err)
			for _, want := range tt.want {
				require.ErrorContains(t, err, want)
			}
			require.Zero(t, out.Len(), "nothing written")
		})
	}

	t.Run("a bad event", func(t *testing.T) {
		data, err := os.ReadFile(good)
		require.NoError(t, err)
		bad := write("bad-event.json", strings.Replace(string(data), `"ph":"X","ts":`, `"ph":"X","tz":`, 1))
		err = Merge(&bytes.Buffer{}, []string{bad})
		require.ErrorContains(t, err, bad+" is not a gocoll rank trace: event 4: a \"X\" event without ts")
	})
}

// TestMergeCutShort: the file of a rank that died before Close is merged
// up to its last whole event, and the rank's track says it was cut short.
func TestMergeCutShort(t *testing.T) {
	dir := t.TempDir()
	rank0 := rankFile(t, dir, 0, 2, 2)
	full, err := os.ReadFile(rankFile(t, t.TempDir(), 1, 2, 4))
	require.NoError(t, err)
	last := bytes.LastIndex(full, []byte(",\n{"))

	// What a rank leaves when it dies before anything reaches the writer.
	opened := filepath.Join(t.TempDir(), "t.rank1.json")
	r, err := Open(opened, 1, 2)
	require.NoError(t, err)
	r.Add(&Span{Name: "lost", Peer: -1, Step: -1})
	headerOnly, err := os.ReadFile(opened)
	require.NoError(t, err)
	require.NoError(t, r.Close())

	tests := []struct {
		name  string
		data  []byte
		spans int // whole complete events left
	}{
		{"no end", bytes.TrimSuffix(full, []byte("\n]}\n")), 8},
		{"in the last event", full[:last+20], 7},
		{"after a comma", full[:last+1], 7},
		{"after a line", full[:last+2], 7},
		{"the header alone", headerOnly, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cut := filepath.Join(t.TempDir(), "t.rank1.json")
			require.NoError(t, os.WriteFile(cut, tt.data, 0o600))
			out := filepath.Join(t.TempDir(), "t.json")
			f, err := os.Create(out)
			require.NoError(t, err)
			sum, err := MergeFiles(f, []string{cut, rank0})
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.Equal(t, []int{1}, sum.CutShort)

			tr := readTrace(t, out)
			spans, marks := 0, 0
			for _, ev := range tr.TraceEvents {
				switch {
				case *ev.Pid == 2 && ev.Ph == "X":
					spans++
				case ev.Name == "timeline cut short":
					require.Equal(t, 2, *ev.Pid)
					require.Equal(t, "p", ev.S)
					marks++
				}
			}
			require.Equal(t, tt.spans, spans)
			require.Equal(t, 1, marks)
			procs, _ := tr.names()
			require.Equal(t, "rank 1", procs[2], "the track keeps its name")
		})
	}
}
