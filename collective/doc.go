// Package collective runs MPI-style collectives (Allreduce, Bcast, Gather,
// Scatter, Allgather, ReduceScatter, Scan, Alltoall, Barrier and their v
// variants) on typed Go slices over a comm.Comm. Every rank of the
// communicator makes the same calls in the same order; each call chooses
// an algorithm by the communicator's size, the message size and the
// transport (WithAlgorithm forces one), and sends the slices' own memory.
//
// A program joins its job with comm.Init and then calls collectives on
// the world communicator:
//
//	c, err := comm.Init(ctx)
//	...
//	defer c.Close()
//	err = collective.Allreduce(ctx, c, grads, codec.Avg)
//
// # Choosing algorithms
//
// Each collective has several algorithms (Algorithms lists them; the
// constants Ring, Tree, RecursiveDoubling, Rabenseifner, Chain, Shm,
// Hierarchical and the others name them). A call takes, in this order:
// the algorithm WithAlgorithm forces, the one GOCOLL_ALGO names, the
// communicator's tuning table's entry for the call (comm.WithTuning;
// gocoll tune writes tables), or the built-in selection: the shared-memory
// algorithms where every rank shares a host, latency-bound algorithms
// (recursive doubling, trees) for small messages and bandwidth-bound ones
// (ring, Rabenseifner, chain) for large ones. WithChunkSize sets the
// chunk of the pipelined algorithms. Every rank must choose the same; a
// forced algorithm that cannot run (Shm across hosts, a ring on a
// non-commutative op) is an error.
//
// # Compression
//
// WithCompression(codec.BF16) or codec.FP16 sends float32 and
// float64 data as 16-bit floats, halving the bytes on the wire; the
// result is rounded, within the bound that package codec derives, and the
// same on every rank. codec.Zstd and codec.S2 are lossless and
// pay only for compressible data. Compression helps when the network
// limits a call, not on loopback or inside a host; the shared-memory
// algorithms never compress. GOCOLL_CODEC sets a default.
//
// # Registered memory
//
// Alloc returns slices in shared memory that the other ranks of the host
// can map. Where every rank's buffers of a call lie in such memory, the
// shared-memory collectives (Allreduce, ReduceScatter, Bcast, Gather,
// Scatter, Allgather, Allgatherv and Alltoall of 16 KiB and more; Gather
// and Scatter of 256 KiB and more, and Bcast of 32 KiB and more, where
// the host's ranks outnumber its CPUs; and Hierarchical Allreduce inside
// each host) move the data once, straight between the ranks' buffers,
// instead of copying it into the communicator's segment and out again;
// elsewhere every rank takes the segment's path, so registered and
// ordinary buffers mix freely. Free releases the memory. A Bucketer puts
// its buckets there by itself.
//
// # Async and buckets
//
// AllreduceAsync, ReduceScatterAsync and AllgatherAsync start their
// collective and return a *Request at once; it runs in a goroutine of its
// own beside the caller's work. Each takes its place in the
// communicator's order when it is issued, not when it runs, so any number
// may be in flight, with blocking collectives between them, as long as
// every rank issues the same calls in the same order. Their buffers are
// the collective's until it completes: touch them only once Wait has
// returned its result or Done is closed. Arguments are checked at issue;
// a bad one aborts the job, as in the blocking calls, and is the error
// Wait returns.
//
// Wait(ctx) returns the collective's error once it completes. If ctx ends
// first, Wait returns at once with a *comm.OpError naming the call that
// wraps ctx's error and its cause, and the collective goes on: its
// buffers are still in use, and a later Wait, or Done, gives its result.
// Only the context the collective was issued with, and the communicator's
// timeout, end the collective itself.
//
// ReduceScatterAsync and AllgatherAsync are the two halves of a sharded
// (ZeRO, FSDP) optimiser step: reduce-scatter each gradient bucket as it
// is ready, update the local shard when it completes, and allgather the
// updated shards, in place, while later buckets still reduce. A Bucketer
// does what distributed trainers do with gradients: it packs many small tensors, registered once, into buckets
// of WithBucketBytes and reduces each bucket as soon as its tensors are
// Ready, so communication overlaps the backward pass.
//
// # Objects
//
// BcastObject, AllgatherObject, GatherObject and ScatterObject move any
// Go value (configuration, vocabularies, metadata, structs holding
// gradients), AllreduceObject folds every rank's value with a function of
// yours, as mpi4py's allreduce(obj, op) does, and SendObject and
// RecvObject move one between two ranks,
// RecvObject from comm.AnySource too (RecvObjectInto decodes into a
// value the caller keeps, reusing its arrays). Each value is encoded by an
// ObjectCodec and decoded on arrival, as mpi4py's lowercase methods
// pickle. The default, RawCodec, sends a slice or array of numbers, or of
// structs of numbers, as its own memory: a []float32 inside a value costs
// a memmove each way, and a BcastObject of a slice, or of a value that
// ends with one (a struct whose last field is the slice), goes straight
// between the ranks' slices, as does a SendObject of one to
// RecvObjectInto (to RecvObject, into the slice it makes);
// AllgatherObject and AllreduceObject send each rank's from its memory.
// It covers everything gob encodes, but
// every rank must pass the same type, which a fingerprint checks. GobCodec
// (WithObjectCodec) sends self-describing gob, for types that differ
// between ranks. In a collective, a value that does not encode aborts the
// job with ErrInvalid, and one that does not decode with comm.ErrMismatch
// naming both ranks and the type; point to point, either is the call's
// error alone; an error of AllreduceObject's op is every rank's, and the
// job goes on. ReduceLocal combines slices that came inside objects with
// the collectives' own kernels, as MPI_Reduce_local does. Small
// encodings take one call; a value broadcast again at about the same
// size, up to 64 KiB, takes one Bcast after the first.
//
// # Concurrency
//
// Ranks match their collectives by the order in which each rank issues
// them, so that order must be the same on every rank:
//
//   - Blocking collectives of one communicator must not overlap. A
//     blocking collective called while another runs on the same
//     communicator in another goroutine fails with an error wrapping
//     ErrInvalid, and so does the one it overlapped; the job is aborted,
//     since the ranks may have matched the wrong calls. No rank returns
//     data of another goroutine's call.
//   - To run collectives concurrently, use AllreduceAsync (its place in
//     the order is taken when it is issued, so issue from one goroutine,
//     or in an order every rank shares) or Split the communicator, one
//     per goroutine: communicators never match each other's traffic.
//   - Different communicators may be used from different goroutines
//     freely, and so may Rank, Size and the point-to-point calls of
//     package comm, as its doc says.
//
// # Agreement
//
// Every rank must make the same call: collective, element type, count,
// op, root, algorithm, chunk size and codec. Ranks that disagree get an
// error wrapping ErrMismatch (a *MismatchError naming both ranks and both
// calls, or the *comm.AbortError it causes on the ranks that learn it
// from the rank that found it), never a result built from another call's
// data. The ranks that disagree, and the root of a rooted collective,
// fail inside the call; a rank whose own part matched every rank it
// exchanged data with may return and fail in its next call, since the
// job is aborted. Over links every message carries its call, and a rank
// that would receive nothing in a call (a root that only sends, a leaf
// that only contributes) receives a header from the rank it sent to, its
// receipt; in a shared segment every rank compares every rank's call
// before it returns. WithReceipts(false) (or GOCOLL_RECEIPTS=0) drops the
// receipts where calls are known to match: such a rank then returns once
// its data is sent, as in MPI, and learns of a disagreement in its next
// call. In a shared segment that holds for calls whose data fits a
// rank's fast line there (96 bytes): a rank waits only for the lines it
// reads, and compares the others' calls as its next call begins.
// Gatherv and Scatterv need counts only at root, as in MPI: every other
// rank's part must have root's count for it, which each message carries
// and both sides check.
//
// # Errors
//
// Errors are *comm.OpError values naming the call, the rank and the
// communicator, and wrap the sentinels of package comm and codec:
// codec.ErrInvalid (also comm.ErrInvalid) for bad arguments, which abort the job as
// MPI's default error handler does (a root out of range, a buffer of the
// wrong length, an op that cannot reduce the type, a user op that
// panics, overlapping calls); ErrMismatch for disagreeing ranks;
// comm.ErrAborted, comm.ErrPeerLost, comm.ErrPeerClosed and
// comm.ErrTimeout for the job's failures; and the context's error when
// the call's context ends, also when it has ended before the call.
//
// # Pipelining
//
// The pipelined algorithms (Chain, RingChunked, and Reduce's Tree) cut a
// buffer into chunks of WithChunkSize bytes, at most MaxChunks of them: a
// smaller chunk size is raised to fit.
//
// # Performance
//
// The collectives reduce and copy in place on the caller's slices, with
// no allocation per call once warm (the tests count them); AllreduceInto
// and ReduceInto reduce from a send slice into a receive slice without
// copying the send slice first, as MPI_Allreduce and MPI_Reduce with two
// buffers do. They move
// large buffers in chunks so that sending, receiving and reducing
// overlap. docs/performance.md in the repository has the measurements
// against Open MPI and the commands that reproduce them (gocoll bench,
// bench/reference/sidebyside.sh).
package collective
