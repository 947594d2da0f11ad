package collective

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/tuning"
	"github.com/gocoll/gocoll/internal/wire"
)

// The selector's thresholds, in one place. They follow the alpha-beta
// cost model (DESIGN.md): latency-bound algorithms (lg p messages) below
// the thresholds, bandwidth-optimal ones (each byte sent about twice)
// above. Open MPI switches allreduce from recursive doubling between
// 4 KiB and 16 KiB, MPICH at 2 KiB; over tcp a message costs more (tens
// of microseconds where a context switch costs that), and on the machine
// measured (2026-11-25, tcp, 2 and 4 ranks) recursive doubling took 0.5
// to 0.7 of Rabenseifner's time from 16 KiB to 256 KiB, and 1.1 to 1.2
// of it at 1 MiB. Its lg p exchanges of the whole buffer cost more than
// Rabenseifner's halves the more ranks there are.
const (
	allreduceSmall = 64 << 10  // below: recursive doubling
	allreduceFew   = 512 << 10 // below, with at most 4 ranks: recursive doubling too
	// allreduceLossyFew: with a lossy codec, allreduceFew stops here.
	// Recursive doubling encodes and decodes the whole buffer at every
	// step, where the ring and Rabenseifner each code a share of it. BF16
	// over tcp on the AMD EPYC Zen 3 VM (2026-11-30, three rounds, µs):
	// two ranks, recursive doubling against the ring, 51-61 against 58-76
	// at 64 KiB, 117-143 against 66-76 at 128 KiB, 192-210 against
	// 141-209 at 256 KiB, 317-426 against 195-317 at 512 KiB; four ranks
	// on two CPUs, against Rabenseifner, 245-277 against 196-309 at 64
	// KiB, 339-410 against 283-309 at 128 KiB, 465-600 against 361-429 at
	// 256 KiB, 1034-1086 against 584-708 at 512 KiB.
	allreduceLossyFew = 128 << 10
	allreduceLarge    = 4 << 20 // from here: pipelined ring
	// allreduceLossyRing: from here, and at two ranks, a lossy codec takes
	// the ring where Rabenseifner would run uncompressed. The ring
	// encodes its own block while reducing it and forwards the rest as it
	// came; Rabenseifner encodes each block it sends anew, but takes lg p
	// steps to the ring's p-1. bf16 over tcp on a Zen 5 host (2026-11-28,
	// three alternating rounds, mean us), ring against Rabenseifner: at 2
	// ranks 125-149 against 134-137 at 1 MiB and 523-527 against 548-556
	// at 4 MiB; at 4 ranks 296-309 against 241-274 at 512 KiB, 425-470
	// against 388-430 at 1 MiB, 794-819 against 789-862 at 2 MiB and
	// 1714-1728 against 2110-2236 at 4 MiB.
	allreduceLossyRing = 2 << 20
	bcastSmall         = 64 << 10 // below: binomial tree
	// bcastFlatBytes: below, without receipts and with at most bcastFlat
	// ranks, the root sends to every rank itself. One hop instead of lg p:
	// on the machine measured (2026-11-25, tcp, 4 ranks on 2 cores, five
	// alternating rounds) an 8 B Bcast took 66 µs against the tree's 103.
	// With receipts the root would take p-1 of them itself, and the tree
	// won (90 against 132).
	bcastFlatBytes = 16 << 10
	bcastFlat      = 4
	bcastLarge     = 4 << 20   // from here: pipelined chain
	gatherSmall    = 256 << 10 // below: binomial tree, above: linear
	// gatherFlat: a Gather of at most this many ranks is linear at every
	// size: one hop instead of lg p, into a root that receives p-1 blocks
	// either way. On the machine measured (2026-11-25, tcp, 4 ranks on 2
	// cores, three rounds) a 64 KiB Gather took 124-136 µs linear against
	// 158-199 down the tree, 8 KiB 93-139 against 156-242. Scatter's tree
	// won two rounds of three there and keeps the threshold.
	gatherFlat     = 4
	allgatherSmall = 64 << 10 // below: Bruck, above: ring
	// allgatherLarge: below, recursive doubling for a power-of-two rank
	// count, which sends what the ring sends in lg p messages instead of
	// p-1. Above, MPICH takes the ring for the sake of networks that pair
	// distant ranks; on one host the ring has nothing to gain.
	allgatherLarge = 512 << 10
	// reduceLarge and reduceTreeRanks: from reduceLarge, a Reduce of
	// more than reduceTreeRanks ranks across hosts is Rabenseifner's,
	// whose ranks each combine a share and send it to root, about twice
	// the buffer's bytes each, where the pipelined tree's root receives
	// lg p buffers. That is the cost model's choice, as MPICH's, and not
	// measured: on one host the tree won at every size and rank count
	// measured, since every byte either moves costs the host's CPUs a
	// copy at both ends. Over tcp on the AMD EPYC Zen 3 VM (2026-11-30,
	// three rounds, median µs, the tree against Rabenseifner's) two ranks
	// 2058 against 2428 at 4 MiB and 8931 against 10648 at 16 MiB; four
	// ranks 948 against 1170, 5269 against 5569 and 22879 against 26986
	// at 1, 4 and 16 MiB; eight ranks on two CPUs 3242 against 3469,
	// 12077 against 13166, 50064 against 56182.
	reduceLarge     = 4 << 20
	reduceTreeRanks = 4

	// DefaultChunkSize is the chunk of the pipelined algorithms when
	// WithChunkSize is not given: large enough that per-message cost is
	// small next to the transfer, small enough that several chunks are in
	// flight at once. On the machine measured (2026-11-23, 2 and 4 ranks,
	// 16 and 64 MiB, tcp and mem links) 4 MiB chunks made the pipelined
	// ring 1.3-1.8x and the chain 1.4-2x faster than 256 KiB ones, and only
	// with them did the pipelined ring beat the plain one over tcp.
	DefaultChunkSize = 4 << 20

	// lossyChunk is the default chunk of a lossy codec. Each chunk costs
	// an encoding and a decoding besides its transfer. Across a link
	// slower than memory, smaller chunks let them overlap the wire: two
	// ranks across a veth shaped to 10 Gbit/s (bench/reference/shaped.sh,
	// 16 MiB bf16 Allreduce, 2026-11-26, three runs of three rounds,
	// builds alternating) moved 2.11-2.32 GB/s, 1.85-2.00 times
	// uncompressed, with 1 MiB chunks against 1.87-2.15 GB/s, 1.61-1.87
	// times, with 4 MiB. On one host, where memory traffic sets the pace,
	// a chunk's wire bytes stay in the caches between the codec and the
	// kernel only if the chunks in flight fit there: once the ring sent
	// each reduced chunk on at once (2026-11-28, a Zen 5 host, tcp, three
	// alternating rounds, mean ms), 1 MiB chunks took 12.5-13.2 against
	// 13.6-14.4 for 4 MiB at 64 MiB and two ranks, 38.2-39.3 against
	// 45.9-47.1 at four.
	lossyChunk = 1 << 20

	// MaxChunks is the most chunks a pipelined algorithm cuts one buffer
	// into (Chain: the whole buffer; RingChunked: each rank's block).
	// A smaller chunk size, given or tuned, is raised to fit: every
	// message costs a header and a wake-up, and a 1 MiB Chain Bcast with
	// 1-byte chunks took minutes in a million messages.
	MaxChunks = 1024
)

