package main

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
)

// TestRun runs the demo on two ranks in this process: rank 0 prints the
// average, the bandwidth and a line per collective and algorithm that
// ran, from the communicator's counts.
func TestRun(t *testing.T) {
	comms, err := comm.NewLocal(2)
	require.NoError(t, err)
	outs := make([]bytes.Buffer, len(comms))
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			defer c.Close()
			errs[r] = run(t.Context(), c, &outs[r], 32, 3)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	out := outs[0].String()
	require.Contains(t, out, "rank 0/2: average gradient [1.5 1.5")
	require.Regexp(t, `(?m)^allreduce of 32 bytes of float32 over 2 ranks: .* busbw [0-9.]+ GB/s$`, out)
	// The gradient's, the warm-up and three timed calls, all of 32 bytes.
	require.Regexp(t, `(?m)^Allreduce: [a-z_]+ over mem, 5 calls, [0-9]+ B sent$`, out)
	require.Regexp(t, `(?m)^Barrier: [a-z_]+ over mem, 1 call, [0-9]+ B sent$`, out)
	require.Equal(t, "rank 1/2: average gradient [1.5 1.5 1.5 1.5 1.5 1.5 1.5 1.5]\n", outs[1].String(), "rank 1 prints its average only")
}

func TestDecimal(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 3_100_000: "3.1 MB", 2_500_000_000: "2.5 GB"} {
		require.Equal(t, want, decimal(n))
	}
}
