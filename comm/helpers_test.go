package comm_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
)

// transports are the link kinds every in-process test runs over.
var transports = []string{"mem", "tcp", "shm"}

// watchdog bounds every test job: a hang becomes a failure naming the
// ranks that did not return.
const watchdog = 30 * time.Second

// newJob starts n ranks in this process and closes them when the test ends.
func newJob(t *testing.T, n int, opts ...comm.Option) []*comm.Comm {
	t.Helper()
	cs, err := comm.NewLocal(n, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
		wg.Wait()
	})
	return cs
}

// run calls f for every rank in its own goroutine and returns each rank's
// error. It fails the test if a rank has not returned within the watchdog.
func run(t *testing.T, cs []*comm.Comm, f func(ctx context.Context, c *comm.Comm) error) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	errs := make([]error, len(cs))
	done := make(chan int, len(cs))
	for i, c := range cs {
		go func() {
			errs[i] = f(ctx, c)
			done <- i
		}()
	}
	finished := make([]bool, len(cs))
	for range cs {
		select {
		case i := <-done:
			finished[i] = true
		case <-time.After(watchdog + 5*time.Second):
			t.Fatalf("ranks still running after %v: finished=%v", watchdog, finished)
		}
	}
	return errs
}

// runOK is run where every rank must succeed.
func runOK(t *testing.T, cs []*comm.Comm, f func(ctx context.Context, c *comm.Comm) error) {
	t.Helper()
	for r, err := range run(t, cs, f) {
		require.NoError(t, err, "rank %d", r)
	}
}

// payload is the deterministic content of message seq from src to dst.
func payload(src, dst, seq, n int) []byte {
	// The bytes count up from a base, so they repeat every 256: one
	// period made byte by byte, and the rest copied, since the race
	// detector checks every store of a loop.
	var period [256]byte
	for i := range period {
		period[i] = byte(src*131 + dst*31 + seq*7 + i)
	}
	return slices.Repeat(period[:], (n+255)/256)[:n:n]
}

func checkPayload(got []byte, src, dst, seq int) error {
	want := payload(src, dst, seq, len(got))
	if bytes.Equal(got, want) {
		return nil // byte by byte only to name the first difference
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("message %d from rank %d: byte %d is %d, want %d", seq, src, i, got[i], want[i])
		}
	}
	return nil
}

// engine is c as the engine knows it, for tests of what only package
// collective reaches.
func engine(c *comm.Comm) *core.Comm { return (*core.Comm)(c) }
