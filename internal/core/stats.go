package core

import (
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gocoll/gocoll/internal/wire"
)

// Statistics. Every collective call keeps a Tally of what it did: the
// bytes it sent and received and, when it is timed, where its time went.
// When it ends, the tally goes into its communicator's row for the
// call's collective and algorithm (Account), where Stats reads it.
//
// Reading the clock costs about 25 ns here, a tenth of an 8-byte call
// over shared memory, so not every call is timed: one in
// Options.statsSampling of the calls of less than timedFrom bytes
// (sampled, by their sequence numbers), and every larger one, whose time
// dwarfs the clock's.
//
// Counting must cost less than an atomic add per figure, about 2.5 ns
// each (three of them were 3 % of an 8-byte call). A blocking call, which
// holds its communicator (EnterCall), adds its figures to its row's
// pending counts, plain fields that only the holder of the communicator
// touches, and moves them into the row's atomic counts every flushEvery
// calls and with every timed one. Stats reads the pending counts too,
// holding the communicator for the moment it takes (holdForStats); while
// a blocking call runs, it reports the moved counts only, which lag by
// fewer than flushEvery calls of each row. Async calls, which hold
// nothing, add to the atomic counts directly.

// timedFrom is the size from which every call is timed.
const timedFrom = 64 << 10

// DefaultStatsSampling is comm.DefaultStatsSampling.
const DefaultStatsSampling = 64

var epoch = time.Now()

// Now is the clock of tallies and timelines: nanoseconds since the
// process's first use of this package, on the monotonic clock.
func Now() int64 { return int64(time.Since(epoch)) }

// Part is a share of a timed call's time (CallStats).
type Part uint8

const (
	// PartWait is time spent waiting for a peer: for a message whose
	// first byte had not arrived, or for a rank's line or step in a
	// shared segment.
	PartWait Part = iota
	// PartWire is time spent moving bytes over links: sending, and
	// receiving a message whose header had arrived.
	PartWire
	// PartCopy is time spent copying data into, out of or across a
	// shared segment, or between the caller's buffers.
	PartCopy
	// PartReduce is time spent combining operands.
	PartReduce
	// PartCodec is time spent encoding and decoding compressed payloads,
	// and combining a lossy payload with a rank's own elements, which
	// happens piece by piece as it is decoded.
	PartCodec
	numParts
)

// A Tally is what one call did, accumulated by the call itself: its
// bytes always, its time split into Parts when it is timed (StartTally
// decides). Its methods do nothing but a test when the call is not timed.
type Tally struct {
	Sent, Received uint64

	kind        wire.Kind
	algo        wire.Algorithm
	started     bool // by StartTally
	blocking    bool // the call holds its communicator
	traced      bool // the call goes on the rank's timeline
	on          bool
	start, last int64
	parts       [numParts]int64
}

// Started is when the tally started, on Now's clock, if it is timed.
func (t *Tally) Started() int64 { return t.start }

// Marked is when the last lap ended or Mark was called, if it is timed.
func (t *Tally) Marked() int64 { return t.last }

// Traced reports whether the call goes on the rank's timeline (then it
// is timed too).
func (t *Tally) Traced() bool { return t.traced }

// Timed reports whether the tally measures time.
func (t *Tally) Timed() bool { return t.on }

// Mark starts a lap: the time since the last one goes to no part.
func (t *Tally) Mark() {
	if t.Timed() {
		t.last = Now()
	}
}

// Lap adds the time since the last lap (or Mark) to part p.
func (t *Tally) Lap(p Part) {
	if t.Timed() {
		now := Now()
		t.parts[p] += now - t.last
		t.last = now
	}
}

// Add adds d nanoseconds, measured apart, to part p.
func (t *Tally) Add(p Part, d int64) {
	if t.Timed() {
		t.parts[p] += d
	}
}

// LapArrival ends a lap that waited for a message whose header arrived
// at arrived (Now's clock; 0 when unknown): until then the call waited
// for its peer, and from then on for the message's bytes.
func (t *Tally) LapArrival(arrived int64) {
	if !t.Timed() {
		return
	}
	now := Now()
	if arrived > t.last && arrived <= now {
		t.parts[PartWait] += arrived - t.last
		t.last = arrived
	}
	t.parts[PartWire] += now - t.last
	t.last = now
}

// statsRow is a communicator's record of one collective and algorithm.
type statsRow struct {
	calls, failed, sent, received, timed atomic.Uint64
	time                                 atomic.Int64
	parts                                [numParts]atomic.Int64
	// pending are blocking calls' counts not moved into the above yet;
	// only the holder of the communicator's busy word touches them.
	pending counts
}

// counts are a row's plain counts.
type counts struct{ calls, failed, sent, received uint64 }

// flushEvery is how many blocking calls' counts a row keeps pending.
const flushEvery = 64

// flush moves the pending counts into the atomic ones.
func (r *statsRow) flush() {
	p := &r.pending
	r.calls.Add(p.calls)
	r.sent.Add(p.sent)
	r.received.Add(p.received)
	if p.failed != 0 {
		r.failed.Add(p.failed)
	}
	*p = counts{}
}

// statsTable is a communicator's statistics, a row per collective and
// algorithm, made on first use.
type statsTable struct {
	// rows by rowIndex: 256 of them, indexed by a byte, which takes
	// no bounds check.
	rows [1 << 8]atomic.Pointer[statsRow]
}

// Every row has an index of its own.
var _ [1<<8 - wire.NumKinds*wire.NumAlgorithms]struct{}

// rowIndex is the index of kind and algo's row.
func rowIndex(kind wire.Kind, algo wire.Algorithm) uint8 {
	return uint8(int(kind)*wire.NumAlgorithms + int(algo))
}

