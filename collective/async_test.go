package collective

import (
	"context"
	"fmt"
	"testing"

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
						if err := reqs[i].Wait(); err != nil {
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
	require.NoError(t, r.Wait())
	require.Equal(t, []float32{4, 6}, bufs[0])
	require.Equal(t, []float32{4, 6}, bufs[1])
}
