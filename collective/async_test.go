package collective

import (
	"context"
	"fmt"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
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
