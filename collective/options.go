package collective

import (
	"fmt"
	"strings"

	"github.com/gocoll/gocoll/codec"
)

// Algorithm names a collective algorithm. Auto (the zero value) lets the
// selector choose by collective, rank count and message size.
type Algorithm uint8

// The algorithms. Each collective accepts the ones that apply to it (see
// its documentation); asking for another is an error.
const (
	Auto              Algorithm = iota
	Ring                        // allreduce, allgather, reduce-scatter
	RingChunked                 // allreduce: ring with pipelined chunks
	RecursiveDoubling           // allreduce, allgather
	Rabenseifner                // allreduce: recursive halving + doubling
	Tree                        // allreduce (binomial reduce + bcast), bcast, reduce, gather, scatter
	Chain                       // bcast: pipelined chain
	ScatterAllgather            // bcast
	Linear                      // gather, scatter, and the v-variants
	Bruck                       // allgather
	RecursiveHalving            // reduce-scatter
	Pairwise                    // alltoall
	Dissemination               // barrier
	numAlgorithms
)

var algorithmNames = [numAlgorithms]string{
	Auto: "auto", Ring: "ring", RingChunked: "ring_chunked", RecursiveDoubling: "recursive_doubling",
	Rabenseifner: "rabenseifner", Tree: "tree", Chain: "chain", ScatterAllgather: "scatter_allgather",
	Linear: "linear", Bruck: "bruck", RecursiveHalving: "recursive_halving", Pairwise: "pairwise",
	Dissemination: "dissemination",
}

func (a Algorithm) String() string {
	if a >= numAlgorithms {
		return fmt.Sprintf("Algorithm(%d)", uint8(a))
	}
	return algorithmNames[a]
}

// ParseAlgorithm returns the Algorithm named s, as String spells it.
func ParseAlgorithm(s string) (Algorithm, error) {
	for a, name := range algorithmNames {
		if strings.EqualFold(s, name) {
			return Algorithm(a), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown algorithm %q (want one of %s)", codec.ErrInvalid, s, strings.Join(algorithmNames[:], ", "))
}

// Option configures one collective call. Options are plain values, not
// closures, so that passing them costs a call nothing.
type Option struct {
	set   optionKind
	algo  Algorithm
	bytes int
}

type optionKind uint8

const (
	setAlgorithm optionKind = iota + 1
	setChunkSize
)

type config struct {
	algo  Algorithm
	chunk int // bytes per pipelined chunk; 0 means the selector's choice
}

func (o Option) apply(c *config) error {
	switch o.set {
	case setAlgorithm:
		if o.algo >= numAlgorithms {
			return fmt.Errorf("%w: unknown algorithm %d", codec.ErrInvalid, uint8(o.algo))
		}
		c.algo = o.algo
	case setChunkSize:
		if o.bytes <= 0 {
			return fmt.Errorf("%w: chunk size %d must be positive", codec.ErrInvalid, o.bytes)
		}
		c.chunk = o.bytes
	default:
		return fmt.Errorf("%w: the zero Option sets nothing; make options with WithAlgorithm and WithChunkSize", codec.ErrInvalid)
	}
	return nil
}

// WithAlgorithm forces the algorithm of a call instead of letting the
// selector choose. Every rank must pass the same one.
func WithAlgorithm(a Algorithm) Option { return Option{set: setAlgorithm, algo: a} }

// WithChunkSize sets the bytes per chunk of the pipelined algorithms
// (RingChunked, Chain). Every rank must pass the same size. The default
// is DefaultChunkSize, or GOCOLL_CHUNK when set.
func WithChunkSize(bytes int) Option { return Option{set: setChunkSize, bytes: bytes} }
