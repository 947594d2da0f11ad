package timeline

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecorderWritesATrace: a recorder's file parses as JSON, is in the
// trace-event format, names its process and threads, nests a step and a
// wait in their call, and leaves out the args a span does not have.
func TestRecorderWritesATrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.rank2.json")
	before := time.Now()
	r, err := Open(path, 2, 4)
	require.NoError(t, err)
	spans := []Span{
		{Name: "step 0", Cat: "step", Start: 2_000, End: 4_500, Comm: 42, Seq: 7, Bytes: 1024, Peer: 3, Step: 0, Lane: 0},
		{Name: "wait", Cat: "wait", Start: 4_500, End: 5_000, Comm: 42, Seq: 7, Peer: -1, Step: -1, Lane: 0},
		{Name: "Allreduce", Cat: "collective", Start: 1_234, End: 10_000, Comm: 42, Seq: 7, Bytes: 4096, Peer: -1, Step: -1,
			Algorithm: "ring", Transport: "shm", Lane: 0},
		{Name: "AllreduceAsync", Cat: "collective", Start: 1_500, End: 20_000, Comm: 42, Seq: 8, Bytes: 64, Peer: -1, Step: -1, Lane: 3},
	}
	for i := range spans {
		r.Add(&spans[i])
	}
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "a second Close")

	tr := readTrace(t, path)
	require.Equal(t, "gocoll timeline", tr.OtherData["format"])
	require.EqualValues(t, 2, tr.OtherData["rank"])
	require.EqualValues(t, 4, tr.OtherData["size"])
	startNS, err := strconv.ParseInt(tr.OtherData["start_unix_ns"].(string), 10, 64)
	require.NoError(t, err)
	require.WithinRange(t, time.Unix(0, startNS), before, time.Now())

	procs, threads := tr.names()
	require.Equal(t, map[int]string{3: "rank 2"}, procs)
	require.Equal(t, map[[2]int]string{{3, 1}: "calls", {3, 4}: "async"}, threads)

	byName := map[string]traceEvent{}
	for _, ev := range tr.phase("X") {
		byName[ev.Name] = ev
	}
	require.Len(t, byName, len(spans))
	call, step, wait, async := byName["Allreduce"], byName["step 0"], byName["wait"], byName["AllreduceAsync"]
	require.True(t, contains(call, step), "the step nests in its call")
	require.True(t, contains(call, wait), "the wait nests in its call")
	require.False(t, contains(async, call), "an async call is on a lane of its own")
	require.InDelta(t, 1.234, *call.Ts, 1e-9)
	require.InDelta(t, 8.766, *call.Dur, 1e-9)
	require.Equal(t, map[string]any{"comm": "0x2a", "seq": 7.0, "bytes": 4096.0, "algorithm": "ring", "transport": "shm"}, call.Args)
	require.Equal(t, map[string]any{"comm": "0x2a", "seq": 7.0, "bytes": 1024.0, "peer": 3.0, "step": 0.0}, step.Args)
	require.Equal(t, map[string]any{"comm": "0x2a", "seq": 7.0}, wait.Args, "no bytes, peer or step")
	require.Equal(t, "collective", call.Cat)

	// One event per line, the header's line holding only the header.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Regexp(t, `^\{"displayTimeUnit":"ns","otherData":\{[^\n]*\},"traceEvents":\[\n\{"ph":"M"`, string(data))
	require.Regexp(t, `\}\n\]\}\n$`, string(data))
}

// TestAddDoesNotAllocate: after warm-up (both buffers through the writer,
// its output buffer grown), Add allocates nothing, also while the writer
// encodes and writes a buffer.
func TestAddDoesNotAllocate(t *testing.T) {
	r, err := Open(filepath.Join(t.TempDir(), "t.json"), 0, 1)
	require.NoError(t, err)
	defer r.Close()
	s := Span{Name: "Allreduce", Cat: "collective", Comm: 1, Bytes: 4096, Peer: -1, Step: -1, Algorithm: "ring", Transport: "tcp"}
	add := func() {
		s.Start = r.Now()
		s.End = s.Start + 100
		s.Seq++
		r.Add(&s)
	}
	for range 3 * bufferSpans {
		add()
	}
	require.Zero(t, testing.AllocsPerRun(3*bufferSpans, add))
	require.NoError(t, r.Close())
}

