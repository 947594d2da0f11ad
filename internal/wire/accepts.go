package wire

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gocoll/gocoll/codec"
)

// accepted lists the algorithms each collective accepts, by kind; the
// first is the one the selector falls back to when no other applies. It
// lives here, below comm, so that a tuning table can be checked where it
// is loaded (comm.Init) as well as where it is used (package collective).
// It is an array, not a map: every call looks in it.
var accepted = [...][]Algorithm{
	KindAllreduce:     {AlgoRecursiveDoubling, AlgoRing, AlgoRingChunked, AlgoRabenseifner, AlgoTree, AlgoShm, AlgoHierarchical},
	KindReduce:        {AlgoTree, AlgoRabenseifner, AlgoShm},
	KindBcast:         {AlgoTree, AlgoLinear, AlgoChain, AlgoScatterAllgather, AlgoShm},
	KindGather:        {AlgoTree, AlgoLinear, AlgoShm},
	KindGatherv:       {AlgoLinear, AlgoShm},
	KindScatter:       {AlgoTree, AlgoLinear, AlgoShm},
	KindScatterv:      {AlgoLinear, AlgoShm},
	KindAllgather:     {AlgoBruck, AlgoRing, AlgoRecursiveDoubling, AlgoShm},
	KindAllgatherv:    {AlgoRing, AlgoShm},
	KindReduceScatter: {AlgoRing, AlgoRecursiveHalving, AlgoShm},
	KindScan:          {AlgoRecursiveDoubling, AlgoShm},
	KindExscan:        {AlgoRecursiveDoubling, AlgoShm},
	KindAlltoall:      {AlgoPairwise, AlgoShm},
	KindBarrier:       {AlgoDissemination, AlgoShm},
}

// Algorithms returns the algorithms that the collective of kind k
// accepts, the selector's fallback first; nil for kinds that are not
// collectives.
func Algorithms(k Kind) []Algorithm { return slices.Clone(acceptedBy(k)) }

// Accepts reports whether the collective of kind k accepts a.
func Accepts(k Kind, a Algorithm) bool { return slices.Contains(acceptedBy(k), a) }

// acceptedBy is accepted[k], nil for kinds that are not collectives.
func acceptedBy(k Kind) []Algorithm {
	if int(k) < len(accepted) {
		return accepted[k]
	}
	return nil
}

// ParseCollective returns the kind of the collective named s, as
// Kind.String spells it, ignoring case ("allreduce", "ReduceScatter").
func ParseCollective(s string) (Kind, error) {
	for k, algos := range accepted {
		if len(algos) > 0 && strings.EqualFold(Kind(k).String(), s) {
			return Kind(k), nil
		}
	}
	var names []string
	for k, algos := range accepted {
		if len(algos) > 0 {
			names = append(names, strings.ToLower(Kind(k).String()))
		}
	}
	slices.Sort(names)
	return 0, fmt.Errorf("%w: unknown collective %q (want one of %s)", codec.ErrInvalid, s, strings.Join(names, ", "))
}

// Fallback returns the algorithm the selector takes for the collective of
// kind k when no other applies; AlgoAuto for kinds that are not
// collectives.
func Fallback(k Kind) Algorithm {
	if a := acceptedBy(k); len(a) > 0 {
		return a[0]
	}
	return AlgoAuto
}

// Pipelined reports whether a cuts its messages into chunks of
// collective.WithChunkSize bytes, so that a chunk size means something to
// it.
func (a Algorithm) Pipelined() bool { return a == AlgoRingChunked || a == AlgoChain }

// Compresses reports whether a sends its data as messages, which a wire
// codec can compress: every algorithm but the shared-memory ones (Shm,
// Hierarchical), which move data through memory.
func (a Algorithm) Compresses() bool { return a != AlgoShm && a != AlgoHierarchical }
