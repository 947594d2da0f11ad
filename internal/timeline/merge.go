package timeline

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Summary says what MergeFiles merged.
type Summary struct {
	Ranks    []int // the ranks merged, ascending
	Size     int   // the job's number of ranks, as the files say
	Events   int   // events written, the ones Merge adds included
	CutShort []int // ranks whose file ends before its recorder closed it
	Dropped  int64 // spans the recorders dropped for want of buffer room
}

// Merge reads per-rank files written by Recorder and writes one trace to
// dst with one process track per rank (pid rank+1, named "rank N",
// sorted by rank), aligning the ranks' clocks by their recorded
// wall-clock start times, and keeping every event. It returns an error
// naming the file that is not a valid rank trace.
func Merge(dst io.Writer, files []string) error {
	_, err := MergeFiles(dst, files)
	return err
}

// MergeFiles is Merge, and says what it merged.
//
// A file cut short (its rank died before Recorder.Close) is merged up to
// its last whole event, and the merged trace gets an instant event on
// that rank saying so. Merge reads every file's header before it writes
// anything, so a file that is no rank trace at all leaves dst untouched;
// one that goes bad after its header does not.
func MergeFiles(dst io.Writer, files []string) (Summary, error) {
	if len(files) == 0 {
		return Summary{}, errors.New("timeline: no files to merge")
	}
	heads := make([]header, 0, len(files))
	for _, path := range files {
		h, err := readHeader(path)
		if err != nil {
			return Summary{}, err
		}
		heads = append(heads, h)
	}
	slices.SortFunc(heads, func(a, b header) int { return cmp.Compare(a.rank, b.rank) })
	sum := Summary{Size: heads[0].size}
	base := heads[0].start
	for i, h := range heads {
		if i > 0 && h.rank == heads[i-1].rank {
			return Summary{}, fmt.Errorf("timeline: %s and %s are both rank %d", heads[i-1].path, h.path, h.rank)
		}
		if h.size != sum.Size {
			return Summary{}, fmt.Errorf("timeline: %s is of a job of %d ranks, %s of %d", h.path, h.size, heads[0].path, sum.Size)
		}
		base = min(base, h.start)
		sum.Ranks = append(sum.Ranks, h.rank)
	}

	w := &mergeWriter{w: bufio.NewWriterSize(dst, flushBytes)}
	w.b = append(w.b, `{"displayTimeUnit":"ns","otherData":{"format":"`+mergedName+`","version":`...)
	w.b = strconv.AppendInt(w.b, formatVersion, 10)
	w.b = append(w.b, `,"size":`...)
	w.b = strconv.AppendInt(w.b, int64(sum.Size), 10)
	w.b = append(w.b, `,"ranks":`...)
	w.b = strconv.AppendInt(w.b, int64(len(heads)), 10)
	w.b = appendClock(w.b, time.Unix(0, base))
	w.b = append(w.b, `},"traceEvents":[`...)
	for _, h := range heads {
		cut, err := w.copyEvents(h, h.start-base, &sum)
		if err != nil {
			return sum, err
		}
		if cut {
			sum.CutShort = append(sum.CutShort, h.rank)
		}
	}
	sum.Events = w.events
	w.b = append(w.b, "\n]}\n"...)
	w.write()
	if err := w.w.Flush(); err != nil {
		return sum, fmt.Errorf("timeline: writing the merged trace: %w", err)
	}
	return sum, nil
}

// header is what a rank's file says of itself in its otherData.
type header struct {
	path       string
	rank, size int
	start      int64 // wall clock of Open, nanoseconds since 1970
}

// otherData is the otherData of a rank's file.
type otherData struct {
	Format      string `json:"format"`
	Version     int    `json:"version"`
	Rank        *int   `json:"rank"`
	Size        int    `json:"size"`
	StartUnixNS int64  `json:"start_unix_ns,string"`
}

func notTrace(path string, format string, args ...any) error {
	return fmt.Errorf("timeline: %s is not a gocoll rank trace: %s", path, fmt.Sprintf(format, args...))
}