// TestConcurrentAddsLoseNothing: goroutines adding at once, no more spans
// than the two buffers hold, lose none, and none is written twice.
func TestConcurrentAddsLoseNothing(t *testing.T) {
	const (
		goroutines = 8
		each       = 250
		spans      = goroutines * each / 2
	)
	path := filepath.Join(t.TempDir(), "t.json")
	r, err := open(path, 1, 2, spans)
	require.NoError(t, err)
	go r.writer()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				now := r.Now()
				r.Add(&Span{Name: "Send", Cat: "send", Start: now, End: now + 10, Seq: uint64(g*each + i), Peer: -1, Step: -1, Lane: g})
			}
		})
	}
	wg.Wait()
	require.NoError(t, r.Close())
	require.Zero(t, r.Dropped())

	tr := readTrace(t, path)
	seen := make(map[int]bool)
	for _, ev := range tr.phase("X") {
		seq := int(ev.Args["seq"].(float64))
		require.False(t, seen[seq], "span %d written twice", seq)
		require.Equal(t, seq/each+1, *ev.Tid, "span %d on its goroutine's lane", seq)
		seen[seq] = true
	}
	require.Len(t, seen, goroutines*each)
	_, threads := tr.names()
	require.Len(t, threads, goroutines, "a name for each lane, once")
	require.Empty(t, tr.phase("i"), "nothing dropped")
}

// TestOverflowDropsAndSaysSo: with the writer stalled on the first buffer
// and the second full, Add drops spans and counts them, and the file gets
// an instant event saying how many were dropped from when.
func TestOverflowDropsAndSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	r, err := open(path, 0, 1, 4)
	require.NoError(t, err)
	stalled, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.beforeWrite = func() {
		once.Do(func() { close(stalled) })
		<-release
	}
	go r.writer()
	for i := range 11 {
		r.Add(&Span{Name: "step", Start: int64(i) * 1000, End: int64(i)*1000 + 500, Peer: -1, Step: i})
		if i == 3 {
			<-stalled // the writer holds the first buffer
		}
	}
	require.EqualValues(t, 3, r.Dropped())
	close(release)
	require.NoError(t, r.Close())

	tr := readTrace(t, path)
	require.Len(t, tr.phase("X"), 8)
	drops := tr.phase("i")
	require.Len(t, drops, 1)
	require.Equal(t, "3 spans dropped", drops[0].Name)
	require.Equal(t, "p", drops[0].S, "the mark spans the rank's track")
	require.EqualValues(t, 3, drops[0].Args["dropped"])
	require.InDelta(t, 8.0, *drops[0].Ts, 1e-9, "at the start of the first span dropped")
}

// TestNilRecorder: tracing off is a nil recorder, whose methods do
// nothing.
func TestNilRecorder(t *testing.T) {
	var r *Recorder
	r.Add(&Span{Name: "x"})
	require.Zero(t, r.Now())
	require.Zero(t, r.Dropped())
	require.NoError(t, r.Close())
}

// TestAddAfterClose: spans that come after Close are ignored; Close
// keeps its result.
func TestAddAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	r, err := Open(path, 0, 1)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	r.Add(&Span{Name: "late", Peer: -1, Step: -1})
	require.NoError(t, r.Close())
	require.Empty(t, readTrace(t, path).phase("X"))
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		path       string
		rank, size int
		want       string
	}{
		{"rank past size", filepath.Join(dir, "a.json"), 4, 4, "rank 4 of 4 ranks"},
		{"negative rank", filepath.Join(dir, "a.json"), -1, 4, "rank -1 of 4 ranks"},
		{"no ranks", filepath.Join(dir, "a.json"), 0, 0, "rank 0 of 0 ranks"},
		{"no directory", filepath.Join(dir, "missing", "a.json"), 0, 1, "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Open(tt.path, tt.rank, tt.size)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, r)
		})
	}
}

