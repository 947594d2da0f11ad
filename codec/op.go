package codec

import "fmt"

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

func (o OpID) String() string {
	if o >= numOps {
		return fmt.Sprintf("OpID(%d)", uint8(o))
	}
	return opNames[o]
}
