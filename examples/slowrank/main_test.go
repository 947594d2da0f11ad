package main

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
)

// TestRun runs the loop on 4 ranks in this process and checks that each
// prints its Stats line for the Allreduce calls.
func TestRun(t *testing.T) {
	const n, steps = 4, 3
	cs, err := comm.NewLocal(n, comm.WithStatsSampling(1))
	require.NoError(t, err)
	out := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			errs[r] = run(context.Background(), c, &out[r], steps, 0, false)
		}()
	}
	wg.Wait()
	for r := range n {
		require.NoError(t, errs[r], "rank %d", r)
		require.Contains(t, out[r].String(), fmt.Sprintf("rank %d: Allreduce ", r))
		require.Contains(t, out[r].String(), fmt.Sprintf("%d calls", steps))
		require.Contains(t, out[r].String(), "wait ")
	}
}
