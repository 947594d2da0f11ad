// Package ops is what package codec's Op is made of, for the kernels and
// the wire format to read: the op's wire identifier, its name, whether it
// commutes, and a user op's function.
//
// codec.Op keeps a *Def in an unexported field, so that users see an
// opaque, comparable value with a short method set. The kernels in
// internal/kernel import codec for the element types, so codec cannot
// import them; instead codec hands out its Defs through Of, which it sets
// when it is initialised. Of(op) is one indirect call and, as codec.Op is
// a single pointer, converting it to an interface does not allocate.
package ops

import "fmt"

// ID names a reduction operation on the wire, so that ranks that reduce
// with different ops are told apart.
type ID uint8

// The reduction operations. None marks a frame that carries no reduction.
const (
	None ID = iota
	Sum
	Prod
	Min
	Max
	Avg
	And
	Or
	Xor
	User
	numIDs
)

var names = [numIDs]string{
	None: "none", Sum: "sum", Prod: "prod", Min: "min", Max: "max",
	Avg: "avg", And: "and", Or: "or", Xor: "xor", User: "user",
}

// Valid reports whether id is a known op.
func (id ID) Valid() bool { return id < numIDs }

func (id ID) String() string {
	if id >= numIDs {
		return fmt.Sprintf("op(%d)", uint8(id))
	}
	return names[id]
}

// Bitwise reports whether id is And, Or or Xor, which integers alone have.
func (id ID) Bitwise() bool { return id == And || id == Or || id == Xor }

// Def defines an op.
type Def struct {
	ID          ID
	Name        string
	Commutative bool
	// Fn is a user op's *Func[T], or nil for a predefined op and for a
	// user op made with a nil function.
	Fn any
	// Elem is a user op's element type, as the zero value of T.
	Elem any
}

// Func holds a user op's function behind a pointer, so that a codec.Op
// stays comparable (func values are not) and identity decides equality.
type Func[T any] struct {
	F func(dst, src []T)
}

// Of returns the definition of a codec.Op; nil for the zero Op. Package
// codec sets it.
var Of func(op any) *Def
