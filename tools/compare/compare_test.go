package compare

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/bench"
)

// result is a point of a synthetic file; busbw follows from the time.
func result(impl, algo, transport string, np int, collective string, size int64, us float64) bench.Result {
	r := bench.Result{Impl: impl, Algo: algo, Transport: transport, NP: np, Collective: collective, Bytes: size}
	r.SetTime(us)
	return r
}

func TestJoin(t *testing.T) {
	ours := []bench.Result{
		// Three runs of one point: the median (20) counts.
		result("gocoll", "ring", "tcp", 4, "allreduce", 1024, 30),
		result("gocoll", "ring", "tcp", 4, "allreduce", 1024, 10),
		result("gocoll", "ring", "tcp", 4, "allreduce", 1024, 20),
		result("gocoll", "recursive_doubling", "tcp", 4, "allreduce", 1024, 8),
		result("gocoll", "ring", "tcp", 4, "allreduce", 4096, 40), // no reference has it
		result("gocoll", "ring", "shm", 4, "allreduce", 1024, 4),  // another transport: no reference
		result("gocoll", "ring", "tcp", 2, "allreduce", 1024, 15), // another np: no reference
		result("gocoll", "ring", "tcp", 4, "bcast", 1024, 5),      // another collective: matched
	}
	theirs := []bench.Result{
		result("openmpi", "", "tcp", 4, "allreduce", 1024, 16),
		// Two runs: the median is their mean, 12.
		result("mpi4py-buffer", "", "tcp", 4, "allreduce", 1024, 10),
		result("mpi4py-buffer", "", "tcp", 4, "allreduce", 1024, 14),
		result("mpi4py-pickle", "", "tcp", 4, "allreduce", 1024, 100),
		result("openmpi", "", "tcp", 4, "bcast", 1024, 10),
		result("openmpi", "", "tcp", 4, "allreduce", 16, 3), // none of ours has it
	}
	c := Join(ours, theirs)

	type row struct {
		collective      string
		ours, theirs    string
		oursUS, theirUS float64
		oursRuns        int
		theirRuns       int
	}
	want := []row{
		{"allreduce", "gocoll/recursive_doubling", "mpi4py-buffer", 8, 12, 1, 2},
		{"allreduce", "gocoll/recursive_doubling", "mpi4py-pickle", 8, 100, 1, 1},
		{"allreduce", "gocoll/recursive_doubling", "openmpi", 8, 16, 1, 1},
		{"allreduce", "gocoll/ring", "mpi4py-buffer", 20, 12, 3, 2},
		{"allreduce", "gocoll/ring", "mpi4py-pickle", 20, 100, 3, 1},
		{"allreduce", "gocoll/ring", "openmpi", 20, 16, 3, 1},
		{"bcast", "gocoll/ring", "openmpi", 5, 10, 1, 1},
	}
	var got []row
	for _, r := range c.Rows {
		require.Equal(t, int64(1024), r.Key.Bytes)
		got = append(got, row{r.Key.Collective, r.Ours.String(), r.Theirs.String(), r.OursUS, r.TheirsUS, r.OursRuns, r.TheirsRuns})
	}
	require.Equal(t, want, got)

	var onlyOurs []bench.Key
	for _, p := range c.OnlyOurs {
		onlyOurs = append(onlyOurs, p.Key)
	}
	require.Equal(t, []bench.Key{
		{Transport: "shm", NP: 4, Collective: "allreduce", Bytes: 1024},
		{Transport: "tcp", NP: 2, Collective: "allreduce", Bytes: 1024},
		{Transport: "tcp", NP: 4, Collective: "allreduce", Bytes: 4096},
	}, onlyOurs)
	require.Equal(t, []Point{{Series{Impl: "openmpi"}, bench.Key{Transport: "tcp", NP: 4, Collective: "allreduce", Bytes: 16}}}, c.OnlyTheirs)
}

// TestJoinAutoSweep: points of a sweep over transport auto meet the
// references by the link they used, and the selector's choices are one
// series, auto, apart from the same algorithm forced.
func TestJoinAutoSweep(t *testing.T) {
	ran := func(algo, link string, auto bool, size int64, us float64) bench.Result {
		r := result("gocoll", algo, "auto", 2, "allreduce", size, us)
		r.Link, r.Auto = link, auto
		return r
	}
	ours := []bench.Result{
		ran("shm", "segment", true, 8, 1),
		ran("recursive_doubling", "shm", true, 1024, 4),  // over shm links
		ran("recursive_doubling", "shm", false, 1024, 5), // forced
		ran("ring", "tcp", true, 1<<20, 300),
		ran("hierarchical", "segment+tcp", true, 8, 9), // no reference has both
		ran("shm", "", true, 64, 2),                    // from before the link column: stays auto
	}
	theirs := []bench.Result{
		result("openmpi", "", "shm", 2, "allreduce", 8, 2),
		result("openmpi", "", "shm", 2, "allreduce", 1024, 3),
		result("openmpi", "", "tcp", 2, "allreduce", 1<<20, 600),
	}
	c := Join(ours, theirs)
	var got []string
	for _, r := range c.Rows {
		got = append(got, fmt.Sprintf("%s %d %s %g", r.Key.Transport, r.Key.Bytes, r.Ours, r.OursUS))
	}
	require.Equal(t, []string{"shm 8 gocoll/auto 1", "shm 1024 gocoll/auto 4", "shm 1024 gocoll/recursive_doubling 5", "tcp 1048576 gocoll/auto 300"}, got)
	var onlyOurs []string
	for _, p := range c.OnlyOurs {
		onlyOurs = append(onlyOurs, fmt.Sprintf("%s %d", p.Key.Transport, p.Key.Bytes))
	}
	require.Equal(t, []string{"auto 64", "shm+tcp 8"}, onlyOurs)
	require.Empty(t, c.OnlyTheirs)
}

