package collective

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/stretchr/testify/require"
)

// trainStep is what a trainer reduces: numbers to sum, a trail of the
// ranks folded in (an op that does not commute), and a gradient.
type trainStep struct {
	Seq   int
	Loss  float64
	Trail string
	Grad  []float32
}

// stepOf is rank r's step with m gradient elements that do not sum
// exactly, so that only one order of the fold gives the expected bits,
// and a trail padded to pad bytes.
func stepOf(r, m, pad int) trainStep {
	s := trainStep{Seq: 1, Loss: 0.1 * float64(r+1), Trail: fmt.Sprint(r) + strings.Repeat(" ", pad)}
	if m > 0 {
		s.Grad = make([]float32, m)
		for i := range s.Grad {
			s.Grad[i] = 0.1*float32(i) + 0.37*float32(r)
		}
	}
	return s
}

// addSteps is the op of the tests: it refuses steps of different Seq,
// as a trainer's op would refuse gradients of different steps.
func addSteps(acc, x *trainStep) error {
	if acc.Seq != x.Seq {
		return fmt.Errorf("step %d and step %d", acc.Seq, x.Seq)
	}
	acc.Loss += x.Loss
	acc.Trail = strings.TrimSpace(acc.Trail) + "," + strings.TrimSpace(x.Trail)
	if len(acc.Grad) != len(x.Grad) {
		return fmt.Errorf("%d and %d gradients", len(acc.Grad), len(x.Grad))
	}
	for i, g := range x.Grad {
		acc.Grad[i] += g
	}
	return nil
}

// TestAllreduceObject: every rank ends with the fold of every rank's
// value in rank order, bit for bit, call after call, whether the values
// have one shape (their gradients then come by an Allgather and are
// viewed in place), gradients that differ in length, a head too long to
// go ahead (an Allgatherv, whose parts are copied), or fit the blocks
// whole; over memory, tcp and shared memory, through RawCodec and gob.
// With RawCodec a rank's gradient keeps its array.
func TestAllreduceObject(t *testing.T) {
	type round struct {
		name   string
		m, pad func(r int) int
	}
	rounds := []round{
		{"one shape", func(int) int { return 5000 }, func(int) int { return 0 }},
		{"one shape again", func(int) int { return 5000 }, func(int) int { return 0 }},
		{"a long head", func(int) int { return 5000 }, func(r int) int { return 200 * (r % 2) }},
		{"fits the blocks", func(int) int { return 3 }, func(int) int { return 0 }},
		{"one shape after", func(int) int { return 5000 }, func(int) int { return 0 }},
		{"no gradient", func(int) int { return 0 }, func(int) int { return 0 }},
	}
	// Long heads on even ranks shift the parts of the odd ranks that
	// follow them, which for one of four lengths stay aligned and are
	// viewed, over the arrays that the call before viewed: values that
	// viewed the last call's parts must not be decoded into.
	var shifts []round
	for k := range 4 {
		shifts = append(shifts,
			round{"one shape to view", func(int) int { return 5000 }, func(int) int { return 0 }},
			round{fmt.Sprint("long heads on even ranks ", k), func(int) int { return 5000 }, func(r int) int { return (200 + k) * (1 - r%2) }})
	}
	rounds = append(shifts, rounds...)
	for _, tr := range []string{"mem", "tcp", "shm"} {
		for _, oc := range objectCodecs()[:3] {
			for _, n := range ranksFor([]int{1, 2, 3, 5}) {
				t.Run(fmt.Sprintf("%s/%s/n=%d", tr, oc.name, n), func(t *testing.T) {
					cs := job(t, n, comm.WithTransport(tr))
					allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
						for _, rd := range rounds {
							v := stepOf(c.Rank(), rd.m(c.Rank()), rd.pad(c.Rank()))
							want := stepOf(0, rd.m(0), 0)
							for r := 1; r < n; r++ {
								x := stepOf(r, rd.m(r), 0)
								if err := addSteps(&want, &x); err != nil {
									return err
								}
							}
							array := v.Grad[:min(1, len(v.Grad))]
							if err := AllreduceObject(ctx, c, &v, addSteps, oc.opts...); err != nil {
								return fmt.Errorf("%s: %w", rd.name, err)
							}
							if err := equalSteps(v, want); err != nil {
								return fmt.Errorf("%s: %w", rd.name, err)
							}
							if oc.name != "gob" && len(array) > 0 && &v.Grad[0] != &array[0] {
								return fmt.Errorf("%s: the gradient has a new array", rd.name)
							}
						}
						return nil
					})
				})
			}
		}
	}
}

