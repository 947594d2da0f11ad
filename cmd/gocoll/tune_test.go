package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/tuning"
	"github.com/gocoll/gocoll/internal/wire"
)

// TestTuneEndToEnd runs a tiny tune over mem, loads the table it wrote
// into a communicator and runs the calls it tunes.
func TestTuneEndToEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tuning.json")
	var stdout, stderr bytes.Buffer
	code := tuneMain([]string{"-n", "2", "--transport", "mem", "--collectives", "allreduce", "--sizes", "64,4K,256K",
		"--chunks", "16K,64K", "--iters", "3", "-o", path}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stdout.String(), "default us")
	require.Equal(t, 3, strings.Count(stdout.String(), "allreduce"), stdout.String())

	table, err := tuning.Load(path)
	require.NoError(t, err)
	for _, e := range table.Entries {
		require.Equal(t, "mem", e.Transport)
		require.Equal(t, 2, e.Ranks)
		choice, ok := table.Lookup(wire.KindAllreduce, 2, "mem", e.MinBytes)
		require.True(t, ok)
		require.Equal(t, e.Algorithm, choice.Algorithm.String())
	}

	cs, err := comm.NewLocal(2, comm.WithTuning(path))
	require.NoError(t, err)
	require.Equal(t, table.Entries, (*core.Comm)(cs[0]).Tuning().Entries)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, c := range cs {
		wg.Go(func() {
			defer c.Close()
			for _, n := range []int{16, 1024, 64 << 10} {
				buf := make([]float32, n)
				if errs[r] = collective.Allreduce(context.Background(), c, buf, codec.Sum); errs[r] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
}

// TestTuneCodecs tunes over codecs, none left out of the list: tune
// measures it anyway, as the default's codec, and every entry's codec is
// one of those measured.
func TestTuneCodecs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tuning.json")
	var stdout, stderr bytes.Buffer
	code := tuneMain([]string{"-n", "2", "--transport", "mem", "--collectives", "allreduce", "--sizes", "64,64K",
		"--chunks", "16K", "--codecs", "bf16,zstd", "--iters", "3", "-o", path}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Regexp(t, `(?m)^\s*collective\s+bytes\s+chosen\s+chunk\s+codec\s+us\s+default us\s+speedup$`, stdout.String())

	table, err := tuning.Load(path)
	require.NoError(t, err)
	for _, e := range table.Entries {
		require.Contains(t, []string{"none", "bf16", "zstd"}, e.Codec)
		choice, ok := table.Lookup(wire.KindAllreduce, 2, "mem", e.MinBytes)
		require.True(t, ok)
		require.Equal(t, e.Codec, choice.Codec.String())
		if choice.Codec.Lossy() {
			require.Contains(t, stdout.String(), e.Codec+" chosen for allreduce of")
		}
	}
}

func TestWriteLossy(t *testing.T) {
	table, err := tuning.New([]tuning.Entry{
		{Collective: "allreduce", Ranks: 4, Transport: "tcp", MinBytes: 0, MaxBytes: 1023, Algorithm: "tree", Codec: "zstd"},
		{Collective: "allreduce", Ranks: 4, Transport: "tcp", MinBytes: 16 << 20, MaxBytes: 64 << 20, Algorithm: "ring_chunked", Codec: "bf16"},
		{Collective: "bcast", Ranks: 4, Transport: "tcp", MinBytes: 1024, MaxBytes: 4095, Algorithm: "chain", Codec: "fp16"},
	})
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, writeLossy(&b, table))
	require.Equal(t, "\n"+
		"bf16 chosen for allreduce of 16777216 to 67108864 bytes: float32 and float64 results rounded to bf16 precision\n"+
		"fp16 chosen for bcast of 1024 to 4095 bytes: float32 and float64 results rounded to fp16 precision\n", b.String())

	b.Reset()
	table, err = tuning.New(table.Entries[:1])
	require.NoError(t, err)
	require.NoError(t, writeLossy(&b, table))
	require.Empty(t, b.String(), "a lossless codec changes no result")
}

func TestTuneFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"noise", []string{"--noise", "2"}, "--noise 2"},
		{"chunks", []string{"--chunks", "x"}, "--chunks"},
		{"transport", []string{"--transport", "ib"}, "unknown transport"},
		{"codecs", []string{"--codecs", "none,lz4"}, `unknown codec "lz4"`},
		{"codec auto", []string{"--codecs", "bf16,auto"}, "--codecs auto: a table entry names its codec"},
		{"argument", []string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.Equal(t, 2, tuneMain(tt.args, &stdout, &stderr))
			require.Contains(t, stderr.String(), tt.want)
		})
	}
}
