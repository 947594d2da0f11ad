package collective

import (
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/wire"
)

// Algorithm names a collective algorithm. Auto (the zero value) lets the
// selector choose by collective, rank count and message size. It is
// wire.Algorithm, the algorithm every frame carries.
type Algorithm = wire.Algorithm

// The algorithms. Each collective accepts the ones that apply to it (see
// its documentation); asking for another is an error.
const (
	Auto              = wire.AlgoAuto
	Ring              = wire.AlgoRing              // allreduce, allgather, reduce-scatter
	RingChunked       = wire.AlgoRingChunked       // allreduce: ring with pipelined chunks
	RecursiveDoubling = wire.AlgoRecursiveDoubling // allreduce, allgather, scan, exscan
	Rabenseifner      = wire.AlgoRabenseifner      // allreduce: recursive halving + doubling
	Tree              = wire.AlgoTree              // allreduce (binomial reduce + bcast), bcast, reduce, gather, scatter
	Chain             = wire.AlgoChain             // bcast: pipelined chain
	ScatterAllgather  = wire.AlgoScatterAllgather  // bcast
	Linear            = wire.AlgoLinear            // gather, scatter, and the v-variants
	Bruck             = wire.AlgoBruck             // allgather
	RecursiveHalving  = wire.AlgoRecursiveHalving  // reduce-scatter
	Pairwise          = wire.AlgoPairwise          // alltoall
	Dissemination     = wire.AlgoDissemination     // barrier
	Shm               = wire.AlgoShm               // every collective: through the communicator's shared segment
	Hierarchical      = wire.AlgoHierarchical      // allreduce: shared memory inside hosts, links between them
)

// ParseAlgorithm returns the Algorithm named s, as String spells it.
func ParseAlgorithm(s string) (Algorithm, error) { return wire.ParseAlgorithm(s) }

// Option configures one collective call. Options are plain values, not
// closures, so that passing them costs a call nothing.
type Option struct {
	set   optionKind
	algo  Algorithm
	bytes int
	codec codec.ID
	on    bool
	// objects is WithObjectCodec's codec.
	objects ObjectCodec
}

type optionKind uint8

const (
	setAlgorithm optionKind = iota + 1
	setChunkSize
	setCompression
	setReceipts
	setObjectCodec
)

type config struct {
	algo  Algorithm
	chunk int // bytes per pipelined chunk; 0 means the selector's choice
	// tunedChunk is the tuning table's chunk for the chosen algorithm,
	// set by the selector; 0 means none.
	tunedChunk int
	// codec is the wire codec of the call's messages, and codecSet says
	// that the call chose it (CodecNone included), which GOCOLL_CODEC and
	// the tuning table then do not override.
	codec    codec.ID
	codecSet bool
	// noReceipts says that the call runs without receipts, and
	// receiptsSet that the call chose (GOCOLL_RECEIPTS then does not
	// override).
	noReceipts  bool
	receiptsSet bool
}

func (o Option) apply(c *config) error {
	switch o.set {
	case setAlgorithm:
		if !o.algo.Valid() {
			return fmt.Errorf("%w: unknown algorithm %d", codec.ErrInvalid, uint8(o.algo))
		}
		c.algo = o.algo
	case setChunkSize:
		if o.bytes <= 0 {
			return fmt.Errorf("%w: chunk size %d must be positive", codec.ErrInvalid, o.bytes)
		}
		c.chunk = o.bytes
	case setCompression:
		// Validated with the element type, by chooseCodec.
		c.codec, c.codecSet = o.codec, true
	case setReceipts:
		c.noReceipts, c.receiptsSet = !o.on, true
	case setObjectCodec:
		// The object helpers read it (objectCodecOf); the collectives
		// that move their bytes, and every other call, ignore it.
	default:
		return fmt.Errorf("%w: the zero Option sets nothing; make options with WithAlgorithm, WithChunkSize, WithCompression, WithReceipts and WithObjectCodec", codec.ErrInvalid)
	}
	return nil
}

// WithAlgorithm forces the algorithm of a call instead of letting the
// selector choose. Every rank must pass the same one.
func WithAlgorithm(a Algorithm) Option { return Option{set: setAlgorithm, algo: a} }

