package core

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/gocoll/gocoll/internal/wire"
)

// Every collective call, and Split, is an operation of its communicator:
// it takes the communicator's next sequence number (StartCall) and
// registers what this rank called (a wire.Call) in the communicator's
// call table. The reader of every inbound link checks each frame of an
// operation against the table, whatever receive the frame is for and
// whether or not one is posted:
//
//   - when this rank's call of that sequence number is registered,
//     running or finished, a frame of a different call is a mismatch;
//   - when it is not registered yet, the frame's call is remembered, and
//     this rank's call is checked against it when it starts.
//
// A mismatch aborts the job with a *MismatchError naming both ranks and
// both calls. So ranks that disagree are told as soon as either sends the
// other anything, on whichever link, in whichever step of whichever
// algorithm. For ranks that disagree so thoroughly that neither sends the
// other anything (two ranks each waiting for the other to be the root of
// a Bcast), a receive of an operation that has waited ProbeDelay sends a
// probe (wire.FlagProbe) to the rank it waits for: a header-only frame
// that carries its call and matches no receive, so the table on the other
// side finds the mismatch.

// callHistory is how many operations of one communicator the table
// remembers: the calls this rank made and the ones it heard of early. A
// frame of an operation more than callHistory older than the newest one
// recorded in its slot is not checked, which takes more operations in
// flight at once than any program issues.
const callHistory = 256

// ProbeDelay is how long a receive of an operation waits before it probes
// its source. Long enough that a probe is rare in a running job (one
// header, only when a rank is that far behind), short enough that a
// mismatch nobody sends across is named well before any timeout.
const ProbeDelay = 200 * time.Millisecond

// callTable is one communicator's record of operations on this rank.
type callTable struct {
	mu    sync.Mutex
	rank  int   // this rank in the communicator
	group []int // world rank of each member; nil until the communicator exists here
	comm  *Comm // nil until the communicator exists here
	recs  [callHistory]callRecord
	// async are this rank's async calls (AllreduceAsync) that run, for
	// the flight recorder: a blocking call's progress it reads from the
	// communicator (Comm.busy), but async calls run beside it, and one
	// through the fast lines is in no record.
	async []asyncCall
}

// asyncCall is an async call that runs.
type asyncCall struct {
	seq  uint64
	call wire.Call
}

// callRecord is one operation: the call this rank made, or, before it
// makes one, the call a peer's frame showed.
type callRecord struct {
	seq   uint64
	local bool      // call is this rank's own
	call  wire.Call // this rank's call, or the first one heard of
	from  int       // world rank whose frame showed call, when !local
	// other is a call heard of before this rank's own that differs from
	// call, from world rank otherFrom; otherFrom is -1 when there is none.
	other     wire.Call
	otherFrom int
	// The slow wait of this rank's own call, for the flight recorder
	// (waiting): the communicator rank it waits for (-1: none), the step,
	// and since when.
	waitFor   int
	waitStep  int
	waitSince time.Time
}

// bind makes t the table of communicator c.
func (t *callTable) bind(c *Comm) {
	t.mu.Lock()
	t.rank, t.group, t.comm = c.rank, c.group, c
	t.mu.Unlock()
}

// start registers this rank's call of operation seq and returns a
// mismatch with a call a peer's frame showed before.
func (t *callTable) start(seq uint64, call wire.Call) *MismatchError {
	t.mu.Lock()
	rec := &t.recs[seq%callHistory]
	var m *MismatchError
	if rec.seq == seq { // heard of before this rank's call
		switch {
		case rec.call != call:
			m = t.mismatch(call, rec.from, rec.call)
		case rec.otherFrom >= 0:
			m = t.mismatch(call, rec.otherFrom, rec.other)
		}
	}
	*rec = callRecord{seq: seq, local: true, call: call, waitFor: -1}
	t.mu.Unlock()
	return m
}

// waiting notes that this rank's operation seq waits, slowly, for rank
// peer of the communicator at step step (-1: unknown), since since: what
// the flight recorder tells of it. Only waits that already take long
// call it.
func (t *callTable) waiting(seq uint64, peer, step int, since time.Time) {
	t.mu.Lock()
	if rec := &t.recs[seq%callHistory]; rec.seq == seq && rec.local {
		rec.waitFor, rec.waitStep, rec.waitSince = peer, step, since
	}
	t.mu.Unlock()
}

// observe checks the frame h from world rank src against the operation's
// record and returns the mismatch it shows, if any.
func (t *callTable) observe(src int, h *wire.Header) *MismatchError {
	remote := h.Call()
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := &t.recs[h.Seq%callHistory]
	switch {
	case rec.seq == h.Seq && rec.local:
		if rec.call != remote {
			return t.mismatch(rec.call, src, remote)
		}
	case rec.seq == h.Seq:
		if rec.call != remote && rec.otherFrom < 0 {
			rec.other, rec.otherFrom = remote, src
		}
	case rec.seq < h.Seq:
		*rec = callRecord{seq: h.Seq, call: remote, from: src, otherFrom: -1}
	}
	return nil
}

// local returns this rank's call of operation seq, if it is still on
// record.
func (t *callTable) local(seq uint64) (wire.Call, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := &t.recs[seq%callHistory]
	return rec.call, rec.seq == seq && rec.local
}

// mismatch describes this rank's call against the call of world rank
// peer. The caller holds t.mu.
func (t *callTable) mismatch(mine wire.Call, peer int, theirs wire.Call) *MismatchError {
	return &MismatchError{Rank: t.rank, Peer: slices.Index(t.group, peer), Local: mine, Remote: theirs}
}

// calls returns the call table of communicator id, making it on first
// use: a peer's frames may arrive before this rank's Split has made the
// communicator.
func (ep *endpoint) calls(id uint64) *callTable {
	ep.callsMu.Lock()
	defer ep.callsMu.Unlock()
	t := ep.callTables[id]
	if t == nil {
		t = &callTable{rank: -1}
		ep.callTables[id] = t
	}
	return t
}

// dropCalls forgets the call table of a communicator that closed.
func (ep *endpoint) dropCalls(id uint64) {
	ep.callsMu.Lock()
	delete(ep.callTables, id)
	ep.callsMu.Unlock()
}

// probe asks rank src, which receive r has waited for since ProbeDelay,
// to check r's operation against its own call of it. It runs on its own
// goroutine: a write that waits behind another message on the link must
// not hold up r.
func (ep *endpoint) probe(r *Request) {
	if r.src == ep.rank {
		return
	}
	seq := seqOf(r.key.tag)
	call, ok := r.comm.calls.local(seq)
	if !ok {
		return
	}
	h := wire.Header{Flags: wire.FlagProbe, Kind: call.Kind, DType: call.DType, Op: call.Op,
		Comm: r.key.comm, Seq: seq, Tag: r.key.tag, Count: uint64(call.Count), Root: int32(call.Root),
		Algorithm: call.Algorithm}
	if call.NoReceipts {
		h.Flags |= wire.FlagNoReceipts
	}
	src := r.src
	go func() {
		if err := ep.send(context.Background(), src, &h, nil, nil); err != nil {
			ep.log.Debug("probe not sent", "peer", src, "seq", seq, "err", err)
		}
	}()
}
