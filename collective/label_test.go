package collective

import (
	"bytes"
	"context"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// goroutineLabels is the goroutine profile with labels: a line
// "# labels: {...}" above each group of goroutines that carry some.
func goroutineLabels(t *testing.T) string {
	var b bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&b, 1))
	return b.String()
}

// TestProfileLabels checks that a call runs under the profiler labels
// of its collective and algorithm, merged with the caller's, and that
// the caller's labels alone are back once it returns: a user op, which
// runs inside the call, looks at the goroutine profile.
func TestProfileLabels(t *testing.T) {
	cs := job(t, 2)
	var inside [2]string
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		look := codec.NewOp("look", func(dst, src []int32) {
			inside[c.Rank()] = goroutineLabels(t)
			for i := range dst {
				dst[i] += src[i]
			}
		}, true)
		var err error
		pprof.Do(ctx, pprof.Labels("job", "train"), func(ctx context.Context) {
			err = Allreduce(ctx, c, []int32{1}, look, WithAlgorithm(RecursiveDoubling))
		})
		return err
	})
	for r, profile := range inside {
		require.Contains(t, profile, `"algorithm":"recursive_doubling"`, "rank %d", r)
		require.Contains(t, profile, `"collective":"Allreduce"`, "rank %d", r)
		require.Contains(t, profile, `"job":"train"`, "rank %d", r)
	}
	require.NotContains(t, goroutineLabels(t), `"collective":"Allreduce"`, "labels left behind")
}

// TestTraceRegions checks that a call is a region of the execution trace
// named after its collective, with its algorithm logged.
func TestTraceRegions(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("an execution trace runs already (go test -trace)")
	}
	cs := job(t, 2)
	var b bytes.Buffer
	require.NoError(t, trace.Start(&b))
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		return Bcast(ctx, c, make([]float32, 4), 0, WithAlgorithm(Tree))
	})
	trace.Stop()
	for _, want := range []string{"Bcast", "algorithm", "tree"} {
		require.True(t, strings.Contains(b.String(), want), "the trace lacks %q", want)
	}
}
