package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
)

func TestTune(t *testing.T) {
	r := func(bytes int64, algo string, chunk int, us float64) Result {
		return Result{Transport: "tcp", NP: 4, Collective: "allreduce", Bytes: bytes, Algo: algo, Chunk: chunk, AvgUS: us}
	}
	results := []Result{
		r(8, "auto", 0, 10), r(8, "tree", 0, 9.8), r(8, "ring", 0, 30), // tree within noise: default kept
		r(1024, "auto", 0, 20), r(1024, "tree", 0, 12), r(1024, "ring", 0, 40),
		r(4096, "auto", 0, 30), r(4096, "tree", 0, 15), r(4096, "ring", 0, 40),
		r(1<<20, "auto", 0, 500), r(1<<20, "ring_chunked", 65536, 300), r(1<<20, "ring_chunked", 262144, 350), r(1<<20, "tree", 0, 900),
		r(4<<20, "auto", 0, 2000), r(4<<20, "ring_chunked", 65536, 2100), r(4<<20, "tree", 0, 5000), // default fastest
	}
	decisions, table, err := Tune(results, 0)
	require.NoError(t, err)
	require.Len(t, decisions, 5)
	for _, d := range decisions {
		require.LessOrEqual(t, d.Chosen.AvgUS, d.Default.AvgUS, "%d bytes: the tuned choice is never slower than the default", d.Chosen.Bytes)
	}
	kept := []bool{}
	for _, d := range decisions {
		kept = append(kept, d.Kept)
	}
	require.Equal(t, []bool{true, false, false, false, true}, kept)
	require.Equal(t, 2, len(table.Entries), "1024 and 4096 merge into one range")
	require.Equal(t, int64(1024), table.Entries[0].MinBytes)
	require.Equal(t, int64(1<<20-1), table.Entries[0].MaxBytes)
	require.Equal(t, "tree", table.Entries[0].Algorithm)
	require.Equal(t, int64(1<<20), table.Entries[1].MinBytes)
	require.Equal(t, int64(4<<20-1), table.Entries[1].MaxBytes)
	require.Equal(t, 65536, table.Entries[1].Chunk)

	for _, d := range decisions {
		choice, ok := table.Lookup(codec.KindAllreduce, 4, "tcp", d.Chosen.Bytes)
		require.Equal(t, !d.Kept, ok, "%d bytes: the table covers exactly the sizes where the default lost", d.Chosen.Bytes)
		if ok {
			require.Equal(t, d.Chosen.Algo, choice.Algorithm.String())
		}
	}

	_, _, err = Tune([]Result{r(8, "tree", 0, 1)}, 0)
	require.ErrorContains(t, err, "allreduce of 8 bytes on 4 ranks over tcp: no measurement of the default selection")
}
