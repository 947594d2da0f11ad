package collective

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// The selector's thresholds, in one place. They follow the alpha-beta
// cost model (DESIGN.md): latency-bound algorithms (lg p messages) below
// the thresholds, bandwidth-optimal ones (each byte sent about twice)
// above. Open MPI switches allreduce from recursive doubling between
// 4 KiB and 16 KiB, MPICH at 2 KiB.
const (
	allreduceSmall = 8 << 10   // below: recursive doubling
	allreduceLarge = 4 << 20   // from here: pipelined ring
	bcastSmall     = 64 << 10  // below: binomial tree
	bcastLarge     = 4 << 20   // from here: pipelined chain
	gatherSmall    = 256 << 10 // below: binomial tree, above: linear
	allgatherSmall = 64 << 10  // below: Bruck, above: ring

	// DefaultChunkSize is the chunk of the pipelined algorithms when
	// WithChunkSize is not given: large enough that per-message cost is
	// small next to the transfer, small enough that several chunks are in
	// flight at once.
	DefaultChunkSize = 256 << 10
)

// Algorithms returns the algorithms that WithAlgorithm may force on the
// collective of the given kind, whatever the communicator (Shm needs a
// segment, Hierarchical a hierarchy); nil for kinds without a choice.
func Algorithms(kind codec.Kind) []Algorithm { return slices.Clone(algorithms[kind]) }

// algorithms lists what each collective accepts; the first is the one the
// selector falls back to when no other applies.
var algorithms = map[codec.Kind][]Algorithm{
	codec.KindAllreduce:     {RecursiveDoubling, Ring, RingChunked, Rabenseifner, Tree, Shm, Hierarchical},
	codec.KindReduce:        {Tree, Shm},
	codec.KindBcast:         {Tree, Chain, ScatterAllgather, Shm},
	codec.KindGather:        {Tree, Linear, Shm},
	codec.KindGatherv:       {Linear},
	codec.KindScatter:       {Tree, Linear},
	codec.KindScatterv:      {Linear},
	codec.KindAllgather:     {Bruck, Ring, RecursiveDoubling, Shm},
	codec.KindAllgatherv:    {Ring},
	codec.KindReduceScatter: {Ring, RecursiveHalving},
	codec.KindScan:          {RecursiveDoubling},
	codec.KindExscan:        {RecursiveDoubling},
	codec.KindAlltoall:      {Pairwise},
	codec.KindBarrier:       {Dissemination, Shm},
}

// reorders lists the (collective, algorithm) pairs that combine operands
// out of rank order, which only a commutative op tolerates.
var reorders = map[codec.Kind][]Algorithm{
	codec.KindAllreduce:     {Ring, RingChunked, Hierarchical},
	codec.KindReduceScatter: {Ring},
}

// topology is what a communicator offers besides links: a shared segment
// (all ranks on one host) or a hierarchy (ranks on several hosts, some
// sharing one).
type topology struct {
	shared, hierarchical bool
}

func topologyOf(c *comm.Comm) topology {
	return topology{shared: c.Segment() != nil, hierarchical: c.Hierarchy() != nil}
}

