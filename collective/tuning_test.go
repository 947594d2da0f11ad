package collective

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/tuning"
	"github.com/gocoll/gocoll/internal/wire"
)

func testTable(t *testing.T) *tuning.Table {
	tab, err := tuning.New([]tuning.Entry{
		{Collective: "allreduce", Ranks: 4, Transport: "tcp", MinBytes: 0, MaxBytes: 1023, Algorithm: "tree"},
		{Collective: "allreduce", Ranks: 4, Transport: "tcp", MinBytes: 1 << 20, MaxBytes: 64 << 20, Algorithm: "ring_chunked", Chunk: 64 << 10},
		{Collective: "allreduce", Ranks: 4, Transport: "tcp", MinBytes: 1024, MaxBytes: 4095, Algorithm: "shm"},
		{Collective: "allreduce", Ranks: 4, Transport: "tcp", MinBytes: 4096, MaxBytes: 8191, Algorithm: "ring"},
	})
	require.NoError(t, err)
	return tab
}

func TestChooseTuning(t *testing.T) {
	tab := testTable(t)
	tcp := topology{transport: "tcp", tuning: tab}
	tests := []struct {
		name        string
		cfg         config
		ranks       int
		bytes       int
		commutative bool
		topo        topology
		want        Algorithm
		wantChunk   int
	}{
		{"table below the cost model's threshold", config{}, 4, 512, true, tcp, Tree, 0},
		{"table with its chunk", config{}, 4, 4 << 20, true, tcp, RingChunked, 64 << 10},
		{"the call's algorithm first", config{algo: Rabenseifner}, 4, 512, true, tcp, Rabenseifner, 0},
		{"the call's chunk leaves the table's algorithm", config{chunk: 1 << 20}, 4, 4 << 20, true, tcp, RingChunked, 64 << 10},
		{"between ranges: the default", config{}, 4, 512 << 10, true, tcp, Rabenseifner, 0},
		{"other rank count: the default", config{}, 8, 512, true, tcp, RecursiveDoubling, 0},
		{"other transport: the default", config{}, 4, 512, true, topology{transport: "mem", tuning: tab}, RecursiveDoubling, 0},
		{"shm without a segment falls back", config{}, 4, 2048, true, tcp, RecursiveDoubling, 0},
		{"ring with a non-commutative op falls back", config{}, 4, 4096, false, tcp, RecursiveDoubling, 0},
		{"no table", config{}, 4, 512, true, topology{transport: "tcp"}, RecursiveDoubling, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, tuned, err := choose(wire.KindAllreduce, &tt.cfg, tt.ranks, tt.bytes, tt.commutative, &tt.topo)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantChunk, tuned.Chunk)
		})
	}
}

func TestChunkPrecedence(t *testing.T) {
	tests := []struct {
		name string
		cfg  config
		want int
	}{
		{"default", config{}, DefaultChunkSize / 4},
		{"table", config{tunedChunk: 4096}, 1024},
		{"call before table", config{chunk: 8192, tunedChunk: 4096}, 2048},
		{"lossy", config{codec: codec.BF16}, lossyChunk / 4},
		{"lossless", config{codec: codec.Zstd}, DefaultChunkSize / 4},
		{"table before lossy", config{codec: codec.BF16, tunedChunk: 4096}, 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if envChunk() != 0 {
				t.Skip("GOCOLL_CHUNK is set")
			}
			require.Equal(t, tt.want, tt.cfg.chunkElems(4))
		})
	}
}

