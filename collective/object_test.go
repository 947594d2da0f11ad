package collective

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/gocoll/gocoll/comm"
)

type runInfo struct {
	Name   string
	Rank   int
	Labels map[string]float64
	Vocab  []string
}

// infoOf is rank r's value. gob decodes an empty slice as nil, so rank
// 0's vocabulary is nil rather than empty.
func infoOf(r int) runInfo {
	v := runInfo{Name: fmt.Sprint("worker-", r), Rank: r, Labels: map[string]float64{"lr": 0.1 * float64(r)}}
	for i := range r {
		v.Vocab = append(v.Vocab, fmt.Sprint("word", i))
	}
	return v
}

func TestObjects(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			cs := job(t, n)
			root := n / 2
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				var v runInfo
				if me == root {
					v = infoOf(root)
				}
				if err := BcastObject(ctx, c, &v, root); err != nil {
					return err
				}
				if !reflect.DeepEqual(v, infoOf(root)) {
					return fmt.Errorf("BcastObject gave %+v", v)
				}
				all, err := AllgatherObject(ctx, c, infoOf(me))
				if err != nil {
					return err
				}
				gathered, err := GatherObject(ctx, c, infoOf(me), root)
				if err != nil {
					return err
				}
				if me != root && gathered != nil {
					return fmt.Errorf("GatherObject returned %d values off the root", len(gathered))
				}
				for r := range n {
					if !reflect.DeepEqual(all[r], infoOf(r)) {
						return fmt.Errorf("AllgatherObject[%d] = %+v", r, all[r])
					}
					if me == root && !reflect.DeepEqual(gathered[r], infoOf(r)) {
						return fmt.Errorf("GatherObject[%d] = %+v", r, gathered[r])
					}
				}
				return nil
			})
		})
	}
}
