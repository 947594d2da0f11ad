package plot

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/bench"
)

func TestGroup(t *testing.T) {
	r := func(impl, transport string, np int, collective, algo, codec string, bytes int64) bench.Result {
		return bench.Result{Impl: impl, Transport: transport, NP: np, Collective: collective,
			Algo: algo, Codec: codec, Bytes: bytes, AvgUS: 1}
	}
	type line struct {
		collective, label string
		bytes             []int64
	}
	for _, tc := range []struct {
		name    string
		results []bench.Result
		want    []line
	}{
		{"empty", nil, nil},
		{"one line, sorted by size", []bench.Result{
			r("openmpi", "shm", 2, "allreduce", "", "", 1024),
			r("openmpi", "shm", 2, "allreduce", "", "", 8),
			r("openmpi", "shm", 2, "allreduce", "", "", 64),
		}, []line{{"allreduce", "openmpi shm np=2", []int64{8, 64, 1024}}}},
		{"each field splits", []bench.Result{
			r("gocoll", "tcp", 4, "allreduce", "ring", "bf16", 8),
			r("gocoll", "tcp", 4, "allreduce", "ring", "none", 8),
			r("gocoll", "tcp", 4, "allreduce", "rabenseifner", "none", 8),
			r("gocoll", "tcp", 2, "allreduce", "ring", "none", 8),
			r("gocoll", "shm", 4, "allreduce", "ring", "none", 8),
			r("gocoll", "tcp", 4, "bcast", "ring", "none", 8),
			r("openmpi", "tcp", 4, "allreduce", "", "", 8),
			r("gocoll", "tcp", 4, "allreduce", "ring", "none", 16),
		}, []line{
			{"allreduce", "gocoll rabenseifner none tcp np=4", []int64{8}},
			{"allreduce", "gocoll ring bf16 tcp np=4", []int64{8}},
			{"allreduce", "gocoll ring none shm np=4", []int64{8}},
			{"allreduce", "gocoll ring none tcp np=2", []int64{8}},
			{"allreduce", "gocoll ring none tcp np=4", []int64{8, 16}},
			{"allreduce", "openmpi tcp np=4", []int64{8}},
			{"bcast", "gocoll ring none tcp np=4", []int64{8}},
		}},
		{"the selector's choices are one line", []bench.Result{
			{Impl: "gocoll", Transport: "tcp", NP: 2, Collective: "allreduce", Algo: "ring_chunked", Auto: true, Codec: "none", Bytes: 4 << 20},
			{Impl: "gocoll", Transport: "tcp", NP: 2, Collective: "allreduce", Algo: "recursive_doubling", Auto: true, Codec: "none", Bytes: 8},
			r("gocoll", "tcp", 2, "allreduce", "recursive_doubling", "none", 8),
		}, []line{
			{"allreduce", "gocoll auto none tcp np=2", []int64{8, 4 << 20}},
			{"allreduce", "gocoll recursive_doubling none tcp np=2", []int64{8}},
		}},
		{"chunk and size do not split", []bench.Result{
			{Impl: "gocoll", Transport: "mem", NP: 8, Collective: "gather", Bytes: 8, Chunk: 4096},
			{Impl: "gocoll", Transport: "mem", NP: 8, Collective: "gather", Bytes: 16, Chunk: 0},
		}, []line{{"gather", "gocoll mem np=8", []int64{8, 16}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []line
			for _, s := range Group(tc.results) {
				l := line{collective: s.Collective, label: s.Label()}
				for _, p := range s.Points {
					l.bytes = append(l.bytes, p.Bytes)
				}
				got = append(got, l)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestStyleSeries(t *testing.T) {
	results := []bench.Result{
		{Impl: "gocoll", Transport: "tcp", NP: 4, Collective: "allreduce", Bytes: 8, AvgUS: 1},
		{Impl: "gocoll", Transport: "tcp", NP: 4, Collective: "bcast", Bytes: 8, AvgUS: 1},
		{Impl: "gocoll", Transport: "shm", NP: 4, Collective: "bcast", Bytes: 8, AvgUS: 1},
		{Impl: "openmpi", Transport: "tcp", NP: 4, Collective: "bcast", Bytes: 8, AvgUS: 1},
	}
	styles, _ := styleSeries(Group(results))
	// One legend entry and style for a line in several panels.
	require.Len(t, styles, 3)
	gTCP, gSHM, ompi := styles["gocoll tcp np=4"], styles["gocoll shm np=4"], styles["openmpi tcp np=4"]
	require.Equal(t, gTCP.color, gSHM.color, "one implementation, one colour")
	require.NotEqual(t, gTCP.dashes, gSHM.dashes, "transports differ in dashes")
	require.NotEqual(t, gTCP.color, ompi.color, "implementations differ in colour")
	require.Equal(t, gTCP.dashes, ompi.dashes)

	// With one implementation, colour tells every line apart.
	styles, _ = styleSeries(Group(results[:3]))
	require.NotEqual(t, styles["gocoll tcp np=4"].color, styles["gocoll shm np=4"].color)
}
