package kernel

import (
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/ops"
)

// Check reports whether op can reduce elements of type dt: bitwise ops need
// integers, and a user op only reduces the type it was made for. The error
// wraps codec.ErrInvalid and names the op and both types.
func Check(op codec.Op, dt DType) error { return check(ops.Of(op), dt) }

func check(op *ops.Def, dt DType) error {
	switch {
	case !dt.Valid():
		return fmt.Errorf("%w: op %s on unknown element type %s", codec.ErrInvalid, name(op), dt)
	case op == nil || op.ID == ops.None || !op.ID.Valid():
		return fmt.Errorf("%w: reduction of %s without an op", codec.ErrInvalid, dt)
	case op.ID == ops.User && op.Fn == nil:
		return fmt.Errorf("%w: user op %q has no function (NewOp was given nil)", codec.ErrInvalid, op.Name)
	case op.ID == ops.User && dtypeOfValue(op.Elem) != dt:
		return fmt.Errorf("%w: user op %q reduces %s, not %s", codec.ErrInvalid, op.Name, dtypeOfValue(op.Elem), dt)
	case op.ID.Bitwise() && dt.IsFloat():
		return fmt.Errorf("%w: op %s is not defined for %s", codec.ErrInvalid, op.Name, dt)
	}
	return nil
}

// name is the op's name for errors, "none" for the zero Op.
func name(op *ops.Def) string {
	if op == nil {
		return "none"
	}
	return op.Name
}

// ID is op's wire identifier; every user op has ops.User, the zero Op
// ops.None.
func ID(op codec.Op) ops.ID {
	if d := ops.Of(op); d != nil {
		return d.ID
	}
	return ops.None
}

// Reduce combines src into dst: dst[i] = dst[i] ∘ src[i], dst being the
// left operand. dst and src must have the same length and be the same
// slice or not overlap. Reduce does not allocate.
//
// It is an error, wrapping codec.ErrInvalid, if the lengths differ or op
// cannot reduce T (see Check); dst is then unchanged.
func Reduce[T codec.Elem](op codec.Op, dst, src []T) error {
	d := ops.Of(op)
	if len(dst) != len(src) {
		return lenError(d, "src", len(dst), len(src))
	}
	if d == nil {
		return check(d, DTypeOf[T]())
	}
	if d.ID == ops.User {
		u, ok := d.Fn.(*ops.Func[T])
		if !ok {
			return check(d, DTypeOf[T]())
		}
		if len(dst) > 0 {
			u.F(dst, src)
		}
		return nil
	}
	return reduce(d, dst, src, false)
}

// ReduceLeft combines src into dst with src as the left operand: dst[i] =
// src[i] ∘ dst[i]. Collectives need it when the buffer they keep holds the
// higher ranks' contribution. dst and src must have the same length and be
// the same slice or not overlap.
//
// scratch is used only by non-commutative user ops, whose fn can only
// write its left operand: src is copied to scratch[:len(dst)], combined
// with dst, and copied back. It must then have at least len(dst) elements
// and overlap neither src nor dst; otherwise it may be nil. ReduceLeft does
// not allocate.
//
// It is an error, wrapping codec.ErrInvalid, if the lengths differ,
// scratch is needed and too short, or op cannot reduce T; dst is then
// unchanged.
func ReduceLeft[T codec.Elem](op codec.Op, src, dst, scratch []T) error {
	d := ops.Of(op)
	if len(dst) != len(src) {
		return lenError(d, "src", len(dst), len(src))
	}
	if d == nil {
		return check(d, DTypeOf[T]())
	}
	if d.ID != ops.User {
		return reduce(d, dst, src, true)
	}
	u, ok := d.Fn.(*ops.Func[T])
	if !ok {
		return check(d, DTypeOf[T]())
	}
	if len(dst) == 0 {
		return nil
	}
	if d.Commutative {
		u.F(dst, src)
		return nil
	}
	if len(scratch) < len(dst) {
		return lenError(d, "scratch", len(dst), len(scratch))
	}
	s := scratch[:len(dst)]
	copy(s, src)
	u.F(s, dst)
	copy(dst, s)
	return nil
}

// lenError reports slices whose lengths do not match: "invalid input:
// sum: dst has 4 elements, src has 3".
func lenError(op *ops.Def, what string, dst, n int) error {
	return fmt.Errorf("%w: %s: dst has %d elements, %s has %d", codec.ErrInvalid, name(op), dst, what, n)
}

// Finish completes a reduction of n contributions in buf: for Avg it
// divides every element by n (integers truncate toward zero; bf16 and
// fp16 divide in float32 and round once), for every other op it does
// nothing. Collectives call it once on the final result, so every rank
// divides the same sum. n is the number of contributions, at least 1;
// Finish panics otherwise, as that is a bug in the caller. It does not
// allocate.
func Finish[T codec.Elem](op codec.Op, buf []T, n int) {
	if op != codec.Avg {
		return
	}
	if n < 1 {
		panic(fmt.Sprintf("kernel: Finish of avg over %d contributions", n))
	}
	if n == 1 {
		return
	}
	finishAvg(buf, n)
}
