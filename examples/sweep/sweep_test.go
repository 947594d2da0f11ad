package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/examples/internal/exampletest"
	"github.com/gocoll/gocoll/examples/internal/ranks"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

// runSweep runs cfg on n ranks in this process and returns rank 0's rows
// and table, and the first error.
func runSweep(t *testing.T, n int, cfg config) ([]row, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	outs := make([]bytes.Buffer, n)
	rows := make([][]row, n)
	err := ranks.Run(ctx, n, nil, func(ctx context.Context, c *comm.Comm) error {
		var err error
		rows[c.Rank()], err = sweep(ctx, c, cfg, &outs[c.Rank()])
		return err
	})
	return rows[0], outs[0].String(), err
}

// TestSweep runs every collective's default pair on two ranks, with
// sizes of one element, of a length that is not a power of two and of a
// few KiB: every call's result is checked inside sweep, and the table
// has a row per size with a time for each algorithm.
func TestSweep(t *testing.T) {
	for _, coll := range []string{"allreduce", "allgather", "bcast", "reducescatter"} {
		t.Run(coll, func(t *testing.T) {
			cfg, err := parseConfig(coll, "", "4,12,4K", 2, 1)
			require.NoError(t, err)
			rows, table, err := runSweep(t, 2, cfg)
			require.NoError(t, err)
			require.Len(t, rows, 3)
			for i, bytes := range []int{4, 12, 4096} {
				require.Equal(t, bytes, rows[i].Bytes)
				require.Positive(t, rows[i].Micros[0])
				require.Positive(t, rows[i].Micros[1])
			}
			a, b := cfg.Algos[0].String(), cfg.Algos[1].String()
			require.Regexp(t, fmt.Sprintf(`^%s of float32 over 2 ranks, 2 timed calls after 1 warm-up; .*; ratio = %s / %s\n`, coll, b, a), table)
			require.Regexp(t, fmt.Sprintf(`\n +size +%s µs +%s µs +ratio\n`, a, b), table)
			for _, size := range []string{"4 B", "12 B", "4 KiB"} {
				require.Regexp(t, `(?m)^ +`+size+`( +[0-9]+\.[0-9]){2} +[0-9]+\.[0-9]{2}$`, table)
			}
		})
	}
}

// TestSweepRefusesAlgorithm: an algorithm the collective does not have
// fails the sweep, naming the call, rather than timing something else.
func TestSweepRefusesAlgorithm(t *testing.T) {
	cfg, err := parseConfig("allgather", "ring,tree", "8", 1, 1)
	require.NoError(t, err)
	_, _, err = runSweep(t, 2, cfg)
	require.ErrorIs(t, err, codec.ErrInvalid)
	require.ErrorContains(t, err, "allgather of 8 bytes with tree")
}

// TestCheck: the check catches a wrong element and a call that wrote
// nothing, so a sweep cannot time an algorithm that computes garbage.
func TestCheck(t *testing.T) {
	cs, err := comm.NewLocal(1)
	require.NoError(t, err)
	defer cs[0].Close()
	for _, coll := range []string{"allreduce", "allgather", "reducescatter"} {
		t.Run(coll, func(t *testing.T) {
			bn, err := newBench(cs[0], coll, 5)
			require.NoError(t, err)
			require.NoError(t, bn.run(t.Context(), collective.WithAlgorithm(collective.Ring)))
			require.NoError(t, bn.check())
			bn.out[3]++
			require.ErrorContains(t, bn.check(), "element 3 of 5 is")
			bn.reset()
			require.ErrorContains(t, bn.check(), "element 0 of 5 is NaN")
		})
	}
}

func TestParseConfig(t *testing.T) {
	cfg, err := parseConfig("AllReduce", "rabenseifner, ring_chunked", "8,3K,2M", 5, 2)
	require.NoError(t, err)
	require.Equal(t, config{Collective: "allreduce", Algos: [2]collective.Algorithm{collective.Rabenseifner, collective.RingChunked},
		Sizes: []int{8, 3 << 10, 2 << 20}, Iters: 5, Warmup: 2}, cfg)

	for _, tt := range []struct{ coll, algos, sizes, want string }{
		{"alltoall", "", "8", `-collective "alltoall"`},
		{"allreduce", "ring", "8", "want two algorithms"},
		{"allreduce", "ring,tree,chain", "8", "want two algorithms"},
		{"allreduce", "ring,quantum", "8", "-algos"},
		{"allreduce", "", "6", `"6" is not a positive multiple of 4 bytes`},
		{"allreduce", "", "8,x", `"x" is not`},
		{"allreduce", "", "0", `"0" is not`},
	} {
		_, err := parseConfig(tt.coll, tt.algos, tt.sizes, 1, 1)
		require.ErrorContains(t, err, tt.want, "%+v", tt)
	}
	_, err = parseConfig("allreduce", "", "8", 1, 0)
	require.ErrorContains(t, err, "must be at least 1")
}

func TestBinary(t *testing.T) {
	for n, want := range map[int]string{4: "4 B", 1000: "1000 B", 1024: "1 KiB", 1536: "1536 B", 3 << 20: "3 MiB"} {
		require.Equal(t, want, binary(n))
	}
}

// TestMainLocal runs the command itself, this test binary in main, with
// -local 2, and checks the shape of its table.
func TestMainLocal(t *testing.T) {
	out, err := exampletest.Run(t, "-local", "2", "-sizes", "8,1K", "-iters", "3", "-warmup", "1")
	require.NoError(t, err, "%s", out)
	require.Regexp(t, regexp.MustCompile(`^allreduce of float32 over 2 ranks, 3 timed calls after 1 warm-up; µs per call, the slowest rank's mean; ratio = recursive_doubling / ring
 +size +ring µs +recursive_doubling µs +ratio
 +8 B +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[0-9]+\.[0-9]{2}
 +1 KiB +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[0-9]+\.[0-9]{2}
$`), string(out))
}