// TestAllreduceObjectReusesArrays: a loop that reduces values of one
// shape keeps, from call to call, the bytes the others' values arrive in
// (which their gradients view) and the array of its own value's
// gradient.
func TestAllreduceObjectReusesArrays(t *testing.T) {
	type grads struct{ Grad []float32 }
	sum := func(acc, x *grads) error { return ReduceLocal(acc.Grad, x.Grad, codec.Sum) }
	cs := job(t, 3, comm.WithTransport("mem"))
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		v := grads{Grad: make([]float32, 64<<10)}
		var rest *byte
		for i := range 10 {
			if err := AllreduceObject(ctx, c, &v, sum); err != nil {
				return err
			}
			h := hintsOf(c)
			s := takeScratch[grads](h, c.Size())
			at := unsafe.SliceData(s.rest)
			putScratch(h, s)
			switch {
			case at == nil:
				return fmt.Errorf("call %d: no memory kept for the others' values", i)
			case i > 0 && at != rest:
				return fmt.Errorf("call %d: the others' values arrived in new memory", i)
			}
			rest = at
		}
		return nil
	})
}

// ranksFor is ns, or under the race detector, which makes the test's
// copies slow, its first two.
func ranksFor(ns []int) []int {
	if raceEnabled {
		return ns[:2]
	}
	return ns
}

func equalSteps(got, want trainStep) error {
	if got.Seq != want.Seq || got.Loss != want.Loss || strings.TrimSpace(got.Trail) != want.Trail || len(got.Grad) != len(want.Grad) {
		return fmt.Errorf("got step %d, loss %v, trail %q, %d gradients; want %d, %v, %q, %d",
			got.Seq, got.Loss, got.Trail, len(got.Grad), want.Seq, want.Loss, want.Trail, len(want.Grad))
	}
	for i := range got.Grad {
		if got.Grad[i] != want.Grad[i] {
			return fmt.Errorf("gradient %d is %v, want %v", i, got.Grad[i], want.Grad[i])
		}
	}
	return nil
}

// TestAllreduceObjectErrors: an error of op is every rank's, naming the
// rank whose value was being folded in, and the job goes on; a nil op or
// value is refused on the rank that passed it, and the others are
// aborted rather than left waiting.
func TestAllreduceObjectErrors(t *testing.T) {
	t.Run("op", func(t *testing.T) {
		cs := job(t, 4, comm.WithTransport("shm"))
		errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
			v := stepOf(c.Rank(), 5000, 0)
			if c.Rank() == 2 {
				v.Seq = 2
			}
			err := AllreduceObject(ctx, c, &v, addSteps)
			v = stepOf(c.Rank(), 5000, 0)
			if err2 := AllreduceObject(ctx, c, &v, addSteps); err2 != nil {
				return fmt.Errorf("the call after: %w", err2)
			}
			return err
		})
		for r, err := range errs {
			require.ErrorContains(t, err, fmt.Sprintf("AllreduceObject on rank %d: folding in rank 2's value: step 1 and step 2", r), "rank %d", r)
		}
	})
	t.Run("nil op", func(t *testing.T) {
		cs := job(t, 3)
		errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
			v := stepOf(c.Rank(), 10, 0)
			op := addSteps
			if c.Rank() == 1 {
				op = nil
			}
			return AllreduceObject(ctx, c, &v, op)
		})
		require.ErrorIs(t, errs[1], codec.ErrInvalid)
		require.ErrorContains(t, errs[1], "AllreduceObject on rank 1: nil value or op")
		for _, r := range []int{0, 2} {
			require.True(t, errors.Is(errs[r], comm.ErrAborted), "rank %d: %v", r, errs[r])
		}
	})
}

// TestAllreduceObjectBeyondARound: values whose gradients are larger
// than a round of the segment's Allgather go through it, not through the
// slots where they lie, and no rank's own part is copied into the
// gathered bytes: every rank still ends with the fold in rank order, bit
// for bit, call after call.
func TestAllreduceObjectBeyondARound(t *testing.T) {
	m := gatherRound/4 + 1000
	for _, n := range ranksFor([]int{2, 3}) {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			cs := job(t, n, comm.WithTransport("shm"))
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				for call := range 3 {
					v := stepOf(c.Rank(), m, 0)
					v.Seq = call
					want := stepOf(0, m, 0)
					want.Seq = call
					for r := 1; r < n; r++ {
						x := stepOf(r, m, 0)
						x.Seq = call
						if err := addSteps(&want, &x); err != nil {
							return err
						}
					}
					if err := AllreduceObject(ctx, c, &v, addSteps); err != nil {
						return fmt.Errorf("call %d: %w", call, err)
					}
					if err := equalSteps(v, want); err != nil {
						return fmt.Errorf("call %d: %w", call, err)
					}
				}
				return nil
			})
		})
	}
}