func TestRankPath(t *testing.T) {
	tests := []struct {
		path string
		rank int
		want string
	}{
		{"trace.json", 3, "trace.rank3.json"},
		{"/tmp/run/trace.json", 0, "/tmp/run/trace.rank0.json"},
		{"trace", 12, "trace.rank12"},
		{"out.d/trace", 1, "out.d/trace.rank1"},
		{"trace.perfetto.json", 2, "trace.perfetto.rank2.json"},
		{".trace", 5, ".trace.rank5"},
		{"dir/.trace", 5, "dir/.trace.rank5"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, RankPath(tt.path, tt.rank))
		})
	}
}

// TestAppendString: every string comes out as the JSON string of the
// same text (invalid UTF-8 as U+FFFD, as encoding/json has it), with
// short escapes where JSON has them.
func TestAppendString(t *testing.T) {
	tests := []struct {
		in, want, text string
	}{
		{"Allreduce", `"Allreduce"`, "Allreduce"},
		{"", `""`, ""},
		{`say "hi"`, `"say \"hi\""`, `say "hi"`},
		{`a\b`, `"a\\b"`, `a\b`},
		{"line\nbreak\ttab\r", `"line\nbreak\ttab\r"`, "line\nbreak\ttab\r"},
		{"bell\x07\x1f\x7f", `"bell\u0007\u001f\u007f"`, "bell\x07\x1f\x7f"},
		{"\b\f", `"\b\f"`, "\b\f"},
		{"größe 日本", `"größe 日本"`, "größe 日本"},
		{"bad \xff utf8 \xe6\x97", "\"bad \uFFFD utf8 \uFFFD\uFFFD\"", "bad \uFFFD utf8 \uFFFD\uFFFD"},
		{"</script>", `"</script>"`, "</script>"},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got := appendString(nil, tt.in)
			require.Equal(t, tt.want, string(got))
			var back string
			require.NoError(t, json.Unmarshal(got, &back))
			require.Equal(t, tt.text, back)
		})
	}
}

// TestAppendMicros: nanoseconds as microseconds with three decimals,
// exact at both ends of int64, and parseMicros reads them back.
func TestAppendMicros(t *testing.T) {
	tests := []struct {
		ns   int64
		want string
	}{
		{0, "0.000"},
		{1, "0.001"},
		{999, "0.999"},
		{1_234_567, "1234.567"},
		{-1_500, "-1.500"},
		{-7, "-0.007"},
		{math.MaxInt64, "9223372036854775.807"},
		{math.MinInt64, "-9223372036854775.808"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, string(appendMicros(nil, tt.ns)))
			back, err := parseMicros(tt.want)
			require.NoError(t, err)
			require.Equal(t, tt.ns, back)
		})
	}
	for in, want := range map[string]int64{"12": 12_000, "1.5": 1_500, "0.0004": 0, "1e3": 1_000_000, "2.0006": 2_001} {
		got, err := parseMicros(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := parseMicros("1e300")
	require.Error(t, err)
}

// BenchmarkAdd is the cost a traced call pays per span, from goroutines
// adding at once.
func BenchmarkAdd(b *testing.B) {
	r, err := Open(filepath.Join(b.TempDir(), "t.json"), 0, 1)
	require.NoError(b, err)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		s := Span{Name: "step 1", Cat: "step", Comm: 1, Bytes: 4096, Peer: 1, Step: 1}
		for pb.Next() {
			s.Start = r.Now()
			s.End = s.Start + 100
			r.Add(&s)
		}
	})
	b.StopTimer()
	require.NoError(b, r.Close())
	b.ReportMetric(float64(r.Dropped())/float64(b.N), "dropped/op")
}

// BenchmarkEncode is the writer's cost per span, which bounds the rate
// of spans a recorder keeps up with.
func BenchmarkEncode(b *testing.B) {
	s := Span{Name: "Allreduce", Cat: "collective", Start: 123_456_789, End: 123_556_789, Comm: 0x1234, Seq: 99,
		Bytes: 1 << 20, Peer: -1, Step: -1, Algorithm: "ring_chunked", Transport: "shm"}
	buf := appendSpan(nil, 1, &s)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = appendSpan(buf[:0], 1, &s)
	}
}