// readHeader reads the otherData of the rank file at path. A Recorder
// writes it first, so only its first line is read.
func readHeader(path string) (header, error) {
	f, err := os.Open(path)
	if err != nil {
		return header{}, fmt.Errorf("timeline: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	if err := enterObject(dec); err != nil {
		return header{}, notTrace(path, "%v", err)
	}
	for {
		key, err := nextKey(dec)
		if err != nil {
			return header{}, notTrace(path, "%v", err)
		}
		if key == "" {
			return header{}, notTrace(path, "no otherData")
		}
		if key != "otherData" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return header{}, notTrace(path, "%v", err)
			}
			continue
		}
		var od otherData
		if err := dec.Decode(&od); err != nil {
			return header{}, notTrace(path, "otherData: %v", err)
		}
		switch {
		case od.Format != formatName:
			return header{}, notTrace(path, "otherData.format is %q, not %q", od.Format, formatName)
		case od.Version != formatVersion:
			return header{}, notTrace(path, "version %d; this gocoll reads version %d", od.Version, formatVersion)
		case od.Rank == nil || od.Size < 1 || *od.Rank < 0 || *od.Rank >= od.Size:
			return header{}, notTrace(path, "no valid rank and size in otherData")
		case od.StartUnixNS == 0:
			return header{}, notTrace(path, "no start_unix_ns in otherData")
		}
		return header{path: path, rank: *od.Rank, size: od.Size, start: od.StartUnixNS}, nil
	}
}

// enterObject reads the "{" that opens a JSON object.
func enterObject(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	return nil
}

// nextKey reads the next key of an object, or "" at its end.
func nextKey(dec *json.Decoder) (string, error) {
	if !dec.More() {
		return "", nil
	}
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok || key == "" {
		return "", fmt.Errorf("unexpected %v", tok)
	}
	return key, nil
}

// event is one trace event of a rank's file: the fields Recorder writes.
type event struct {
	Ph   string          `json:"ph"`
	Ts   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	Tid  int             `json:"tid"`
	S    string          `json:"s"`
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Args json.RawMessage `json:"args"`
}

// mergeWriter writes the merged trace, one event per line.
type mergeWriter struct {
	w      *bufio.Writer
	b      []byte
	events int
	args   bytes.Buffer // scratch for compacting args
}

func (w *mergeWriter) write() {
	w.w.Write(w.b) // a bufio.Writer keeps its first error for Flush
	w.b = w.b[:0]
}

