package collective

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/testutil"
)

// TestAllreduceAsyncOverlap issues many allreduces of different sizes and
// algorithms at once, on the world and on a sub-communicator, and waits in
// reverse: each must still match its own counterpart on every rank.
func TestAllreduceAsyncOverlap(t *testing.T) {
	for _, tr := range []string{"mem", "tcp"} {
		for _, n := range []int{2, 3, 4} {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := job(t, n, comm.WithTransport(tr))
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					sub, err := c.Split(ctx, 0, -c.Rank())
					if err != nil {
						return err
					}
					const buckets = 12
					algos := []Algorithm{RecursiveDoubling, Ring, RingChunked}
					bufs := make([][]float32, buckets)
					reqs := make([]*Request, buckets)
					for i := range buckets {
						on := c
						if i%3 == 2 {
							on = sub
						}
						bufs[i] = input[float32](on.Rank(), 100*i+1, i)
						reqs[i] = AllreduceAsync(ctx, on, bufs[i], codec.Sum,
							WithAlgorithm(algos[i%len(algos)]), WithChunkSize(256))
					}
					for i := buckets - 1; i >= 0; i-- {
						if err := reqs[i].Wait(ctx); err != nil {
							return fmt.Errorf("bucket %d: %w", i, err)
						}
						on := c
						if i%3 == 2 {
							on = sub
						}
						inputs := make([][]float32, n)
						for r := range n {
							inputs[r] = input[float32](r, 100*i+1, i)
						}
						if err := equalBits(bufs[i], reference(codec.Sum, inputs)); err != nil {
							return fmt.Errorf("bucket %d on rank %d of %d: %w", i, on.Rank(), on.Size(), err)
						}
					}
					return nil
				})
			})
		}
	}
}

// TestAsyncWaitLeavesTheProcessor: an AllreduceAsync that waits on a
// shared segment for a rank that has not called yet sleeps without
// holding a processor, so that the work it overlaps runs. A goroutine in
// a system call (a futex sleep) keeps its processor until the runtime's
// monitor takes it back, up to 20 ms later; before, a rank computing
// beside a waiting AllreduceAsync at GOMAXPROCS=1 took 26 ms for 16 ms of
// work.
func TestAsyncWaitLeavesTheProcessor(t *testing.T) {
	cs := job(t, 2, comm.WithTransport("auto"))
	require.NotNil(t, (*core.Comm)(cs[0]).Segment(), "the ranks share no segment")
	ctx := context.Background()
	bufs := [][]float32{{1, 2}, {3, 4}}
	r := AllreduceAsync(ctx, cs[0], bufs[0], codec.Sum)
	// Past its polling (5 ms), the waiting goroutine sleeps.
	state := testutil.Asleep(t, "shmem.(*Waiter).Wait", "AllreduceAsync")
	require.NotContains(t, state, "syscall", "the waiting AllreduceAsync sleeps in a system call")
	require.NoError(t, Allreduce(ctx, cs[1], bufs[1], codec.Sum))
	require.NoError(t, r.Wait(ctx))
	require.Equal(t, []float32{4, 6}, bufs[0])
	require.Equal(t, []float32{4, 6}, bufs[1])
}

// asyncKinds issue each async collective with small buffers on a job of
// two ranks: issue starts rank c.Rank()'s part, and check, once Wait
// returned nil, compares its result with what it must be.
var asyncKinds = []struct {
	name  string
	issue func(ctx context.Context, c *comm.Comm) (r *Request, check func() error)
}{
	{"AllreduceAsync(3 × float32, sum)", func(ctx context.Context, c *comm.Comm) (*Request, func() error) {
		buf := []float32{1, 2, float32(c.Rank())}
		return AllreduceAsync(ctx, c, buf, codec.Sum), func() error { return equalBits(buf, []float32{2, 4, 1}) }
	}},
	{"ReduceScatterAsync(4 × float32, sum)", func(ctx context.Context, c *comm.Comm) (*Request, func() error) {
		send, recv := []float32{1, 2, 3, float32(c.Rank())}, make([]float32, 2)
		want := [][]float32{{2, 4}, {6, 1}}[c.Rank()]
		return ReduceScatterAsync(ctx, c, send, recv, codec.Sum), func() error { return equalBits(recv, want) }
	}},
	{"AllgatherAsync(4 × float32)", func(ctx context.Context, c *comm.Comm) (*Request, func() error) {
		recv := make([]float32, 4)
		return AllgatherAsync(ctx, c, []float32{1, float32(c.Rank())}, recv), func() error { return equalBits(recv, []float32{1, 0, 1, 1}) }
	}},
}

