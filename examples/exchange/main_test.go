package main

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/examples/internal/exampletest"
	"github.com/gocoll/gocoll/examples/internal/ranks"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

// sent is the small buffer rank r sends to the next rank.
func sent(r int) []float32 {
	return []float32{float32(r), float32(r) + 0.125, float32(r) + 0.25, float32(r) + 0.375,
		float32(r) + 0.5, float32(r) + 0.625, float32(r) + 0.75, float32(r) + 0.875}
}

// runRanks runs run on n ranks in this process with buffers of mib MiB
// timed over rounds rounds, and returns every rank's received small
// buffer and the ranks' errors, joined.
func runRanks(t *testing.T, n, mib, rounds int) ([][]float32, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got := make([][]float32, n)
	err := ranks.Run(ctx, n, nil, func(ctx context.Context, c *comm.Comm) error {
		var err error
		got[c.Rank()], err = run(ctx, c, mib, rounds, io.Discard)
		return err
	})
	return got, err
}

// TestRun runs the exchange on 1, 2 and 4 ranks in this process, with 1 MiB
// buffers and 2 timed rounds: every rank receives, element for element,
// the buffer its predecessor on the ring sent, and a rank alone receives
// its own.
func TestRun(t *testing.T) {
	for _, tt := range []struct {
		n    int
		from []int // the rank each rank receives from
	}{
		{1, []int{0}},
		{2, []int{1, 0}},
		{4, []int{3, 0, 1, 2}},
	} {
		t.Run(fmt.Sprintf("n=%d", tt.n), func(t *testing.T) {
			got, err := runRanks(t, tt.n, 1, 2)
			require.NoError(t, err)
			for r, from := range tt.from {
				require.Equal(t, sent(from), got[r], "rank %d", r)
			}
		})
	}
}

// TestRunRefuses: buffers of no MiB or no timed rounds fail every rank
// before it sends anything, so none waits for another.
func TestRunRefuses(t *testing.T) {
	for _, tt := range []struct{ mib, rounds int }{{0, 2}, {1, 0}} {
		t.Run(fmt.Sprintf("mib=%d,rounds=%d", tt.mib, tt.rounds), func(t *testing.T) {
			_, err := runRanks(t, 2, tt.mib, tt.rounds)
			require.ErrorContains(t, err, "must be at least 1")
		})
	}
}

// TestMainLocal runs the command itself, this test binary in main, with
// -local 3 -mib 1 -rounds 2, and checks that every rank prints what it
// received and its bandwidth; the ranks' lines come in any order.
func TestMainLocal(t *testing.T) {
	out, err := exampletest.Run(t, "-local", "3", "-mib", "1", "-rounds", "2")
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `^(rank [0-2]/3.*\n){6}$`, string(out))
	for r, from := range []int{2, 0, 1} {
		require.Contains(t, string(out), fmt.Sprintf("rank %d/3 received from rank %d: %v\n", r, from, sent(from)))
		require.Regexp(t, fmt.Sprintf(`(?m)^rank %d/3: 2 × 1 MiB to rank %d in [0-9.]+[µm]?s: [0-9]+\.[0-9]{2} GB/s per direction$`, r, (r+1)%3), string(out))
	}
}