// capChunk raises chunk, the elements per chunk of a pipelined buffer of
// n elements, so that the buffer takes at most MaxChunks chunks.
func capChunk(chunk, n int) int {
	return max(chunk, 1, (n+MaxChunks-1)/MaxChunks)
}

// Algorithms returns the algorithms that WithAlgorithm may force on the
// collective of the given kind, whatever the communicator (Shm needs a
// segment, Hierarchical a hierarchy); nil for kinds without a choice.
func Algorithms(kind wire.Kind) []Algorithm { return wire.Algorithms(kind) }

// reorders lists the (collective, algorithm) pairs that combine operands
// out of rank order, which only a commutative op tolerates.
var reorders = map[wire.Kind][]Algorithm{
	wire.KindAllreduce:     {Ring, RingChunked, Hierarchical},
	wire.KindReduceScatter: {Ring},
}

// topology is what a communicator offers besides links: a shared segment
// (all ranks on one host) or a hierarchy (ranks on several hosts, some
// sharing one); and what the selector consults: the tuning table, keyed
// by transport.
//
// oneHost says that every rank runs on one host, whatever links join
// them: then every byte a link moves costs the host's CPUs a copy at each
// end, and an algorithm that moves fewer bytes in all wins even where one
// that spreads them over more links would win on a network.
type topology struct {
	shared, hierarchical, oneHost bool
	transport                     string
	tuning                        *tuning.Table
}

