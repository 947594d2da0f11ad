package collective

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// transports are the transports the misuse tests run on: links in
// memory, over tcp and over shared memory, and auto, where the ranks of
// this process share a segment.
var transports = []string{"mem", "tcp", "shm", "auto"}

// TestNilCommunicator: every collective, typed or not, refuses a nil
// communicator with ErrInvalid instead of panicking.
func TestNilCommunicator(t *testing.T) {
	ctx := context.Background()
	buf := make([]float32, 4)
	tests := []struct {
		name string
		call func() error
	}{
		{"Allreduce", func() error { return Allreduce(ctx, nil, buf, codec.Sum) }},
		{"Bcast", func() error { return Bcast(ctx, nil, buf, 0) }},
		{"Barrier", func() error { return Barrier(ctx, nil) }},
		{"Gather", func() error { return Gather(ctx, nil, buf, buf, 0) }},
		{"Allgather", func() error { return Allgather(ctx, nil, buf, buf) }},
		{"AllreduceAsync", func() error { return AllreduceAsync(ctx, nil, buf, codec.Sum).Wait(ctx) }},
		{"BcastObject", func() error { v := 1; return BcastObject(ctx, nil, &v, 0) }},
		{"AllgatherObject", func() error { _, err := AllgatherObject(ctx, nil, "x"); return err }},
		{"GatherObject", func() error { _, err := GatherObject(ctx, nil, "x", 0); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = tt.call() })
			require.ErrorIs(t, err, codec.ErrInvalid)
			require.ErrorContains(t, err, "nil communicator")
		})
	}
}

// TestUserOpPanics: a user op that panics fails that rank's call with an
// error naming the rank and the op, and aborts the job, so that the others
// fail at once instead of waiting for the timeout: in the call, if they
// still wait for the culprit, else in their next one.
func TestUserOpPanics(t *testing.T) {
	for _, tr := range transports {
		for _, algo := range []Algorithm{Auto, RecursiveDoubling, Tree} {
			t.Run(fmt.Sprintf("%s/%s", tr, algo), func(t *testing.T) {
				const n = 3
				cs := job(t, n, comm.WithTransport(tr), comm.WithTimeout(watchdog))
				// The first rank to apply the op is the culprit.
				var culprit atomic.Int32
				culprit.Store(-1)
				errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
					op := codec.NewOp("fragile", func(dst, src []int32) {
						if culprit.CompareAndSwap(-1, int32(c.Rank())) {
							panic("fragile op gave up")
						}
					}, true)
					err := Allreduce(ctx, c, make([]int32, 64), op, WithAlgorithm(algo))
					if err == nil {
						err = Barrier(ctx, c)
					}
					return err
				})
				who := int(culprit.Load())
				require.GreaterOrEqual(t, who, 0, "nobody applied the op")
				for r, err := range errs {
					require.Error(t, err, "rank %d", r)
					require.NotErrorIs(t, err, comm.ErrTimeout, "rank %d", r)
					require.ErrorContains(t, err, fmt.Sprintf(`user op "fragile" panicked on rank %d: fragile op gave up`, who), "rank %d", r)
					if r == who {
						require.ErrorIs(t, err, codec.ErrInvalid)
					} else {
						require.True(t, errors.Is(err, comm.ErrAborted) || errors.Is(err, codec.ErrInvalid), "rank %d: %v", r, err)
					}
				}
			})
		}
	}
}

// TestCanceledContext: a call whose context has ended before it starts
// fails on every rank, also on a rank that would wait for nobody (a
// Bcast's root over a shared segment).
func TestCanceledContext(t *testing.T) {
	calls := []struct {
		name string
		call rankCall
	}{
		{"bcast", func(ctx context.Context, c *comm.Comm) error { return Bcast(ctx, c, make([]int64, 8), 0) }},
		{"gather", func(ctx context.Context, c *comm.Comm) error {
			return Gather(ctx, c, make([]int64, 2), make([]int64, 2*c.Size()), 0)
		}},
		{"allreduce", func(ctx context.Context, c *comm.Comm) error { return Allreduce(ctx, c, make([]int64, 8), codec.Sum) }},
		{"barrier", func(ctx context.Context, c *comm.Comm) error { return Barrier(ctx, c) }},
		{"async", func(ctx context.Context, c *comm.Comm) error {
			return AllreduceAsync(ctx, c, make([]int64, 8), codec.Sum).Wait(ctx)
		}},
	}
	for _, tr := range transports {
		cs := job(t, 3, comm.WithTransport(tr))
		for _, tt := range calls {
			t.Run(tr+"/"+tt.name, func(t *testing.T) {
				for r, err := range onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
					ctx, cancel := context.WithCancel(ctx)
					cancel()
					return tt.call(ctx, c)
				}) {
					require.ErrorIs(t, err, context.Canceled, "rank %d", r)
				}
			})
		}
		// The job is intact: the canceled calls took no part in it.
		allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
			return Allreduce(ctx, c, make([]int64, 8), codec.Sum)
		})
	}
}

