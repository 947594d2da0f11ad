package comm

import "github.com/gocoll/gocoll/internal/core"

// CallStats is what the collective calls of one kind and algorithm did
// on a communicator, on this rank (Comm.Stats).
//
// Calls, Failed, BytesSent and BytesReceived count every call: Failed
// those that returned an error, and the bytes are the payloads this rank
// sent to and took from the other ranks, over links or through the
// host's shared segment. Transport says what carried them: "tcp", "shm"
// or "mem" links (joined by + when the links to different ranks differ,
// counting links made so far), "segment" for the shared segment, or
// "self" for a communicator of one rank.
//
// Time is the wall time of the Timed calls, which are every call of at
// least 64 KiB and one in WithStatsSampling of the smaller ones (reading
// the clock costs a tenth of an 8-byte call over shared memory). It
// splits into:
//
//   - Wait: waiting for other ranks: for a message whose first byte had
//     not arrived, or for another rank's step in the shared segment. A
//     call that spends its time here waits for a slower rank.
//   - Wire: moving bytes over links: sending, and receiving a message
//     whose first byte had arrived. A call that spends its time here is
//     bound by the network.
//   - Copy: copying into, out of and across the shared segment.
//   - Reduce: combining operands with the op.
//   - Codec: encoding and decoding compressed payloads (WithCompression),
//     and combining a BF16 or FP16 payload with this rank's elements,
//     which happens piece by piece as it is decoded.
//   - Other (a method): the rest, the call's own bookkeeping.
//
// Time / Timed is the mean time of a call; Calls × that estimates the
// time of all of them.
type CallStats = core.CallStats

// Stats returns what the collective calls on c did so far on this rank,
// one CallStats per collective and algorithm that ran, by collective and
// then algorithm. Counting is always on: with the profiler labels, it
// adds about 15 ns to a call's fixed cost (docs/guide.md says how it is
// kept that low). Stats may be called from any goroutine at any time,
// also while calls run; a blocking call's counts join a row in batches
// of 64 calls, so while one runs, Stats may show fewer than 64 calls
// too few of each row, and all of them once no call runs.
func (c *Comm) Stats() []CallStats { return c.core().Stats() }

// DefaultStatsSampling is the WithStatsSampling of a communicator that
// does not set one.
const DefaultStatsSampling = core.DefaultStatsSampling

// WithStatsSampling sets how many of the collective calls of less than
// 64 KiB Stats times: one in n; 1 times every call, 0 none (larger calls
// are timed whenever n is not 0). GOCOLL_STATS_SAMPLING sets it too.
func WithStatsSampling(n int) Option { return Option(core.WithStatsSampling(n)) }

// WithTimeline makes every rank write a timeline of its collective calls
// to path, with ".rankN" before the extension (trace.json becomes
// trace.rank3.json): a Chrome trace-event file, which ui.perfetto.dev and
// chrome://tracing open, holding a span per call (collective, algorithm,
// bytes, sequence number) and, nested in it, a span per send, per wait for
// a message's first byte or another rank's step, and per receipt of the
// rest. gocoll run --trace merges the ranks' files into one, a track per
// rank; so does gocoll trace merge. GOCOLL_TRACE=path does the same as
// the option. A timeline times every call, which costs about 50 ns a
// call, and a span about 65 ns more.
func WithTimeline(path string) Option { return Option(core.WithTimeline(path)) }
