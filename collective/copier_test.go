package collective

import (
	"context"
	"fmt"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/shmem"
)

// TestPutsAroundTheCaches: with every rank's segment Copier taught that
// copies around the caches are the faster ones, the collectives through
// the segment copy that way and give the results they give otherwise,
// for counts that do not fill the last 128-byte pass and a buffer that
// starts off a 32-byte boundary.
func TestPutsAroundTheCaches(t *testing.T) {
	for _, n := range ranksFor([]int{2, 3, 4}) {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n, comm.WithTransport("shm"))
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				teachAround((*core.Comm)(c).Segment().Copier())
				me := c.Rank()
				for _, m := range sizesFor([]int{16<<10 + 3, 300_001}) {
					inputs := make([][]float32, n)
					for r := range inputs {
						inputs[r] = input[float32](r, m, 5)
					}
					// A buffer 4 bytes past an allocation's start.
					buf := make([]float32, m+1)[1:]
					copy(buf, inputs[me])
					if err := Allreduce(ctx, c, buf, codec.Sum); err != nil {
						return err
					}
					if err := equalBits(buf, reference(codec.Sum, inputs)); err != nil {
						return fmt.Errorf("Allreduce of %d: %w", m, err)
					}
					copy(buf, inputs[me])
					if err := Bcast(ctx, c, buf, 1); err != nil {
						return err
					}
					if err := equalBits(buf, inputs[1]); err != nil {
						return fmt.Errorf("Bcast of %d: %w", m, err)
					}
					all := make([]float32, n*m)
					if err := Allgather(ctx, c, inputs[me], all); err != nil {
						return err
					}
					for r := range n {
						if err := equalBits(all[r*m:(r+1)*m], inputs[r]); err != nil {
							return fmt.Errorf("Allgather of %d, rank %d's part: %w", m, r, err)
						}
					}
				}
				return nil
			})
		})
	}
}

// sizesFor is ms, or under the race detector its first.
func sizesFor(ms []int) []int {
	if raceEnabled {
		return ms[:1]
	}
	return ms
}

// teachAround makes cp choose copies around the caches for every kind of
// operation and size, as it does on a host whose caches hand lines over
// slowly.
func teachAround(cp *shmem.Copier) {
	for kind := range 32 {
		for class := 14; class < 28; class++ {
			for range 4 {
				bytes := 1 << class
				around := cp.Choose(kind, bytes)
				nanos := int64(1000)
				if around {
					nanos = 10
				}
				cp.Learn(kind, bytes, around, 1024, nanos)
			}
		}
	}
}