func topologyOf(c *core.Comm) topology {
	return topology{shared: c.Segment() != nil, hierarchical: c.Hierarchy() != nil, oneHost: c.OneHost(),
		transport: c.Transport(), tuning: c.Tuning()}
}

// choose picks the algorithm of one call: the one the call asked for, else
// the one GOCOLL_ALGO names for this collective, else the tuning table's
// entry for the call, else the selector's. With a table's algorithm it
// also returns the entry's chunk size and codec (zero otherwise), which
// apply when neither the call nor the environment sets them. Where the
// ranks share memory the selector takes the shared-memory algorithms,
// which move every byte through memory at most a few times and wait on
// memory instead of on messages, unless the call compresses: those
// algorithms send no messages to compress.
func choose(kind wire.Kind, cfg *config, ranks, bytes int, commutative bool, topo *topology) (Algorithm, tuning.Choice, error) {
	a, err := chooseAlgorithm(kind, cfg, ranks, commutative, topo)
	if err != nil || a != Auto {
		return a, tuning.Choice{}, err
	}
	// A table pairs a codec only with algorithms that compress (package
	// tuning refuses the others), so its codec cannot make its algorithm
	// unrunnable: the call's codec is what to check.
	if t, ok := topo.tuning.Lookup(kind, ranks, topo.transport, int64(bytes)); ok && runnable(kind, t.Algorithm, cfg, ranks, commutative, topo) {
		return t.Algorithm, t, nil
	}
	return defaultAlgorithm(kind, ranks, bytes, commutative, cfg, topo), tuning.Choice{}, nil
}

// runnable reports whether a tuning table's algorithm can run this call.
// A table is measured on one machine and job shape; where the
// communicator lacks what the algorithm needs (a shared segment, a
// hierarchy, a commutative op, messages to compress) the call falls back
// to the built-in selection instead of failing.
func runnable(kind wire.Kind, a Algorithm, cfg *config, ranks int, commutative bool, topo *topology) bool {
	return checkForced(kind, a, cfg, ranks, commutative, topo) == nil
}

// chooseAlgorithm returns the algorithm the call or GOCOLL_ALGO forces,
// checked, or Auto.
func chooseAlgorithm(kind wire.Kind, cfg *config, ranks int, commutative bool, topo *topology) (Algorithm, error) {
	a := cfg.algo
	if a == Auto {
		a = envAlgorithm(kind)
	}
	if a == Auto {
		return Auto, nil
	}
	if err := checkForced(kind, a, cfg, ranks, commutative, topo); err != nil {
		return 0, err
	}
	return a, nil
}

// checkForced says why a cannot run the call, if it cannot.
func checkForced(kind wire.Kind, a Algorithm, cfg *config, ranks int, commutative bool, topo *topology) error {
	switch {
	case cfg.codec != codec.None && !a.Compresses():
		return fmt.Errorf("%w: %s with %s moves data through shared memory, which %s compression cannot apply to; drop the codec or choose a link algorithm", codec.ErrInvalid, kind, a, cfg.codec)
	case !wire.Accepts(kind, a):
		return fmt.Errorf("%w: %s has no %s algorithm (it has %v)", codec.ErrInvalid, kind, a, wire.Algorithms(kind))
	case !commutative && slices.Contains(reorders[kind], a):
		return fmt.Errorf("%w: %s with %s combines operands out of rank order; a non-commutative op needs another algorithm", codec.ErrInvalid, kind, a)
	case a == Shm && !topo.shared && ranks > 1:
		return fmt.Errorf("%w: %s with shm needs a communicator whose ranks share a host and memory (transport auto or shm)", codec.ErrInvalid, kind)
	case a == Hierarchical && !topo.hierarchical:
		return fmt.Errorf("%w: %s with hierarchical needs a communicator across hosts with shared memory inside them (transport auto)", codec.ErrInvalid, kind)
	}
	return nil
}