// TestTuningOnCommunicator loads a table through comm.WithTuning and runs
// the calls it tunes: the communicator carries the table to the selector,
// and the table's algorithm gives the right sums.
func TestTuningOnCommunicator(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tuning.json")
	tab, err := tuning.New([]tuning.Entry{
		{Collective: "allreduce", Ranks: 3, Transport: "mem", MinBytes: 0, MaxBytes: 1 << 20, Algorithm: "ring_chunked", Chunk: 64},
	})
	require.NoError(t, err)
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, tab.Write(f))
	require.NoError(t, f.Close())

	cs := job(t, 3, comm.WithTuning(path))
	a, tuned, err := choose(wire.KindAllreduce, &config{}, 3, 400, true, new(topologyOf((*core.Comm)(cs[0]))))
	require.NoError(t, err)
	require.Equal(t, RingChunked, a, "the cost model would take recursive doubling")
	require.Equal(t, 64, tuned.Chunk)
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		buf := make([]float32, 100)
		for i := range buf {
			buf[i] = float32(c.Rank() + i)
		}
		if err := Allreduce(ctx, c, buf, codec.Sum); err != nil {
			return err
		}
		for i, v := range buf {
			if v != float32(3*i+3) {
				return fmt.Errorf("rank %d: element %d is %v, want %v", c.Rank(), i, v, 3*i+3)
			}
		}
		return nil
	})
}

// TestTuningCodec: a table's codec applies to the calls whose element
// type it suits, unless the call sets its own; and a call with a codec
// where the table says shm falls back to the thresholds instead of
// running an algorithm that cannot compress.
func TestTuningCodec(t *testing.T) {
	if env().codecSet {
		t.Skip("GOCOLL_CODEC is set")
	}
	path := filepath.Join(t.TempDir(), "tuning.json")
	tab, err := tuning.New([]tuning.Entry{
		{Collective: "allreduce", Ranks: 3, Transport: "auto", MinBytes: 0, MaxBytes: 1 << 10, Algorithm: "ring", Codec: "bf16"},
		{Collective: "allreduce", Ranks: 3, Transport: "auto", MinBytes: 1<<10 + 1, MaxBytes: 1 << 20, Algorithm: "shm"},
	})
	require.NoError(t, err)
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, tab.Write(f))
	require.NoError(t, f.Close())
	cs := job(t, 3, comm.WithTuning(path), comm.WithTransport("auto"))

	tests := []struct {
		name      string
		prepare   func(ctx context.Context, c *comm.Comm) (config, Algorithm, error)
		wantCodec codec.ID
		wantAlgo  Algorithm
	}{
		{"float32 takes the table's codec", func(ctx context.Context, c *comm.Comm) (config, Algorithm, error) {
			var k call[float32]
			err := prepare(&k, ctx, c, wire.KindAllreduce, codec.Sum, 100, -1, nil)
			return k.cfg, k.me.Algorithm, err
		}, codec.BF16, Ring},
		{"int32 does not take a lossy codec", func(ctx context.Context, c *comm.Comm) (config, Algorithm, error) {
			var k call[int32]
			err := prepare(&k, ctx, c, wire.KindAllreduce, codec.Sum, 100, -1, nil)
			return k.cfg, k.me.Algorithm, err
		}, codec.None, Ring},
		{"the call's codec first", func(ctx context.Context, c *comm.Comm) (config, Algorithm, error) {
			var k call[float32]
			err := prepare(&k, ctx, c, wire.KindAllreduce, codec.Sum, 100, -1, []Option{WithCompression(codec.None)})
			return k.cfg, k.me.Algorithm, err
		}, codec.None, Ring},
		{"shm without a codec", func(ctx context.Context, c *comm.Comm) (config, Algorithm, error) {
			var k call[float32]
			err := prepare(&k, ctx, c, wire.KindAllreduce, codec.Sum, 1000, -1, nil)
			return k.cfg, k.me.Algorithm, err
		}, codec.None, Shm},
		{"shm with a codec falls back", func(ctx context.Context, c *comm.Comm) (config, Algorithm, error) {
			var k call[float32]
			err := prepare(&k, ctx, c, wire.KindAllreduce, codec.Sum, 1000, -1, []Option{WithCompression(codec.Zstd)})
			return k.cfg, k.me.Algorithm, err
		}, codec.Zstd, RecursiveDoubling},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, algo, err := tt.prepare(context.Background(), cs[0])
			require.NoError(t, err)
			require.Equal(t, tt.wantCodec, cfg.codec)
			require.Equal(t, tt.wantAlgo, algo)
		})
	}
}