// WithChunkSize sets the bytes per chunk of the pipelined algorithms
// (RingChunked, Chain, and the segments of Reduce's Tree). Every rank must
// pass the same size; where the sizes cut the buffer differently, every
// rank fails with ErrMismatch, in the call (a rank that only sends in a
// call without receipts, in its next call). The default is GOCOLL_CHUNK
// when set, else the tuning table's, else 256 KiB for Reduce's Tree and
// DefaultChunkSize for the others, whose default with a lossy codec
// (BF16, FP16) is 1 MiB, so that each chunk's encoding and decoding
// overlap the network's transfer of its neighbours, and its wire bytes
// stay in the caches on their way between the codec and the kernel. A
// size that would cut a buffer into more than MaxChunks chunks is raised
// to fit.
func WithChunkSize(bytes int) Option { return Option{set: setChunkSize, bytes: bytes} }

// WithCompression sets the wire codec of a call's messages. Every rank
// must pass the same one.
//
// codec.BF16 and codec.FP16 send float32 and float64 values as
// 16-bit floats; other element types are refused. Reductions still
// combine in the element type, and every value a lossy call leaves in a
// result buffer has been rounded to the codec's precision, the rank's own
// contribution included, so that all ranks hold the same bits (package
// codec states the error bound). Send-only buffers are never written.
//
// codec.Zstd and codec.S2 are lossless and apply to any type; a
// message that does not shrink goes raw.
//
// The shared-memory algorithms (Shm, Hierarchical) move data through
// memory, not messages, and do not compress: with a codec the selector
// takes a link algorithm instead, and forcing one of them is an error.
// The default is codec.None, or GOCOLL_CODEC, or the tuning table's
// codec when set.
func WithCompression(c codec.ID) Option { return Option{set: setCompression, codec: c} }

// WithReceipts(false) lets a rank that only sends in a call return as
// soon as its data is sent, as MPI allows, instead of when the rank it
// sent to has confirmed that it made the same call. Every rank must pass
// the same setting; the default is true, or GOCOLL_RECEIPTS when set
// ("0" or "false" turns receipts off).
//
// The ranks that only send are the root of a Bcast and of a Scatter and
// the ranks of a Gather or Reduce that receive from nobody (with two
// ranks, every rank but the root). With receipts, each of them fails
// inside the call when the rank it sent to called something else, at
// the cost of a header from that rank in every call: on loopback TCP an
// 8-byte Bcast then takes twice as long. Without them, such a rank may
// return nil before the disagreement is found, and learns of it as an
// error from its next call, as soon as the rank that found it has
// aborted the job. Two ranks that both call a Bcast as its root, say,
// both return holding their own buffers. Use it where the calls are known
// to match (a tested training loop) and small rooted calls are frequent.
//
// In a shared segment (Shm, Hierarchical) there are no headers: with
// receipts, every rank compares every rank's call there before it
// returns. Without them, a call whose data fits a rank's fast line in the
// segment (96 bytes; for Scatter, all of root's send) goes as over links:
// a rank waits only for the ranks whose data it reads, a Bcast's root for
// none, and compares the others' calls as its next call begins, before
// it writes anything. Larger calls there compare every call either way.
func WithReceipts(on bool) Option { return Option{set: setReceipts, on: on} }

// WithObjectCodec sets the encoding of the values of the object helpers
// (BcastObject, AllgatherObject, GatherObject, ScatterObject, SendObject,
// RecvObject and RecvObjectInto): RawCodec, GobCodec, or a codec of the
// caller's. The default is RawCodec, because it sends slices and arrays
// of numbers (and of structs of numbers) as raw blocks, at nearly the
// speed of a typed collective, and covers everything else that gob
// encodes; GobCodec is for values whose encoding must describe itself.
// Every rank must pass the same codec: in a collective, a rank that
// cannot decode what another encoded aborts the job with
// comm.ErrMismatch; point to point, the receive alone fails with it. The
// other calls, which move typed slices, ignore the option, so one list of
// options can serve both. A nil codec is an error of the object helpers
// that get it.
func WithObjectCodec(oc ObjectCodec) Option { return Option{set: setObjectCodec, objects: oc} }