// defaultAlgorithm is the built-in selection, by the cost model.
func defaultAlgorithm(kind wire.Kind, ranks, bytes int, commutative bool, cfg *config, topo *topology) Algorithm {
	compress := cfg.codec != codec.None
	if topo.shared && !compress && wire.Accepts(kind, Shm) {
		return Shm
	}
	if topo.hierarchical && !compress && kind == wire.KindAllreduce && commutative {
		return Hierarchical
	}
	switch kind {
	case wire.KindAllreduce:
		switch {
		case bytes < allreduceSmall || !commutative:
			return RecursiveDoubling
		case ranks <= 4 && bytes < allreduceFew && !(cfg.codec.Lossy() && bytes >= allreduceLossyFew):
			return RecursiveDoubling
		case bytes >= allreduceLarge:
			return RingChunked
		case ranks&(ranks-1) == 0 && (!cfg.codec.Lossy() || ranks > 2 && bytes < allreduceLossyRing):
			return Rabenseifner
		}
		return Ring
	case wire.KindBcast:
		switch {
		case bytes < bcastFlatBytes && ranks <= bcastFlat && cfg.noReceipts:
			return Linear
		case bytes < bcastSmall || ranks <= 2 || topo.oneHost:
			// Scatter-allgather and the chain move twice the tree's bytes
			// in all, or as many in more messages.
			return Tree
		case bytes >= bcastLarge:
			return Chain
		}
		return ScatterAllgather
	case wire.KindGather, wire.KindScatter:
		if bytes < gatherSmall && !(kind == wire.KindGather && ranks <= gatherFlat) {
			return Tree
		}
		return Linear
	case wire.KindAllgather:
		switch {
		case ranks&(ranks-1) == 0 && (bytes < allgatherLarge || topo.oneHost):
			return RecursiveDoubling
		case bytes < allgatherSmall:
			return Bruck
		}
		return Ring
	case wire.KindReduce:
		if bytes >= reduceLarge && ranks > reduceTreeRanks && !topo.oneHost {
			return Rabenseifner // keeps rank order too
		}
		return Tree
	case wire.KindReduceScatter:
		// Recursive halving keeps rank order, so it also serves
		// non-commutative ops.
		if !commutative || ranks&(ranks-1) == 0 {
			return RecursiveHalving
		}
		return Ring
	}
	return wire.Fallback(kind)
}

// chunkElems is the number of elements per chunk of a pipelined algorithm:
// the call's WithChunkSize, else GOCOLL_CHUNK, else the tuning table's,
// else lossyChunk for a lossy codec, else DefaultChunkSize.
func (c config) chunkElems(elemSize int) int {
	if c.codec.Lossy() {
		return c.chunkElemsOr(elemSize, lossyChunk)
	}
	return c.chunkElemsOr(elemSize, DefaultChunkSize)
}

// chunkElemsOr is chunkElems with bytes, not the default of the ring and
// the chain, where nothing sets the chunk.
func (c config) chunkElemsOr(elemSize, bytes int) int {
	return max(1, cmp.Or(c.chunk, envChunk(), c.tunedChunk, bytes)/elemSize)
}

// GOCOLL_ALGO overrides the selector for experiments, like NCCL_ALGO:
// "allreduce:ring,bcast:tree". GOCOLL_CHUNK sets the default chunk size
// in bytes, and GOCOLL_CODEC the default wire codec ("bf16", "zstd", ...)
// of every call whose element type it applies to, GOCOLL_RECEIPTS
// whether calls take receipts (WithReceipts), and GOCOLL_PROFILE_LABELS=1
// puts profiler labels on every call (label). They are read once; entries
// that do not parse are ignored, and reported through the logger of the
// first communicator a collective is called on (reportEnv). Every call
// reads them, through a pointer: a copy per read cost 5 % of an 8 B call.
var env = sync.OnceValue(func() *envSettings {
	e, problems := parseEnv(os.Getenv("GOCOLL_ALGO"), os.Getenv("GOCOLL_CHUNK"), os.Getenv("GOCOLL_CODEC"), os.Getenv("GOCOLL_RECEIPTS"), os.Getenv("GOCOLL_PROFILE_LABELS"))
	e.problems = problems
	return &e
})

