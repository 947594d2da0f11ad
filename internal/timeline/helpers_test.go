package timeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The writer goroutine of every recorder must end with Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// trace is a trace file as encoding/json reads it.
type trace struct {
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData"`
	TraceEvents     []traceEvent   `json:"traceEvents"`
}

type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   *float64       `json:"ts"`
	Dur  *float64       `json:"dur"`
	Pid  *int           `json:"pid"`
	Tid  *int           `json:"tid"`
	S    string         `json:"s"`
	Args map[string]any `json:"args"`
}

// readTrace parses the file at path with encoding/json and checks that it
// is in the trace-event format: every event has a name, a phase, a pid
// and a tid; complete events ("X") a ts and a dur ≥ 0; instant events
// ("i") a ts and a known scope; metadata events ("M") the args their
// name calls for.
func readTrace(t *testing.T, path string) trace {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var tr trace
	require.NoError(t, json.Unmarshal(data, &tr), "%s:\n%s", path, data)
	require.Equal(t, "ns", tr.DisplayTimeUnit)
	require.NotEmpty(t, tr.TraceEvents)
	for i, ev := range tr.TraceEvents {
		where := fmt.Sprintf("event %d %+v", i, ev)
		require.NotEmpty(t, ev.Name, where)
		require.NotNil(t, ev.Pid, where)
		require.NotNil(t, ev.Tid, where)
		require.Positive(t, *ev.Pid, "%s: Perfetto takes pid 0 for the idle task", where)
		require.Positive(t, *ev.Tid, "%s: Perfetto takes tid 0 for the idle task", where)
		switch ev.Ph {
		case "X":
			require.NotNil(t, ev.Ts, where)
			require.NotNil(t, ev.Dur, where)
			require.GreaterOrEqual(t, *ev.Dur, 0.0, where)
		case "i":
			require.NotNil(t, ev.Ts, where)
			require.Contains(t, []string{"", "g", "p", "t"}, ev.S, where)
		case "M":
			switch ev.Name {
			case "process_name", "thread_name":
				require.IsType(t, "", ev.Args["name"], where)
			case "process_sort_index", "thread_sort_index":
				require.IsType(t, 0.0, ev.Args["sort_index"], where)
			default:
				t.Fatalf("%s: unknown metadata event", where)
			}
		default:
			t.Fatalf("%s: unexpected phase", where)
		}
	}
	return tr
}

// phase returns the events of tr of phase ph.
func (tr trace) phase(ph string) []traceEvent {
	var evs []traceEvent
	for _, ev := range tr.TraceEvents {
		if ev.Ph == ph {
			evs = append(evs, ev)
		}
	}
	return evs
}

// names maps "process_name" and "thread_name" metadata to their names:
// by pid, and by pid and tid.
func (tr trace) names() (procs map[int]string, threads map[[2]int]string) {
	procs, threads = map[int]string{}, map[[2]int]string{}
	for _, ev := range tr.phase("M") {
		switch ev.Name {
		case "process_name":
			procs[*ev.Pid] = ev.Args["name"].(string)
		case "thread_name":
			threads[[2]int{*ev.Pid, *ev.Tid}] = ev.Args["name"].(string)
		}
	}
	return procs, threads
}

// contains reports whether the complete event outer contains inner on
// the same track, as a viewer nests them.
func contains(outer, inner traceEvent) bool {
	return *outer.Pid == *inner.Pid && *outer.Tid == *inner.Tid &&
		*outer.Ts <= *inner.Ts && *inner.Ts+*inner.Dur <= *outer.Ts+*outer.Dur
}

// writeRank writes the file of rank of size with n calls of one step
// each on lane 0, the clock started at start, and returns its path.
func writeRank(t *testing.T, dir string, rank, size, n int, start func() *Recorder) string {
	t.Helper()
	r := start()
	for i := range n {
		at := int64(i) * 10_000
		r.Add(&Span{Name: "step 0", Cat: "step", Start: at + 1000, End: at + 2000, Comm: 1, Seq: uint64(i), Peer: (rank + 1) % size, Step: 0})
		r.Add(&Span{Name: "Allreduce", Cat: "collective", Start: at, End: at + 5000, Comm: 1, Seq: uint64(i), Bytes: 64, Peer: -1, Step: -1})
	}
	require.NoError(t, r.Close())
	return r.f.Name()
}

func rankFile(t *testing.T, dir string, rank, size, n int) string {
	t.Helper()
	return writeRank(t, dir, rank, size, n, func() *Recorder {
		r, err := Open(filepath.Join(dir, fmt.Sprintf("t.rank%d.json", rank)), rank, size)
		require.NoError(t, err)
		return r
	})
}
