package codec

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error this package returns for a bad
// argument: an op applied to a type it does not support, slices of
// different lengths, bytes that are not whole elements. It is the caller's
// fault, not a peer's (a bad frame header).
var ErrInvalid = errors.New("invalid input")

// OpID names a reduction operation on the wire, so that ranks that reduce
// with different ops are told apart.
type OpID uint8

// The reduction operations. OpNone marks a frame that carries no reduction.
const (
	OpNone OpID = iota
	OpSum
	OpProd
	OpMin
	OpMax
	OpAvg
	OpAnd
	OpOr
	OpXor
	OpUser
	numOps
)

var opNames = [numOps]string{
	OpNone: "none", OpSum: "sum", OpProd: "prod", OpMin: "min", OpMax: "max",
	OpAvg: "avg", OpAnd: "and", OpOr: "or", OpXor: "xor", OpUser: "user",
}

// Valid reports whether o is a known op.
func (o OpID) Valid() bool { return o < numOps }

func (o OpID) String() string {
	if o >= numOps {
		return fmt.Sprintf("OpID(%d)", uint8(o))
	}
	return opNames[o]
}

// Op is a reduction operation: one of the predefined ops below or a user
// op made by NewOp. The zero Op is no op at all; reducing with it is an
// error.
//
// Ops are comparable: two Ops are == when they are the same predefined op
// or come from the same call to NewOp.
type Op struct {
	id          OpID
	name        string
	fn          any   // *userFunc[T] for OpUser, nil otherwise
	dtype       DType // the T of a user op
	commutative bool
}

// userFunc holds a user op's function behind a pointer, so that Op stays
// comparable (func values are not) and identity decides equality.
type userFunc[T Elem] struct {
	f func(dst, src []T)
}

// The predefined ops. All are commutative; Sum, Prod and Avg on floats are
// not associative, so their result depends on the order in which ranks'
// contributions are combined (see the package doc on determinism).
var (
	// Sum adds. Integers wrap around (two's complement), as Go's + does.
	Sum = Op{id: OpSum, name: "sum", commutative: true}
	// Prod multiplies. Integers wrap around, as Go's * does.
	Prod = Op{id: OpProd, name: "prod", commutative: true}
	// Min keeps the smaller value. On floats a NaN operand wins, -0 is
	// smaller than +0; see the package doc for the exact rule.
	Min = Op{id: OpMin, name: "min", commutative: true}
	// Max keeps the larger value. On floats a NaN operand wins, +0 is
	// larger than -0; see the package doc for the exact rule.
	Max = Op{id: OpMax, name: "max", commutative: true}
	// Avg reduces as Sum; Finish then divides the sum by the number of
	// contributions. Integer averages are the wrapped sum divided with
	// truncation toward zero.
	Avg = Op{id: OpAvg, name: "avg", commutative: true}
	// And is bitwise and, for integers only.
	And = Op{id: OpAnd, name: "and", commutative: true}
	// Or is bitwise or, for integers only.
	Or = Op{id: OpOr, name: "or", commutative: true}
	// Xor is bitwise exclusive or, for integers only.
	Xor = Op{id: OpXor, name: "xor", commutative: true}
)

// NewOp returns a user reduction op on elements of type T, named name in
// errors and traces ("user" if empty). With a nil fn the op exists but
// reduces nothing: Check, and every collective given it, reject it with
// an error wrapping ErrInvalid.
//
// fn(dst, src) must store dst[i] = dst[i] ∘ src[i] for every i, where dst
// holds the LEFT operand: the combined contribution of lower ranks, src
// that of higher ranks. The two slices have the same length, which need not
// be the length of the user's buffer (collectives reduce chunk by chunk)
// but is never zero. They do not overlap, except that Reduce(op, s, s)
// passes the same slice twice. fn must not retain them.
//
// A non-commutative op (commutative == false) is applied in rank order,
// r0 ∘ r1 ∘ … ∘ rN-1, by every algorithm; it must still be associative,
// since algorithms group the ranks as they see fit. A commutative op lets
// an algorithm combine in any order. Floating-point sums are commutative
// but not associative; declaring them commutative is what MPI does too.
func NewOp[T Elem](name string, fn func(dst, src []T), commutative bool) Op {
	if name == "" {
		name = "user"
	}
	op := Op{id: OpUser, name: name, dtype: DTypeOf[T](), commutative: commutative}
	if fn != nil {
		op.fn = &userFunc[T]{fn}
	}
	return op
}