// envReported says that reportEnv has reported: a flag, not a
// sync.Once, whose Do does not inline and cost 4 % of an 8 B call.
var envReported atomic.Bool

// reportEnv logs what the environment's settings ignored, through c's
// logger, the first time a collective is called. It inlines to a load.
func reportEnv(c *core.Comm) {
	if !envReported.Load() {
		reportEnvOnce(c)
	}
}

func reportEnvOnce(c *core.Comm) {
	if envReported.CompareAndSwap(false, true) {
		for _, p := range env().problems {
			c.Logger().Warn(p)
		}
	}
}

// envSettings is what the environment overrides; zero values override
// nothing.
type envSettings struct {
	algos    map[wire.Kind]Algorithm
	chunk    int
	codec    codec.ID
	codecSet bool
	// noReceipts is GOCOLL_RECEIPTS turned off.
	noReceipts bool
	// profileLabels is GOCOLL_PROFILE_LABELS turned on.
	profileLabels bool
	// problems are the entries ignored, as parseEnv says them.
	problems []string
}

// parseEnv parses GOCOLL_ALGO, GOCOLL_CHUNK, GOCOLL_CODEC,
// GOCOLL_RECEIPTS and GOCOLL_PROFILE_LABELS and says what it ignored.
func parseEnv(algoVar, chunkVar, codecVar, receiptsVar, labelsVar string) (envSettings, []string) {
	e := envSettings{algos: map[wire.Kind]Algorithm{}}
	var problems []string
	for _, item := range strings.Split(algoVar, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, algo, ok := strings.Cut(item, ":")
		kind, kerr := wire.ParseCollective(name)
		a, err := ParseAlgorithm(algo)
		switch {
		case !ok || kerr != nil || err != nil:
			problems = append(problems, fmt.Sprintf("ignoring GOCOLL_ALGO entry %q: want collective:algorithm, such as allreduce:ring", item))
		case !wire.Accepts(kind, a):
			problems = append(problems, fmt.Sprintf("ignoring GOCOLL_ALGO entry %q: %s has no %s algorithm", item, kind, a))
		default:
			e.algos[kind] = a
		}
	}
	if chunkVar != "" {
		if _, err := fmt.Sscan(chunkVar, &e.chunk); err != nil || e.chunk <= 0 {
			problems = append(problems, fmt.Sprintf("ignoring GOCOLL_CHUNK=%q: want a positive number of bytes", chunkVar))
			e.chunk = 0
		}
	}
	if codecVar != "" {
		c, err := codec.Parse(strings.TrimSpace(codecVar))
		if err != nil {
			problems = append(problems, fmt.Sprintf("ignoring GOCOLL_CODEC=%q: %v", codecVar, err))
		} else {
			e.codec, e.codecSet = c, true
		}
	}
	if receiptsVar != "" {
		on, err := strconv.ParseBool(strings.TrimSpace(receiptsVar))
		if err != nil {
			problems = append(problems, fmt.Sprintf("ignoring GOCOLL_RECEIPTS=%q: want 1 or 0, true or false", receiptsVar))
		}
		e.noReceipts = err == nil && !on
	}
	if labelsVar != "" {
		on, err := strconv.ParseBool(strings.TrimSpace(labelsVar))
		if err != nil {
			problems = append(problems, fmt.Sprintf("ignoring GOCOLL_PROFILE_LABELS=%q: want 1 or 0, true or false", labelsVar))
		}
		e.profileLabels = err == nil && on
	}
	return e, problems
}

func envAlgorithm(kind wire.Kind) Algorithm { return env().algos[kind] }
func envChunk() int                         { return env().chunk }
