package wire

import (
	"fmt"
	"strings"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
)

// Algorithm names the algorithm of a collective call on the wire. Every
// frame of a call carries it, so ranks that chose different algorithms
// for the same call (through different GOCOLL_ALGO settings or tuning
// tables, say) are told so by name instead of waiting for messages that
// the other algorithm never sends. Package collective re-exports the
// values under shorter names (collective.Ring, ...) and says which
// collective accepts which.
type Algorithm uint8

// The algorithms. AlgoAuto, the zero value, means "not chosen yet" in an
// option and "none" on a frame that belongs to no collective algorithm.
const (
	AlgoAuto Algorithm = iota
	AlgoRing
	AlgoRingChunked
	AlgoRecursiveDoubling
	AlgoRabenseifner
	AlgoTree
	AlgoChain
	AlgoScatterAllgather
	AlgoLinear
	AlgoBruck
	AlgoRecursiveHalving
	AlgoPairwise
	AlgoDissemination
	AlgoShm
	AlgoHierarchical
	numAlgorithms
)

var algorithmNames = [numAlgorithms]string{
	AlgoAuto: "auto", AlgoRing: "ring", AlgoRingChunked: "ring_chunked",
	AlgoRecursiveDoubling: "recursive_doubling", AlgoRabenseifner: "rabenseifner",
	AlgoTree: "tree", AlgoChain: "chain", AlgoScatterAllgather: "scatter_allgather",
	AlgoLinear: "linear", AlgoBruck: "bruck", AlgoRecursiveHalving: "recursive_halving",
	AlgoPairwise: "pairwise", AlgoDissemination: "dissemination",
	AlgoShm: "shm", AlgoHierarchical: "hierarchical",
}

// NumAlgorithms is one more than the largest Algorithm: the length of an
// array indexed by Algorithm.
const NumAlgorithms = int(numAlgorithms)

// Valid reports whether a is one of the algorithms above.
func (a Algorithm) Valid() bool { return a < numAlgorithms }

func (a Algorithm) String() string {
	if !a.Valid() {
		return fmt.Sprintf("Algorithm(%d)", uint8(a))
	}
	return algorithmNames[a]
}

// ParseAlgorithm returns the Algorithm named s, as String spells it,
// ignoring case.
func ParseAlgorithm(s string) (Algorithm, error) {
	for a, name := range algorithmNames {
		if strings.EqualFold(s, name) {
			return Algorithm(a), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown algorithm %q (want one of %s)", codec.ErrInvalid, s, strings.Join(algorithmNames[:], ", "))
}

// Call is the identity of one collective call: what every rank of a
// communicator must agree on for the call to be one operation. Every frame
// of the call carries it (Header.Call), and a receiver that finds a
// frame's Call different from its own for the same operation knows the
// two ranks called different things.
type Call struct {
	Kind      Kind
	DType     kernel.DType
	Op        ops.ID
	Count     int // elements of the whole operation
	Root      int // -1 for collectives without a root
	Algorithm Algorithm
	// NoReceipts says that the call takes no receipts
	// (collective.WithReceipts); its frames carry FlagNoReceipts.
	NoReceipts bool
}

// Call returns the call that h belongs to. The call of a collective
// whose frames count their sender's part (PartCounted) has no count.
func (h *Header) Call() Call {
	c := Call{Kind: h.Kind, DType: h.DType, Op: h.Op, Count: int(h.Count), Root: int(h.Root), Algorithm: h.Algorithm,
		NoReceipts: h.Flags&FlagNoReceipts != 0}
	if h.Kind.PartCounted() {
		c.Count = 0
	}
	return c
}

// PartCounted reports whether collectives of kind k are v-collectives
// whose ranks other than the root pass no counts (Gatherv and Scatterv,
// as MPI has them): no rank but the root knows the operation's count, so
// their calls have none (Count 0), and the Count of each of their frames
// is the part of the rank it is for, which bounds its payload (Validate)
// and which the receiver checks against the count it expects.
func (k Kind) PartCounted() bool { return k == KindGatherv || k == KindScatterv }

// String describes the call as a user wrote it, with the algorithm that
// ran it: "Allreduce(10 × float32, sum) with ring", and "without
// receipts" where it took none.
func (c Call) String() string {
	if c.Kind == KindSplit {
		return "Split"
	}
	s := fmt.Sprintf("%s(%d × %s", c.Kind, c.Count, c.DType)
	if c.Kind.PartCounted() && c.Count == 0 {
		s = fmt.Sprintf("%s(%s", c.Kind, c.DType) // a count only the root knows
	}
	if c.Op != ops.None {
		s += ", " + c.Op.String()
	}
	if c.Root >= 0 {
		s += fmt.Sprintf(", root %d", c.Root)
	}
	s += ")"
	if c.Algorithm != AlgoAuto {
		s += " with " + c.Algorithm.String()
	}
	if c.NoReceipts {
		s += " without receipts"
	}
	return s
}