// TestConcurrentBlockingCalls: two goroutines that call blocking
// collectives on one communicator at once get an error wrapping
// ErrInvalid, and so does the call they overlapped; the job is aborted,
// so no rank returns data matched with the wrong call.
func TestConcurrentBlockingCalls(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const n = 2
			cs := job(t, n, comm.WithTransport(tr), comm.WithTimeout(watchdog))
			// Every rank's Allreduce calls its op, and the op, while the
			// Allreduce runs, has another goroutine call a Barrier.
			second := make([]error, n)
			tried := make([]bool, n)
			errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
				op := codec.NewOp("meddling", func(dst, src []float64) {
					if !tried[c.Rank()] {
						tried[c.Rank()] = true
						done := make(chan error)
						go func() { done <- Barrier(ctx, c) }()
						second[c.Rank()] = <-done
					}
				}, true)
				return Allreduce(ctx, c, make([]float64, 16), op)
			})
			// A rank may be told of the others' abort before it reduces.
			require.Contains(t, tried, true)
			for r := range n {
				if tried[r] {
					require.ErrorIs(t, second[r], codec.ErrInvalid, "rank %d's second call", r)
					require.ErrorContains(t, second[r], "Barrier called while Allreduce runs on this communicator in another goroutine", "rank %d", r)
				}
				require.Error(t, errs[r], "rank %d's first call", r)
				require.True(t, errors.Is(errs[r], codec.ErrInvalid) || errors.Is(errs[r], comm.ErrAborted), "rank %d: %v", r, errs[r])
			}
		})
	}
	// Async calls issued from several goroutines hold no communicator.
	t.Run("async", func(t *testing.T) {
		cs := job(t, 2)
		allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
			a := AllreduceAsync(ctx, c, make([]float64, 16), codec.Sum)
			b := AllreduceAsync(ctx, c, make([]float64, 16), codec.Sum)
			return errors.Join(a.Wait(ctx), b.Wait(ctx), Barrier(ctx, c))
		})
	})
}

// TestUserOpMisuse: user ops that cannot reduce are refused on the rank
// that passes them, with ErrInvalid, and abort the job.
func TestUserOpMisuse(t *testing.T) {
	sum32 := codec.NewOp("sum32", func(dst, src []int32) {
		for i := range dst {
			dst[i] += src[i]
		}
	}, true)
	tests := []struct {
		name string
		op   codec.Op
		want string
	}{
		{"nil function", codec.NewOp[float32]("empty", nil, true), `user op "empty" has no function`},
		{"other element type", sum32, `user op "sum32" reduces int32, not float32`},
	}
	for _, tt := range tests {
		for _, tr := range []string{"mem", "auto"} {
			t.Run(tt.name+"/"+tr, func(t *testing.T) {
				requireRefused(t, 3, []int{2}, func(ctx context.Context, c *comm.Comm) error {
					op := codec.Sum
					if c.Rank() == 2 {
						op = tt.op
					}
					return Allreduce(ctx, c, make([]float32, 8), op)
				}, tt.want)
			})
		}
	}
}

// TestCallAfterPeerClosed: rank 1 closes its communicator and rank 0 makes
// one more collective. On every transport rank 0 must fail at once with
// ErrPeerClosed naming rank 1, not wait out the timeout, and both Close
// calls must return.
func TestCallAfterPeerClosed(t *testing.T) {
	calls := []struct {
		name string
		call func(ctx context.Context, c *comm.Comm) error
	}{
		{"Allreduce", func(ctx context.Context, c *comm.Comm) error {
			return Allreduce(ctx, c, make([]float32, 64), codec.Sum)
		}},
		{"Bcast", func(ctx context.Context, c *comm.Comm) error { return Bcast(ctx, c, make([]float32, 64), 1) }},
		{"Barrier", func(ctx context.Context, c *comm.Comm) error { return Barrier(ctx, c) }},
		{"Gather", func(ctx context.Context, c *comm.Comm) error {
			return Gather(ctx, c, make([]float32, 4), make([]float32, 8), 0)
		}},
	}
	for _, tr := range transports {
		for _, tc := range calls {
			t.Run(tr+"/"+tc.name, func(t *testing.T) {
				// The timeout is the test's watchdog: a rank that waits it
				// out fails with ErrTimeout, not ErrPeerClosed.
				cs, err := comm.NewLocal(2, comm.WithTransport(tr), comm.WithTimeout(watchdog/2))
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), watchdog)
				defer cancel()
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error { return tc.call(ctx, c) })
				closed := make(chan error, 1)
				go func() { closed <- cs[1].Close() }()
				err = tc.call(ctx, cs[0])
				require.ErrorIs(t, err, comm.ErrPeerClosed)
				require.ErrorContains(t, err, "rank 1")
				require.NoError(t, cs[0].Close())
				require.NoError(t, <-closed)
			})
		}
	}
}