// row is the row of kind and algo, made on its first call.
func (s *statsTable) row(kind wire.Kind, algo wire.Algorithm) *statsRow {
	if r := s.rows[rowIndex(kind, algo)].Load(); r != nil {
		return r
	}
	return s.newRow(kind, algo)
}

func (s *statsTable) newRow(kind wire.Kind, algo wire.Algorithm) *statsRow {
	p := &s.rows[rowIndex(kind, algo)]
	p.CompareAndSwap(nil, new(statsRow))
	return p.Load()
}

// StartTally starts t, the tally of call seq of kind and algo moving
// bytes bytes (the size the selector went by), and times it when the
// sampling says so. A blocking call holds c (EnterCall); an async one
// does not. It only notes what the call is: the call's row is looked up
// when the call ends (Account), which is all a small call pays.
func (c *Comm) StartTally(t *Tally, kind wire.Kind, algo wire.Algorithm, seq uint64, bytes int, blocking bool) {
	t.kind, t.algo, t.blocking, t.traced, t.started = kind, algo, blocking, c.traced, true
	if c.traced || c.sampling != 0 && (bytes >= timedFrom || sampled(seq, c.sampling)) {
		t.time()
	}
}

// time starts timing the tally's call.
func (t *Tally) time() {
	t.on = true
	t.start = Now()
	t.last = t.start
}

// sampled picks one in n of a communicator's sequence numbers, by a hash
// of the number: with no state to keep, and without favouring one kind
// of call where kinds alternate (a Barrier after every Allreduce, say),
// as every nth call would.
func sampled(seq, n uint64) bool {
	hi, _ := bits.Mul64(seq*0x9e3779b97f4a7c15, n)
	return hi == 0
}

// Account adds t, the tally of a call that ended with err, to its row.
// A blocking call accounts before it leaves its communicator
// (LeaveCall), which hands its pending counts on to the next holder.
func (c *Comm) Account(t *Tally, err error) {
	if !t.started {
		return
	}
	r := c.stats.row(t.kind, t.algo)
	if t.blocking {
		p := &r.pending
		p.calls++
		p.sent += t.Sent
		p.received += t.Received
		if err != nil {
			p.failed++
		}
		if p.calls == flushEvery || t.on {
			r.flush()
		}
	} else {
		r.calls.Add(1)
		r.sent.Add(t.Sent)
		r.received.Add(t.Received)
		if err != nil {
			r.failed.Add(1)
		}
	}
	if t.on {
		r.timed.Add(1)
		r.time.Add(Now() - t.start)
		for p, d := range t.parts {
			if d != 0 {
				r.parts[p].Add(d)
			}
		}
	}
}

// AccountFailure counts a failure that a call of t's learned after it
// accounted (LeaveCall's).
func (c *Comm) AccountFailure(t *Tally) {
	if t.started {
		c.stats.row(t.kind, t.algo).failed.Add(1)
	}
}

// CallStats is comm.CallStats.
type CallStats struct {
	Collective, Algorithm, Transport string

	Calls, Failed            uint64
	BytesSent, BytesReceived uint64

	Timed                           uint64
	Time                            time.Duration
	Wait, Wire, Copy, Reduce, Codec time.Duration
}

// Other is the part of Time that none of the others accounts for: the
// call's own bookkeeping, checks and scheduling.
func (s CallStats) Other() time.Duration {
	return s.Time - s.Wait - s.Wire - s.Copy - s.Reduce - s.Codec
}

// Stats is comm.Comm.Stats.
func (c *Comm) Stats() []CallStats {
	restore, held := c.holdForStats()
	if held {
		defer c.busy.Store(restore)
	}
	var out []CallStats
	for kind := range wire.NumKinds {
		for algo := range wire.NumAlgorithms {
			r := c.stats.rows[rowIndex(wire.Kind(kind), wire.Algorithm(algo))].Load()
			if r == nil {
				continue
			}
			s := CallStats{
				Collective: wire.Kind(kind).String(), Algorithm: wire.Algorithm(algo).String(),
				Transport: c.transportOf(wire.Algorithm(algo)),
				Calls:     r.calls.Load(), Failed: r.failed.Load(),
				BytesSent: r.sent.Load(), BytesReceived: r.received.Load(),
				Timed: r.timed.Load(), Time: time.Duration(r.time.Load()),
			}
			s.Wait = time.Duration(r.parts[PartWait].Load())
			s.Wire = time.Duration(r.parts[PartWire].Load())
			s.Copy = time.Duration(r.parts[PartCopy].Load())
			s.Reduce = time.Duration(r.parts[PartReduce].Load())
			s.Codec = time.Duration(r.parts[PartCodec].Load())
			if held {
				p := &r.pending
				s.Calls, s.Failed, s.BytesSent, s.BytesReceived = s.Calls+p.calls, s.Failed+p.failed, s.BytesSent+p.sent, s.BytesReceived+p.received
			}
			out = append(out, s)
		}
	}
	return out
}

// transportOf names what carries the calls of algo on c: "segment" for
// the shared segment, the kinds of the links to the other ranks
// otherwise ("tcp", "shm", "mem", joined by + when they differ; links
// are made on first use, so only those made so far count), both for a
// hierarchy, and "self" for a communicator of one rank.
func (c *Comm) transportOf(algo wire.Algorithm) string {
	var kinds []string
	if algo == wire.AlgoShm || algo == wire.AlgoHierarchical {
		kinds = append(kinds, "segment")
	}
	if algo != wire.AlgoShm {
		for r := range c.group {
			if k := c.LinkKind(r); r != c.rank && k != "" && !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	if len(kinds) == 0 {
		return "self"
	}
	return strings.Join(kinds, "+")
}
