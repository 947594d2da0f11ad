package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
)

func TestRanBetween(t *testing.T) {
	row := func(coll, algo, transport string, calls uint64) comm.CallStats {
		return comm.CallStats{Collective: coll, Algorithm: algo, Transport: transport, Calls: calls}
	}
	allreduce := []string{"Allreduce"}
	tests := []struct {
		name          string
		before, after []comm.CallStats
		collectives   []string
		algo, link    string
	}{
		{"first calls of a communicator", nil,
			[]comm.CallStats{row("Allreduce", "shm", "segment", 12)}, allreduce, "shm", "segment"},
		{"only the rows whose calls grew",
			[]comm.CallStats{row("Allreduce", "recursive_doubling", "tcp", 30), row("Allreduce", "ring_chunked", "tcp", 5)},
			[]comm.CallStats{row("Allreduce", "recursive_doubling", "tcp", 30), row("Allreduce", "ring_chunked", "tcp", 17)},
			allreduce, "ring_chunked", "tcp"},
		{"other collectives do not count",
			[]comm.CallStats{row("Allreduce", "ring", "tcp", 3), row("Barrier", "dissemination", "tcp", 3)},
			[]comm.CallStats{row("Allreduce", "ring", "tcp", 6), row("Barrier", "dissemination", "tcp", 9), row("Bcast", "tree", "tcp", 1)},
			allreduce, "ring", "tcp"},
		{"several algorithms, each link once",
			[]comm.CallStats{row("Allgather", "shm", "segment", 1)},
			[]comm.CallStats{row("Allgather", "shm", "segment", 4), row("Allgatherv", "ring", "shm", 3)},
			[]string{"Allgather", "Allgatherv"}, "shm+ring", "segment+shm"},
		{"a transport of several kinds",
			nil,
			[]comm.CallStats{row("Allreduce", "hierarchical", "segment+tcp", 2), row("Allreduce", "ring", "tcp+shm", 2)},
			allreduce, "hierarchical+ring", "segment+tcp+shm"},
		{"nothing ran",
			[]comm.CallStats{row("Allreduce", "ring", "tcp", 3)},
			[]comm.CallStats{row("Allreduce", "ring", "tcp", 3), row("Barrier", "dissemination", "tcp", 1)},
			allreduce, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			algo, link := ranBetween(tt.before, tt.after, tt.collectives)
			require.Equal(t, tt.algo, algo)
			require.Equal(t, tt.link, link)
		})
	}
}

func TestStatsNames(t *testing.T) {
	tests := []struct {
		p    point
		want []string
	}{
		{point{collective: "allreduce"}, []string{"Allreduce"}},
		{point{collective: "reducescatter"}, []string{"ReduceScatter"}},
		{point{collective: "barrier"}, []string{"Barrier"}},
		{point{collective: "allreduce_object", object: true}, []string{"Allgather", "Allgatherv"}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.p.statsNames(), tt.p.collective)
	}
	for _, name := range Collectives {
		require.NotEqual(t, "Send", point{collective: name}.statsNames()[0], "%s has a collective's name", name)
	}
}

// TestPointRan: a point records the algorithm that ran, the selector's or
// the one forced, and "raw" for an object collective; a forced algorithm
// that did not run, or calls the counts miss, fail the point.
func TestPointRan(t *testing.T) {
	before := []comm.CallStats{{Collective: "Allreduce", Algorithm: "ring", Transport: "tcp", Calls: 5}}
	ring := []comm.CallStats{{Collective: "Allreduce", Algorithm: "ring", Transport: "tcp", Calls: 9}}
	tree := []comm.CallStats{before[0], {Collective: "Allreduce", Algorithm: "tree", Transport: "tcp", Calls: 4}}
	objects := []comm.CallStats{{Collective: "Allgather", Algorithm: "shm", Transport: "segment", Calls: 4},
		{Collective: "Allgatherv", Algorithm: "ring", Transport: "shm", Calls: 4}}
	tests := []struct {
		name       string
		p          point
		after      []comm.CallStats
		algo, link string
		err        string
	}{
		{"the selector's choice", point{collective: "allreduce", bytes: 8}, tree, "tree", "tcp", ""},
		{"forced and run", point{collective: "allreduce", algo: collective.Ring, bytes: 8}, ring, "ring", "tcp", ""},
		{"forced and not run", point{collective: "allreduce", algo: collective.Ring, bytes: 8}, tree, "", "",
			"allreduce of 8 bytes with ring ran tree instead, by the communicator's counts"},
		{"not counted", point{collective: "allreduce", bytes: 8}, before, "", "",
			"allreduce of 8 bytes with auto: the communicator counted none of its calls"},
		{"an object collective", point{collective: "allgather_object", object: true, bytes: 8}, objects, "raw", "segment+shm", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			algo, link, err := tt.p.ran(before, tt.after)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.algo, algo)
			require.Equal(t, tt.link, link)
		})
	}
}
