// Package tuning reads and writes gocoll's tuning tables: which algorithm,
// chunk size and wire codec a collective should use for a communicator
// size, transport and message size, as measured on one machine by gocoll
// tune.
//
// A table is a JSON file:
//
//	{
//	  "entries": [
//	    {"collective": "allreduce", "ranks": 4, "transport": "tcp",
//	     "min_bytes": 1048576, "max_bytes": 16777215,
//	     "algorithm": "ring_chunked", "chunk": 1048576, "codec": "none"}
//	  ]
//	}
//
// An entry applies to calls of its collective (as wire.Kind names it,
// any case) on a communicator of exactly ranks ranks over transport
// (auto, tcp, shm or mem, as comm.WithTransport names it) whose message
// is min_bytes to max_bytes bytes, both included. Ranks match exactly: a
// choice measured on 2 ranks says little about 64, so other sizes keep
// the built-in selection. chunk is the bytes per chunk of the pipelined
// algorithms (ring_chunked, chain), 0 for the default; other algorithms
// must have 0. codec is the wire codec, as codec.Parse spells it:
// "none" (or omitted), the lossless "zstd" and "s2", or the lossy "bf16"
// and "fp16", which round the results of the calls the entry covers to
// 16-bit precision (see collective.WithCompression). A lossy codec
// applies to float32 and float64 calls only: package collective sends
// calls of other element types in the entry's range uncompressed. The
// shared-memory algorithms (shm, hierarchical) do not compress and must
// have codec none. Entries of the same collective, ranks and transport
// must not overlap. Sizes no entry covers keep the built-in selection.
//
// comm.WithTuning and GOCOLL_TUNING load a table into a communicator;
// package collective consults it. This package sits below comm so that a
// bad table fails comm.Init rather than a collective call.
package tuning