// copyEvents copies the events of h's file, moving each by offset
// nanoseconds onto the merged clock and onto the rank's pid. It reports
// whether the file was cut short.
func (w *mergeWriter) copyEvents(h header, offset int64, sum *Summary) (bool, error) {
	f, err := os.Open(h.path)
	if err != nil {
		return false, fmt.Errorf("timeline: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, flushBytes))
	dec.UseNumber()
	bad := func(err error) (bool, error) {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return true, nil
		}
		return false, notTrace(h.path, "%v", err)
	}
	if err := enterObject(dec); err != nil {
		return bad(err)
	}
	for {
		key, err := nextKey(dec)
		if err != nil {
			return bad(err)
		}
		if key == "" {
			return false, notTrace(h.path, "no traceEvents")
		}
		if key == "traceEvents" {
			break
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return bad(err)
		}
	}
	if tok, err := dec.Token(); err != nil {
		return bad(err)
	} else if tok != json.Delim('[') {
		return false, notTrace(h.path, "traceEvents is not an array")
	}

	pid := pidOf(h.rank)
	end := offset // the latest end of an event, for the cut-short mark
	for n := 1; dec.More(); n++ {
		var ev event
		if err := dec.Decode(&ev); err != nil {
			cut, err := bad(err)
			if cut {
				w.cutShort(pid, h.rank, end)
			}
			return cut, err
		}
		ts, dur, err := ev.times()
		if err != nil {
			return false, notTrace(h.path, "event %d: %v", n, err)
		}
		if ev.Ts != "" {
			ts += offset
			end = max(end, ts+dur)
		}
		if ev.Ph == "i" && ev.Cat == "timeline" {
			var a struct{ Dropped int64 }
			if json.Unmarshal(ev.Args, &a) == nil {
				sum.Dropped += a.Dropped
			}
		}
		if err := w.event(&ev, pid, ts, dur); err != nil {
			return false, notTrace(h.path, "event %d: %v", n, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing "]"
		cut, err := bad(err)
		if cut {
			w.cutShort(pid, h.rank, end)
		}
		return cut, err
	}
	return false, nil
}

// times checks the event's phase and times and returns them in
// nanoseconds (0 where the event has none).
func (ev *event) times() (ts, dur int64, err error) {
	if ev.Ph == "" {
		return 0, 0, errors.New("no ph")
	}
	if ev.Ts == "" && ev.Ph != "M" {
		return 0, 0, fmt.Errorf("a %q event without ts", ev.Ph)
	}
	if ev.Ts != "" {
		if ts, err = parseMicros(string(ev.Ts)); err != nil {
			return 0, 0, fmt.Errorf("ts: %v", err)
		}
	}
	if ev.Ph == "X" {
		if ev.Dur == "" {
			return 0, 0, errors.New(`an "X" event without dur`)
		}
		if dur, err = parseMicros(string(ev.Dur)); err != nil || dur < 0 {
			return 0, 0, fmt.Errorf("dur %s: want microseconds ≥ 0", ev.Dur)
		}
	}
	return ts, dur, nil
}

// event writes ev on pid at ts.
func (w *mergeWriter) event(ev *event, pid int, ts, dur int64) error {
	if w.events > 0 {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, `
{"ph":`...)
	w.b = appendString(w.b, ev.Ph)
	if ev.Ts != "" {
		w.b = append(w.b, `,"ts":`...)
		w.b = appendMicros(w.b, ts)
	}
	if ev.Ph == "X" {
		w.b = append(w.b, `,"dur":`...)
		w.b = appendMicros(w.b, dur)
	}
	w.b = appendIDs(w.b, pid, ev.Tid)
	if ev.S != "" {
		w.b = append(w.b, `,"s":`...)
		w.b = appendString(w.b, ev.S)
	}
	w.b = append(w.b, `,"name":`...)
	w.b = appendString(w.b, ev.Name)
	if ev.Cat != "" {
		w.b = append(w.b, `,"cat":`...)
		w.b = appendString(w.b, ev.Cat)
	}
	if len(ev.Args) > 0 {
		w.args.Reset()
		if err := json.Compact(&w.args, ev.Args); err != nil {
			return err
		}
		w.b = append(w.b, `,"args":`...)
		w.b = append(w.b, w.args.Bytes()...)
	}
	w.b = append(w.b, '}')
	w.events++
	if len(w.b) >= flushBytes {
		w.write()
	}
	return nil
}

// cutShort marks on rank's track, at ns, that its file ends early.
func (w *mergeWriter) cutShort(pid, rank int, ns int64) {
	args, _ := json.Marshal(map[string]string{
		"note": "rank " + strconv.Itoa(rank) + " ended before it closed its timeline: the spans it still held are lost",
	})
	w.event(&event{Ph: "i", Ts: "1", S: "p", Tid: tidOf(0), Name: "timeline cut short", Cat: "timeline", Args: args}, pid, ns, 0)
}

// parseMicros parses a trace time in microseconds into nanoseconds:
// exactly when it has at most three decimals, as Recorder writes them.
func parseMicros(s string) (int64, error) {
	whole, frac, dot := strings.Cut(s, ".")
	if len(frac) <= 3 && !strings.ContainsAny(s, "eE") {
		neg := strings.HasPrefix(whole, "-")
		us, err := strconv.ParseInt(whole, 10, 64)
		if err == nil && (!dot || frac != "") {
			var f int64
			if frac != "" {
				f, err = strconv.ParseInt(frac+"00"[:3-len(frac)], 10, 64)
			}
			if err == nil && f >= 0 && us <= math.MaxInt64/1000 && us >= math.MinInt64/1000 {
				if neg {
					return us*1000 - f, nil
				}
				return us*1000 + f, nil
			}
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || math.Abs(v) > math.MaxInt64/1000 {
		return 0, fmt.Errorf("%q is not a time in microseconds", s)
	}
	return int64(math.Round(v * 1000)), nil
}
