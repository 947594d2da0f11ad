package collective

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/flight"
)

// TestFlightRecorderHang checks the flight recorder on a stuck job in
// this process: rank 2 stays in its own code where the others call a
// collective, and the diagnosis of the ranks' dumps names rank 2 and the
// call the others wait in. Then rank 2 makes the call and the job ends
// well. The wait for the others' slow waits to show in their dumps is
// bounded by the watchdog; no timing decides the outcome.
func TestFlightRecorderHang(t *testing.T) {
	const n = 3
	for _, tc := range []struct {
		name, transport string
		algo            Algorithm
		want            string // the call, as the diagnosis names it
	}{
		{"links", "mem", RecursiveDoubling, "Allreduce #3"},
		{"segment", "auto", Shm, "Allreduce #3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := job(t, n, comm.WithTransport(tc.transport))
			release := make(chan struct{})
			done := make(chan []error, 1)
			go func() {
				done <- onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
					for i := range 3 {
						if i == 2 && c.Rank() == 2 {
							<-release // in its own code
						}
						if err := Allreduce(ctx, c, make([]float32, 4), codec.Sum, WithAlgorithm(tc.algo)); err != nil {
							return err
						}
					}
					return nil
				})
			}()
			var diagnosis []string
			deadline := time.Now().Add(watchdog)
			for {
				dumps := make([]*flight.Dump, n)
				for r, c := range cs {
					dumps[r] = (*core.Comm)(c).FlightDump("test")
				}
				diagnosis = flight.Diagnose(n, dumps)
				// Rank 2 may still be ending call #2 when the others
				// already wait in #3: its dump then shows it in #2.
				if waiting(dumps, 3) == n-1 && !runs(dumps[2]) || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			// Rank 2 goes on before anything is asserted, so that a
			// failure does not leave the ranks waiting for it.
			close(release)
			errs := <-done
			text := strings.Join(diagnosis, "\n")
			require.Contains(t, text, "rank 2", text)
			require.Contains(t, text, tc.want, text)
			require.Contains(t, text, "own code", text)
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}
		})
	}
}

// runs reports whether an operation runs on the rank whose dump d is.
func runs(d *flight.Dump) bool {
	for _, c := range d.Comms {
		for _, op := range c.Ops {
			if op.Running {
				return true
			}
		}
	}
	return false
}

// waiting counts the dumps whose operation seq runs and waits. (A call
// that is done keeps the last slow wait it had.)
func waiting(dumps []*flight.Dump, seq uint64) int {
	n := 0
	for _, d := range dumps {
		for _, c := range d.Comms {
			for _, op := range c.Ops {
				if op.Seq == seq && op.Running && op.WaitFor >= 0 {
					n++
				}
			}
		}
	}
	return n
}

// TestFlightDumpFormat checks what a rank's dump says of a call that
// waits: the call, its number and the rank it waits for.
func TestFlightDumpFormat(t *testing.T) {
	cs := job(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Bcast(ctx, cs[1], make([]int64, 2), 0, WithAlgorithm(Tree)) }()
	var d *flight.Dump
	for deadline := time.Now().Add(watchdog); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if d = (*core.Comm)(cs[1]).FlightDump("test"); waiting([]*flight.Dump{d}, 1) == 1 {
			break
		}
	}
	var b strings.Builder
	require.NoError(t, d.Format(&b))
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	for _, want := range []string{"Bcast(2 × int64, root 0) with tree", "#1", "rank 0"} {
		require.Contains(t, b.String(), want)
	}
}

// TestFlightDumpAsync checks that a dump shows an AllreduceAsync that
// waits as running and async, over links and through the segment's fast
// lines, and as done once it ended.
func TestFlightDumpAsync(t *testing.T) {
	for _, transport := range []string{"mem", "auto"} {
		t.Run(transport, func(t *testing.T) {
			cs := job(t, 2, comm.WithTransport(transport))
			ctx, cancel := context.WithCancel(context.Background())
			req := AllreduceAsync(ctx, cs[0], make([]float32, 2), codec.Sum) // rank 1 never joins
			running := func() *flight.Op {
				d := (*core.Comm)(cs[0]).FlightDump("test")
				for _, c := range d.Comms {
					for i, op := range c.Ops {
						if op.Seq == 1 && op.Running && op.Async {
							return &c.Ops[i]
						}
					}
				}
				return nil
			}
			var op *flight.Op
			for deadline := time.Now().Add(watchdog); op == nil && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				op = running()
			}
			require.NotNil(t, op, "the async call is not in the dump as running")
			require.Equal(t, "Allreduce", op.Kind)
			cancel()
			require.ErrorIs(t, req.Wait(context.Background()), context.Canceled)
			require.Nil(t, running(), "the async call still shows as running after it ended")
		})
	}
}
