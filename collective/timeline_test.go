package collective

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/timeline"
)

// traceEvent is an event of a trace file as encoding/json reads it.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args"`
}

func readEvents(t *testing.T, b []byte) []traceEvent {
	t.Helper()
	var f struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(b, &f), "not JSON: %s", b)
	return f.TraceEvents
}

// TestTimeline checks the timeline of a job: each rank's file has one
// span per call, with the sends, waits and receipts of its messages
// nested inside it, over links and through a shared segment, and the
// merge of the files has a track per rank.
func TestTimeline(t *testing.T) {
	const n, calls = 3, 4
	for _, tc := range []struct {
		transport, algorithm string
		algo                 Algorithm
		children             []string // span names that must nest in every call
	}{
		{"mem", "ring", Ring, []string{"send", "recv"}},
		{"auto", "shm", Shm, nil}, // segment waits are spans only when slow
	} {
		t.Run(tc.transport, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.json")
			cs, err := comm.NewLocal(n, comm.WithTransport(tc.transport), comm.WithTimeline(path))
			require.NoError(t, err)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				for range calls {
					if err := Allreduce(ctx, c, make([]float32, 3*1024), codec.Sum, WithAlgorithm(tc.algo)); err != nil {
						return err
					}
				}
				return nil
			})
			for _, c := range cs {
				require.NoError(t, c.Close())
			}
			var files []string
			for r := range n {
				file := timeline.RankPath(path, r)
				files = append(files, file)
				b, err := os.ReadFile(file)
				require.NoError(t, err)
				var spans, children []traceEvent
				for _, ev := range readEvents(t, b) {
					switch {
					case ev.Ph == "X" && ev.Cat == "collective":
						spans = append(spans, ev)
					case ev.Ph == "X":
						children = append(children, ev)
					}
				}
				require.Len(t, spans, calls, "rank %d: %s", r, b)
				for _, s := range spans {
					require.Equal(t, "Allreduce", s.Name)
					require.Equal(t, tc.algorithm, s.Args["algorithm"])
					require.EqualValues(t, 3*1024*4, s.Args["bytes"])
				}
				seen := map[string]int{}
				for _, ch := range children {
					nested := false
					for _, s := range spans {
						nested = nested || ch.Tid == s.Tid && ch.Ts >= s.Ts && ch.Ts+ch.Dur <= s.Ts+s.Dur+0.001
					}
					require.True(t, nested, "rank %d: %+v is in no call", r, ch)
					seen[ch.Name]++
				}
				for _, name := range tc.children {
					require.Positive(t, seen[name], "rank %d: no %s span in %s", r, name, b)
				}
			}
			var merged bytes.Buffer
			require.NoError(t, timeline.Merge(&merged, files))
			pids := map[int]bool{}
			for _, ev := range readEvents(t, merged.Bytes()) {
				if ev.Ph == "X" && ev.Cat == "collective" {
					pids[ev.Pid] = true
				}
			}
			require.Len(t, pids, n, "a track per rank")
		})
	}
}