// choose picks the algorithm of one call: the one the call asked for, else
// the one GOCOLL_ALGO names for this collective, else the selector's.
// Where the ranks share memory the selector takes the shared-memory
// algorithms, which move every byte through memory at most a few times
// and wait on memory instead of on messages.
func choose(kind codec.Kind, cfg config, ranks, bytes int, commutative bool, topo topology) (Algorithm, error) {
	a := cfg.algo
	if a == Auto {
		a = envAlgorithm(kind)
	}
	if a != Auto {
		if !slices.Contains(algorithms[kind], a) {
			return 0, fmt.Errorf("%w: %s has no %s algorithm (it has %v)", codec.ErrInvalid, kind, a, algorithms[kind])
		}
		if !commutative && slices.Contains(reorders[kind], a) {
			return 0, fmt.Errorf("%w: %s with %s combines operands out of rank order; a non-commutative op needs another algorithm", codec.ErrInvalid, kind, a)
		}
		if a == Shm && !topo.shared && ranks > 1 {
			return 0, fmt.Errorf("%w: %s with shm needs a communicator whose ranks share a host and memory (transport auto or shm)", codec.ErrInvalid, kind)
		}
		if a == Hierarchical && !topo.hierarchical {
			return 0, fmt.Errorf("%w: %s with hierarchical needs a communicator across hosts with shared memory inside them (transport auto)", codec.ErrInvalid, kind)
		}
		return a, nil
	}
	if topo.shared && slices.Contains(algorithms[kind], Shm) {
		return Shm, nil
	}
	if topo.hierarchical && kind == codec.KindAllreduce && commutative {
		return Hierarchical, nil
	}
	switch kind {
	case codec.KindAllreduce:
		switch {
		case bytes < allreduceSmall || !commutative:
			return RecursiveDoubling, nil
		case bytes >= allreduceLarge:
			return RingChunked, nil
		case ranks&(ranks-1) == 0:
			return Rabenseifner, nil
		}
		return Ring, nil
	case codec.KindBcast:
		switch {
		case bytes < bcastSmall || ranks <= 2:
			return Tree, nil
		case bytes >= bcastLarge:
			return Chain, nil
		}
		return ScatterAllgather, nil
	case codec.KindGather, codec.KindScatter:
		if bytes < gatherSmall {
			return Tree, nil
		}
		return Linear, nil
	case codec.KindAllgather:
		if bytes < allgatherSmall {
			return Bruck, nil
		}
		return Ring, nil
	case codec.KindReduceScatter:
		// Recursive halving keeps rank order, so it also serves
		// non-commutative ops.
		if !commutative || ranks&(ranks-1) == 0 {
			return RecursiveHalving, nil
		}
		return Ring, nil
	}
	return algorithms[kind][0], nil
}

// chunkElems is the number of elements per chunk of a pipelined algorithm.
func (c config) chunkElems(elemSize int) int {
	bytes := c.chunk
	if bytes == 0 {
		bytes = envChunk()
	}
	if bytes == 0 {
		bytes = DefaultChunkSize
	}
	return max(1, bytes/elemSize)
}

// GOCOLL_ALGO overrides the selector for experiments, like NCCL_ALGO:
// "allreduce:ring,bcast:tree". GOCOLL_CHUNK sets the default chunk size
// in bytes. Both are read once; entries that do not parse are reported on
// stderr and ignored.
var env = sync.OnceValues(func() (map[codec.Kind]Algorithm, int) {
	algos, chunk, problems := parseEnv(os.Getenv("GOCOLL_ALGO"), os.Getenv("GOCOLL_CHUNK"))
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "gocoll:", p)
	}
	return algos, chunk
})

// parseEnv parses GOCOLL_ALGO and GOCOLL_CHUNK and says what it ignored.
func parseEnv(algoVar, chunkVar string) (map[codec.Kind]Algorithm, int, []string) {
	algos := map[codec.Kind]Algorithm{}
	var problems []string
	for _, item := range strings.Split(algoVar, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, algo, ok := strings.Cut(item, ":")
		kind, kok := kindNamed(name)
		a, err := ParseAlgorithm(algo)
		switch {
		case !ok || !kok || err != nil:
			problems = append(problems, fmt.Sprintf("ignoring GOCOLL_ALGO entry %q: want collective:algorithm, such as allreduce:ring", item))
		case !slices.Contains(algorithms[kind], a):
			problems = append(problems, fmt.Sprintf("ignoring GOCOLL_ALGO entry %q: %s has no %s algorithm", item, kind, a))
		default:
			algos[kind] = a
		}
	}
	chunk := 0
	if chunkVar != "" {
		if _, err := fmt.Sscan(chunkVar, &chunk); err != nil || chunk <= 0 {
			problems = append(problems, fmt.Sprintf("ignoring GOCOLL_CHUNK=%q: want a positive number of bytes", chunkVar))
			chunk = 0
		}
	}
	return algos, chunk, problems
}

func envAlgorithm(kind codec.Kind) Algorithm { a, _ := env(); return a[kind] }
func envChunk() int                          { _, c := env(); return c }

func kindNamed(name string) (codec.Kind, bool) {
	for k := range algorithms {
		if strings.EqualFold(k.String(), name) {
			return k, true
		}
	}
	return 0, false
}