func TestJoinEmpty(t *testing.T) {
	c := Join(nil, []bench.Result{result("openmpi", "", "tcp", 2, "bcast", 8, 1)})
	require.Empty(t, c.Rows)
	require.Empty(t, c.OnlyOurs)
	require.Len(t, c.OnlyTheirs, 1)
}

func TestRatios(t *testing.T) {
	tests := []struct {
		name             string
		ours, theirs     float64
		latency          float64
		behind, far      bool
		oursBW, theirsBW float64
		busbw            float64
	}{
		{"twice as fast", 10, 20, 2, false, false, 2, 1, 2},
		{"equal", 10, 10, 1, false, false, 1, 1, 1},
		{"slower within the margin", 30, 20, 2.0 / 3, true, false, 1, 1.5, 2.0 / 3},
		{"slower beyond the margin", 40, 20, 0.5, true, true, 1, 2, 0.5},
		{"no bus bandwidth", 10, 5, 0.5, true, true, 0, 0, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Row{OursUS: tt.ours, TheirsUS: tt.theirs, OursBusBW: tt.oursBW, TheirsBusBW: tt.theirsBW}
			require.InDelta(t, tt.latency, r.LatencyRatio(), 1e-12)
			require.Equal(t, tt.behind, r.Behind(1))
			require.Equal(t, tt.far, r.Behind(1.5))
			if math.IsNaN(tt.busbw) {
				require.True(t, math.IsNaN(r.BusBWRatio()))
			} else {
				require.InDelta(t, tt.busbw, r.BusBWRatio(), 1e-12)
			}
		})
	}
}

func TestSummaries(t *testing.T) {
	a, b := Series{Impl: "gocoll", Algo: "ring"}, Series{Impl: "openmpi"}
	c := &Comparison{Rows: []Row{
		{Ours: a, Theirs: b, OursUS: 10, TheirsUS: 40, OursBusBW: 4, TheirsBusBW: 1},
		{Ours: a, Theirs: b, OursUS: 40, TheirsUS: 10, OursBusBW: 1, TheirsBusBW: 4},
		{Ours: a, Theirs: b, OursUS: 10, TheirsUS: 9, OursBusBW: 0, TheirsBusBW: 0},
	}}
	sums := c.Summaries(1.5)
	require.Len(t, sums, 2)
	s := sums[0]
	require.Equal(t, a, s.Ours)
	require.Equal(t, b, s.Theirs)
	require.Equal(t, 3, s.Points)
	require.Equal(t, 2, s.Behind)
	require.Equal(t, 1, s.FarBehind)
	require.InDelta(t, math.Cbrt(4*0.25*0.9), s.Latency, 1e-12)
	require.InDelta(t, 1, s.BusBW, 1e-12, "the barrier-like row has no bus bandwidth and is left out")
	total := sums[1]
	require.Equal(t, Series{}, total.Ours)
	require.Equal(t, s.Points, total.Points)
}

func TestSplit(t *testing.T) {
	g := result("gocoll", "ring", "tcp", 2, "bcast", 8, 1)
	o := result("openmpi", "", "tcp", 2, "bcast", 8, 1)
	m := result("mpi4py-buffer", "", "tcp", 2, "bcast", 8, 1)
	tests := []struct {
		name         string
		files        [][]bench.Result
		ours, theirs []bench.Result
	}{
		{"ours first", [][]bench.Result{{g}, {o}, {m}}, []bench.Result{g}, []bench.Result{o, m}},
		{"ours anywhere", [][]bench.Result{{o}, {g, m}}, []bench.Result{g}, []bench.Result{o, m}},
		{"no gocoll: the first file", [][]bench.Result{{o}, {m}}, []bench.Result{o}, []bench.Result{m}},
		{"no files", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours, theirs := Split(tt.files)
			require.Equal(t, tt.ours, ours)
			require.Equal(t, tt.theirs, theirs)
		})
	}
}

func readCSV(t *testing.T, name string) []bench.Result {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	rs, err := bench.ReadCSV(f)
	require.NoError(t, err)
	return rs
}

// TestAnchorFiles joins a file of ours with lines copied from the
// anchors' openmpi.csv and mpi4py.csv.
func TestAnchorFiles(t *testing.T) {
	ours, theirs := Split([][]bench.Result{readCSV(t, "ours.csv"), readCSV(t, "openmpi.csv"), readCSV(t, "mpi4py.csv")})
	c := Join(ours, theirs)
	require.Len(t, c.Rows, 3*4, "3 points of ours, each against openmpi and mpi4py's three variants")
	require.Len(t, c.OnlyOurs, 2)
	require.Empty(t, c.OnlyTheirs)

	var refs []string
	for _, r := range c.Rows[:4] {
		refs = append(refs, r.Theirs.String())
	}
	require.Equal(t, []string{"mpi4py-buffer", "mpi4py-pickle", "mpi4py-pickle-list", "openmpi"}, refs)

	var out bytes.Buffer
	require.NoError(t, Write(&out, c, Options{Margin: 1.5, Unmatched: true}))
	text := out.String()
	for _, want := range []string{
		"above 1 ours (gocoll, normally) is faster",
		"gocoll/shm vs openmpi: 3 points compared, 1 behind (1 by more than 1.5x)",
		"all: 12 points compared",
		"unmatched: 2 points of ours and 0 of the references",
		"gocoll/recursive_doubling tcp np=2 allreduce 8 B",
		"BEHIND",
	} {
		require.Contains(t, text, want)
	}
}
