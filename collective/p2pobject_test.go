package collective

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// workerResult is what a worker sends its coordinator in the object tests.
type workerResult struct {
	ID    int
	Name  string
	Grad  []float32
	Notes map[string]int
}

// TestObjectsPointToPoint: workers send results as objects, the
// coordinator receives them from any source with both codecs, and a
// message of another type is the receiver's error alone: the job goes
// on.
func TestObjectsPointToPoint(t *testing.T) {
	for _, tr := range []string{"mem", "tcp", "shm"} {
		for _, oc := range []struct {
			name string
			c    ObjectCodec
		}{{"raw", RawCodec}, {"gob", GobCodec}} {
			t.Run(tr+"/"+oc.name, func(t *testing.T) {
				const n = 4
				cs := job(t, n, comm.WithTransport(tr))
				opts := []Option{WithObjectCodec(oc.c)}
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					me := c.Rank()
					if me != 0 {
						r := workerResult{ID: me, Name: fmt.Sprint("rank ", me), Grad: make([]float32, 1000*me), Notes: map[string]int{"rank": me}}
						for i := range r.Grad {
							r.Grad[i] = float32(i * me)
						}
						if err := SendObject(ctx, c, 0, 7, r, opts...); err != nil {
							return err
						}
						if me == 1 {
							if err := SendObject(ctx, c, 0, 8, "not a workerResult", opts...); err != nil {
								return err
							}
						}
						return Barrier(ctx, c)
					}
					var seen []int
					for range n - 1 {
						r, st, err := RecvObject[workerResult](ctx, c, comm.AnySource, 7, opts...)
						if err != nil {
							return err
						}
						if r.ID != st.Source || st.Tag != 7 || len(r.Grad) != 1000*r.ID || r.Notes["rank"] != r.ID || r.Name != fmt.Sprint("rank ", r.ID) {
							return fmt.Errorf("workerResult %+v with status %+v", r.ID, st)
						}
						for i, g := range r.Grad {
							if g != float32(i*r.ID) {
								return fmt.Errorf("rank %d's gradient %d is %v", r.ID, i, g)
							}
						}
						seen = append(seen, st.Source)
					}
					slices.Sort(seen)
					if !slices.Equal(seen, []int{1, 2, 3}) {
						return fmt.Errorf("results from ranks %v", seen)
					}
					_, st, err := RecvObject[workerResult](ctx, c, comm.AnySource, comm.AnyTag, opts...)
					if !errors.Is(err, comm.ErrMismatch) || st.Source != 1 {
						return fmt.Errorf("a string received as a workerResult: %v (status %+v)", err, st)
					}
					return Barrier(ctx, c) // the job goes on
				})
			})
		}
	}
}

// TestSendObjectRefusesWhatDoesNotEncode: a value gob cannot encode is
// the sender's error, naming the type, and nothing is sent.
func TestSendObjectRefusesWhatDoesNotEncode(t *testing.T) {
	cs := job(t, 2)
	err := SendObject(context.Background(), cs[0], 1, 0, func() {})
	require.ErrorIs(t, err, codec.ErrInvalid)
	require.ErrorContains(t, err, "func()")
	_, ok, err := cs[1].Iprobe(comm.AnySource, comm.AnyTag)
	require.NoError(t, err)
	require.False(t, ok, "something was sent")
}
