package collective

import (
	"context"
	"fmt"
	"reflect"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/objcodec"
)

// AllreduceObject sets *v on every rank to the reduction of every rank's
// *v by op, in rank order: ((v₀ ⊕ v₁) ⊕ v₂) ⊕ …, where op(acc, x) sets
// *acc to *acc ⊕ *x, as ReduceLocal's dst is its left operand. It is
// mpi4py's comm.allreduce(obj, op) for Go values, in place:
//
//	type Step struct{ Loss float64; Grad []float32 }
//	sum := func(acc, x *Step) error {
//		acc.Loss += x.Loss
//		return ReduceLocal(acc.Grad, x.Grad, codec.Sum)
//	}
//	err := AllreduceObject(ctx, c, &step, sum)
//
// Every rank receives the others' values, as AllgatherObject moves them,
// and folds them in the same order, so that with a deterministic op all
// ranks end with the same value, bit for bit, and an error of op is
// every rank's: the call returns it, naming the rank whose value op was
// folding in, and the job goes on (no rank waits for another after the
// fold). op must be associative; it must not keep x, or anything x
// holds, beyond its return, and must not call collectives on c: on one
// host, op may run while the call still holds c and reads x where it
// lies in the shared segment.
//
// The others' values are decoded into scratch values that the
// communicator keeps for T from call to call. Rank 0 folds into *v; the
// others fold into rank 0's value and copy the result into *v, or, where
// rank 0's value lies in the shared segment, which they must not write,
// copy it into *v and fold the rest into that. With RawCodec the scratch
// values reuse their arrays, or view the bytes where they arrived, where
// the raw block that ends them is a slice: when the ranks share a host
// and the raw blocks are of one length, more than 96 bytes and at most
// 512 KiB (or the segment's slot), that is the segment's memory, with no
// copy out of it. *v keeps its arrays where their capacity suffices, so
// that a loop that reduces values of one shape again and again allocates
// no new arrays after its first call. The communicator holds Size()
// values of T until it is collected.
func AllreduceObject[T any](ctx context.Context, c *comm.Comm, v *T, op func(acc, x *T) error, opts ...Option) error {
	const call = "AllreduceObject"
	if err := nilComm(c, call); err != nil {
		return err
	}
	if v == nil || op == nil {
		err := fmt.Errorf("%w: %s on rank %d: nil value or op", codec.ErrInvalid, call, c.Rank())
		c.Abort(err)
		return err
	}
	oc, err := collectiveCodecOf(c, call, opts)
	if err != nil {
		return err
	}
	h := hintsOf(c)
	s := takeScratch[T](h, c.Size())
	defer putScratch(h, s)
	all := s.values
	_, raw := oc.(rawCodec)
	if !raw {
		// Other codecs may decode into what a value holds (gob keeps the
		// fields the sender left at zero), so they start from zero.
		clear(all)
	}
	me := c.Rank()
	g := gathering{skip: me, skipInSegment: me, rest: &s.rest, viewed: s.viewed}
	if raw && me != 0 {
		g.skipInSegment = -1 // its own value is folded from where it was gathered (below)
	}
	g.use = func(inSegment bool) error {
		switch {
		case me == 0:
			return foldValues(call, me, v, all, v, op)
		case inSegment && s.viewed[0]:
			// Rank 0's value views its slot, which other ranks read:
			// this rank folds into *v, a copy of it, and its own value
			// comes from where it was gathered, as the others'.
			if err := copyValue(c, call, oc, v, &all[0]); err != nil {
				return err
			}
			return foldValues(call, me, v, all, &all[me], op)
		}
		if err := foldValues(call, me, &all[0], all, v, op); err != nil {
			return err
		}
		return copyValue(c, call, oc, v, &all[0])
	}
	return gatherValues(ctx, c, call, oc, v, all, g, opts)
}

// foldValues folds all[1:] into acc, in rank order, with mine in place of
// rank me's: what AllreduceObject's rank me does.
func foldValues[T any](call string, me int, acc *T, all []T, mine *T, op func(acc, x *T) error) error {
	for r := 1; r < len(all); r++ {
		x := &all[r]
		if r == me {
			x = mine
		}
		if err := op(acc, x); err != nil {
			return fmt.Errorf("%s on rank %d: folding in rank %d's value: %w", call, me, r, err)
		}
	}
	return nil
}

// reduceScratch is what AllreduceObject keeps for a communicator and a
// type between calls: the others' values, whose raw blocks view rest
// where viewed says so.
type reduceScratch[T any] struct {
	values []T
	rest   []byte
	viewed []bool
}

// takeScratch returns the scratch for T that h keeps, sized for n ranks,
// taking it from h so that a concurrent call makes its own.
func takeScratch[T any](h *objectHints, n int) *reduceScratch[T] {
	t := reflect.TypeFor[T]()
	h.mu.Lock()
	s, _ := h.scratch[t].(*reduceScratch[T])
	delete(h.scratch, t)
	h.mu.Unlock()
	if s == nil || len(s.values) != n {
		s = &reduceScratch[T]{values: make([]T, n), viewed: make([]bool, n)}
	}
	return s
}

// putScratch gives s back to h. A value that views rest is set to zero
// first: decoding into it would write into rest, over the parts of the
// next call.
func putScratch[T any](h *objectHints, s *reduceScratch[T]) {
	var zero T
	for r, viewed := range s.viewed {
		if viewed {
			s.values[r], s.viewed[r] = zero, false
		}
	}
	h.mu.Lock()
	h.scratch[reflect.TypeFor[T]()] = s
	h.mu.Unlock()
}

// copyValue sets *dst to a copy of *src that shares no memory with it:
// with RawCodec the raw block that ends src goes with one copy into the
// memory that placing its head gives in dst, and anything else through
// an encoding.
func copyValue[T any](c *comm.Comm, call string, oc ObjectCodec, dst, src *T) error {
	buf := getObjectBuf()
	defer putObjectBuf(buf)
	if _, raw := oc.(rawCodec); raw {
		head, body, ok, err := objcodec.Split((*buf)[:0], src)
		if err != nil {
			return encodeFailed[T](c, call, err)
		}
		*buf = head
		if ok {
			return placeValue(c, call, oc, head, body, dst, c.Rank())
		}
	} else {
		var zero T
		*dst = zero
	}
	b, err := encodeObject(c, call, oc, (*buf)[:0], src)
	if err != nil {
		return err
	}
	*buf = b
	return decodeObject(c, call, oc, b, dst, c.Rank())
}
