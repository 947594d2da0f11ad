package bench

import (
	"testing"

	"github.com/gocoll/gocoll/internal/wire"
	"github.com/stretchr/testify/require"
)

func TestTune(t *testing.T) {
	// auto stands for the selector's choice, which records what it ran.
	r := func(bytes int64, algo string, chunk int, codec string, us float64) Result {
		res := Result{Transport: "tcp", NP: 4, Collective: "allreduce", Bytes: bytes, Algo: algo, Chunk: chunk, Codec: codec, AvgUS: us}
		if algo == "auto" {
			res.Algo, res.Auto = "recursive_doubling", true
		}
		return res
	}
	results := []Result{
		r(8, "auto", 0, "none", 10), r(8, "tree", 0, "none", 9.8), r(8, "ring", 0, "none", 30), // tree within noise: default kept
		r(8, "tree", 0, "zstd", 9.6), r(8, "auto", 0, "zstd", 5), // auto with a codec names no algorithm: no candidate
		r(1024, "auto", 0, "none", 20), r(1024, "tree", 0, "none", 12), r(1024, "ring", 0, "none", 40),
		r(4096, "auto", 0, "none", 30), r(4096, "tree", 0, "none", 15), r(4096, "ring", 0, "none", 40),
		r(1<<20, "auto", 0, "none", 500), r(1<<20, "ring_chunked", 65536, "none", 300), r(1<<20, "ring_chunked", 262144, "none", 350), r(1<<20, "tree", 0, "none", 900),
		r(4<<20, "auto", 0, "none", 2000), r(4<<20, "ring_chunked", 65536, "none", 2100), r(4<<20, "tree", 0, "none", 5000), // default fastest
		r(4<<20, "ring_chunked", 65536, "bf16", 2050),
		r(16<<20, "auto", 0, "none", 8000), r(16<<20, "ring_chunked", 65536, "none", 7000), r(16<<20, "ring_chunked", 65536, "bf16", 4000),
		r(64<<20, "auto", 0, "none", 32000), r(64<<20, "ring_chunked", 65536, "bf16", 15000), r(64<<20, "ring", 0, "s2", 16000),
	}
	decisions, table, err := Tune(results, 0)
	require.NoError(t, err)
	require.Len(t, decisions, 7)
	for _, d := range decisions {
		require.LessOrEqual(t, d.Chosen.AvgUS, d.Default.AvgUS, "%d bytes: the tuned choice is never slower than the default", d.Chosen.Bytes)
		require.Equal(t, Result{Transport: "tcp", NP: 4, Collective: "allreduce", Bytes: d.Chosen.Bytes, Algo: "recursive_doubling", Auto: true,
			Codec: "none", AvgUS: d.Default.AvgUS}, d.Default, "the default is the selector's choice with the default chunk, uncompressed")
		if !d.Kept {
			require.False(t, d.Chosen.Auto, "%d bytes: a table entry names an algorithm that was asked for", d.Chosen.Bytes)
		}
	}
	kept := []bool{}
	for _, d := range decisions {
		kept = append(kept, d.Kept)
	}
	require.Equal(t, []bool{true, false, false, false, true, false, false}, kept)
	require.Len(t, table.Entries, 3, "1024 and 4096 merge into one range, and so do 16 and 64 MiB")
	require.Equal(t, int64(1024), table.Entries[0].MinBytes)
	require.Equal(t, int64(1<<20-1), table.Entries[0].MaxBytes)
	require.Equal(t, "tree", table.Entries[0].Algorithm)
	require.Equal(t, "none", table.Entries[0].Codec)
	require.Equal(t, int64(1<<20), table.Entries[1].MinBytes)
	require.Equal(t, int64(4<<20-1), table.Entries[1].MaxBytes)
	require.Equal(t, 65536, table.Entries[1].Chunk)
	require.Equal(t, "none", table.Entries[1].Codec)
	require.Equal(t, int64(16<<20), table.Entries[2].MinBytes)
	require.Equal(t, int64(64<<20), table.Entries[2].MaxBytes)
	require.Equal(t, "bf16", table.Entries[2].Codec)

	for _, d := range decisions {
		choice, ok := table.Lookup(wire.KindAllreduce, 4, "tcp", d.Chosen.Bytes)
		require.Equal(t, !d.Kept, ok, "%d bytes: the table covers exactly the sizes where the default lost", d.Chosen.Bytes)
		if ok {
			require.Equal(t, d.Chosen.Algo, choice.Algorithm.String())
			require.Equal(t, d.Chosen.Chunk, choice.Chunk)
			require.Equal(t, d.Chosen.Codec, choice.Codec.String())
		}
	}

	_, _, err = Tune([]Result{r(8, "tree", 0, "none", 1), r(8, "auto", 0, "bf16", 1)}, 0)
	require.ErrorContains(t, err, "allreduce of 8 bytes on 4 ranks over tcp: no measurement of the default selection (algo auto, default chunk, codec none)")
}
