package codec

import (
	"errors"

	"github.com/gocoll/gocoll/internal/ops"
)

// ErrInvalid is wrapped by every error this package returns for a bad
// argument, and by the collectives' errors for an op applied to a type it
// does not support or a user op without a function. It is the caller's
// fault, not a peer's.
var ErrInvalid = errors.New("invalid input")

// Op is a reduction operation: one of the predefined ops below or a user
// op made by NewOp. The zero Op is no op at all; reducing with it is an
// error.
//
// Ops are comparable: two Ops are == when they are the same predefined op
// or come from the same call to NewOp.
type Op struct {
	d *ops.Def
}

func init() {
	ops.Of = func(op any) *ops.Def { return op.(Op).d }
}

// The predefined ops. All are commutative; Sum, Prod and Avg on floats are
// not associative, so their result depends on the order in which ranks'
// contributions are combined (see the package doc on determinism).
var (
	// Sum adds. Integers wrap around (two's complement), as Go's + does.
	Sum = predefined(ops.Sum)
	// Prod multiplies. Integers wrap around, as Go's * does.
	Prod = predefined(ops.Prod)
	// Min keeps the smaller value. On floats a NaN operand wins, -0 is
	// smaller than +0; see the package doc for the exact rule.
	Min = predefined(ops.Min)
	// Max keeps the larger value. On floats a NaN operand wins, +0 is
	// larger than -0; see the package doc for the exact rule.
	Max = predefined(ops.Max)
	// Avg reduces as Sum, and the collective then divides the sum by the
	// number of contributions, once, at the end. Integer averages are the
	// wrapped sum divided with truncation toward zero.
	Avg = predefined(ops.Avg)
	// And is bitwise and, for integers only.
	And = predefined(ops.And)
	// Or is bitwise or, for integers only.
	Or = predefined(ops.Or)
	// Xor is bitwise exclusive or, for integers only.
	Xor = predefined(ops.Xor)
)

func predefined(id ops.ID) Op {
	return Op{&ops.Def{ID: id, Name: id.String(), Commutative: true}}
}

// NewOp returns a user reduction op on elements of type T, named name in
// errors and traces ("user" if empty). With a nil fn the op exists but
// reduces nothing: every collective given it rejects it with an error
// wrapping ErrInvalid.
//
// fn(dst, src) must store dst[i] = dst[i] ∘ src[i] for every i, where dst
// holds the LEFT operand: the combined contribution of lower ranks, src
// that of higher ranks. The two slices have the same length, which need not
// be the length of the user's buffer (collectives reduce chunk by chunk)
// but is never zero. They do not overlap, except that a collective may
// pass the same slice twice. fn must not retain them.
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
	d := &ops.Def{ID: ops.User, Name: name, Commutative: commutative, Elem: *new(T)}
	if fn != nil {
		d.Fn = &ops.Func[T]{F: fn}
	}
	return Op{d}
}

// Commutative reports whether the op may combine contributions in any
// order.
func (op Op) Commutative() bool { return op.d != nil && op.d.Commutative }

// String returns the op's name: "sum", "min", …, or a user op's name;
// "none" for the zero Op.
func (op Op) String() string {
	if op.d == nil {
		return "none"
	}
	return op.d.Name
}