// ID is the op's wire identifier; every user op has OpUser.
func (op Op) ID() OpID { return op.id }

// Commutative reports whether the op may combine contributions in any
// order.
func (op Op) Commutative() bool { return op.commutative }

// String returns the op's name: "sum", "min", …, or a user op's name.
func (op Op) String() string {
	if op.id == OpNone {
		return "none"
	}
	return op.name
}

// Check reports whether op can reduce elements of type dt: bitwise ops need
// integers, and a user op only reduces the type it was made for. The error
// wraps ErrInvalid and names the op and both types.
func (op Op) Check(dt DType) error {
	switch {
	case !dt.Valid():
		return fmt.Errorf("%w: op %s on unknown element type %s", ErrInvalid, op, dt)
	case op.id == OpNone || op.id >= numOps:
		return fmt.Errorf("%w: reduction of %s without an op", ErrInvalid, dt)
	case op.id == OpUser && op.fn == nil:
		return fmt.Errorf("%w: user op %q has no function (NewOp was given nil)", ErrInvalid, op.name)
	case op.id == OpUser && op.dtype != dt:
		return fmt.Errorf("%w: user op %q reduces %s, not %s", ErrInvalid, op.name, op.dtype, dt)
	case isBitwise(op.id) && dt.IsFloat():
		return fmt.Errorf("%w: op %s is not defined for %s", ErrInvalid, op, dt)
	}
	return nil
}

func isBitwise(id OpID) bool { return id == OpAnd || id == OpOr || id == OpXor }

// Reduce combines src into dst: dst[i] = dst[i] ∘ src[i], dst being the
// left operand. dst and src must have the same length and be the same
// slice or not overlap. Reduce does not allocate.
//
// It is an error, wrapping ErrInvalid, if the lengths differ or op cannot
// reduce T (see Op.Check); dst is then unchanged.
func Reduce[T Elem](op Op, dst, src []T) error {
	if len(dst) != len(src) {
		return lenError(op, "src", len(dst), len(src))
	}
	if op.id == OpUser {
		u, ok := op.fn.(*userFunc[T])
		if !ok {
			return op.Check(DTypeOf[T]())
		}
		if len(dst) > 0 {
			u.f(dst, src)
		}
		return nil
	}
	return reduce(op, dst, src, false)
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
// It is an error, wrapping ErrInvalid, if the lengths differ, scratch is
// needed and too short, or op cannot reduce T; dst is then unchanged.
func ReduceLeft[T Elem](op Op, src, dst, scratch []T) error {
	if len(dst) != len(src) {
		return lenError(op, "src", len(dst), len(src))
	}
	if op.id != OpUser {
		return reduce(op, dst, src, true)
	}
	u, ok := op.fn.(*userFunc[T])
	if !ok {
		return op.Check(DTypeOf[T]())
	}
	if len(dst) == 0 {
		return nil
	}
	if op.commutative {
		u.f(dst, src)
		return nil
	}
	if len(scratch) < len(dst) {
		return lenError(op, "scratch", len(dst), len(scratch))
	}
	s := scratch[:len(dst)]
	copy(s, src)
	u.f(s, dst)
	copy(dst, s)
	return nil
}

// lenError reports slices whose lengths do not match: "invalid input:
// sum: dst has 4 elements, src has 3".
func lenError(op Op, what string, dst, n int) error {
	return fmt.Errorf("%w: %s: dst has %d elements, %s has %d", ErrInvalid, op, dst, what, n)
}

// Finish completes a reduction of n contributions in buf: for Avg it
// divides every element by n (integers truncate toward zero; bf16 and
// fp16 divide in float32 and round once), for every other op it does
// nothing. Collectives call it once on the final result, so every rank
// divides the same sum. n is the number of contributions, at least 1;
// Finish panics otherwise, as that is a bug in the caller. It does not
// allocate.
func Finish[T Elem](op Op, buf []T, n int) {
	if op.id != OpAvg {
		return
	}
	if n < 1 {
		panic(fmt.Sprintf("codec: Finish of avg over %d contributions", n))
	}
	if n == 1 {
		return
	}
	finishAvg(buf, n)
}