// TestAsyncWaitContext: a Wait whose context ends before the collective
// completes (rank 1 has not issued its part yet) returns at once, with an
// error that wraps the context's (and its cause) and names the call,
// and leaves the collective in flight: Done stays open, and once rank 1
// issues its part a second Wait, from several goroutines at once,
// returns nil and the result. A Wait after completion returns the result
// whatever its context.
func TestAsyncWaitContext(t *testing.T) {
	for _, tr := range []string{"mem", "tcp", "shm", "auto"} {
		for _, kind := range asyncKinds {
			t.Run(tr+"/"+kind.name, func(t *testing.T) {
				cs := job(t, 2, comm.WithTransport(tr))
				waited := make(chan struct{})
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					if c.Rank() == 1 {
						<-waited // rank 0 has given up waiting, three times
						r, check := kind.issue(ctx, c)
						if err := r.Wait(ctx); err != nil {
							return err
						}
						return check()
					}
					r, check := kind.issue(ctx, c)
					err := waitCut(r, kind.name)
					close(waited)
					if err != nil {
						return err
					}
					errs := make(chan error, 3)
					for range cap(errs) {
						go func() { errs <- r.Wait(ctx) }()
					}
					for range cap(errs) {
						if err := <-errs; err != nil {
							return fmt.Errorf("the second Wait: %w", err)
						}
					}
					if err := check(); err != nil {
						return err
					}
					stopped, cancel := context.WithCancel(ctx)
					cancel()
					if err := r.Wait(stopped); err != nil {
						return fmt.Errorf("a Wait after completion with an ended context: %w", err)
					}
					return nil
				})
			})
		}
	}
}

// waitCut waits for r, which cannot complete yet, with contexts that end:
// cancelled before, with a deadline during the wait, and cancelled with
// a cause. Each must return at once with an error naming the call (name)
// and wrapping the context's, and leave r in flight.
func waitCut(r *Request, name string) error {
	cause := errors.New("the step was abandoned")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	timed, cancelTimed := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelTimed()
	caused, cancelCaused := context.WithCancelCause(context.Background())
	cancelCaused(cause)
	for _, tt := range []struct {
		ctx  context.Context
		want []error
	}{
		{cancelled, []error{context.Canceled}},
		{timed, []error{context.DeadlineExceeded}},
		{caused, []error{context.Canceled, cause}},
	} {
		start := time.Now()
		err := r.Wait(tt.ctx)
		if took := time.Since(start); took > time.Second {
			return fmt.Errorf("Wait took %v to see its context end", took)
		}
		if err == nil {
			return errors.New("Wait returned nil before rank 1 issued its part")
		}
		for _, w := range tt.want {
			if !errors.Is(err, w) {
				return fmt.Errorf("Wait returned %v, which does not wrap %v", err, w)
			}
		}
		var oe *comm.OpError
		if !errors.As(err, &oe) || oe.Rank != 0 || oe.Timeout() != errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("Wait returned %#v, not an OpError of rank 0 that says whether it timed out", err)
		}
		if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), ": wait") {
			return fmt.Errorf("Wait's error %q does not name %s: wait", err, name)
		}
		select {
		case <-r.Done():
			return errors.New("the collective completed before rank 1 issued its part")
		default:
		}
	}
	return nil
}
