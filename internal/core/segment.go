package core

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gocoll/gocoll/internal/hugepage"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/gocoll/gocoll/internal/regmem"
	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/timeline"
	"github.com/gocoll/gocoll/internal/wire"
)

// A Segment is shared memory that every rank of a communicator maps,
// where all of them run on one host: the collectives of package
// collective move data through it instead of through links, and wait for
// one another on counters in it.
//
// Its data area is two halves, each one slot of SlotBytes per rank, laid
// out in rank order, so that a half is also one buffer of Size()·SlotBytes
// bytes. A collective runs in rounds, and round g uses half g mod 2: while
// the ranks fill one half, the slowest may still read the other. In every
// round each rank publishes up to two steps on its counter, "in" (its data
// of the round is in place, and it is finished with the round before) and
// "done" (its work on the round is in place, where others wait for that),
// and waits for the steps of the others that it needs. A half is reused
// once every rank is in the round after the one that last used it.
//
// Segment operations of a communicator run one at a time, in the order
// they were issued (Enqueue), on every rank. Before its first step an
// operation records its call in the segment, and the first wait on each
// rank compares the call of every rank it waited for with its own, so
// ranks that disagree fail with a *MismatchError as they would over links.
// Waits spin briefly, then yield, then park until a knock on the rank's
// socket (knock_linux.go), or sleep on the segment's futex where the
// socket could not be made; they end with an error when the context
// ends, the communicator's timeout passes, the job fails, a rank waited
// for has died (its process is gone), or it has closed its communicator
// (ErrPeerClosed, as over links).
type Segment struct {
	c      *Comm
	region *shmem.Region
	mem    []byte // region's mapping
	ranks  int
	slot   int   // bytes per rank per half
	pids   []int // process of each rank
	// waiter waits for other ranks' steps (shmem.Waiter: polls, yields,
	// then sleeps on the segment's bell).
	waiter shmem.Waiter

	// Local state of the operation that holds the turn.
	ticket atomic.Uint64 // tickets handed out (Enqueue)
	turn   atomic.Uint64 // ticket whose turn it is
	round  uint64        // rounds run so far
	seen   []uint64      // by rank: the last ticket whose calls were compared
	known  []uint64      // by rank: the highest step seen, so that satisfied waits read no shared line
	// unsettled is the ticket of the last operation that ended without
	// seeing every rank begin it (SegmentOp.allBegun), which the next one
	// waits for and compares first (settle).
	unsettled uint64
	// The buffers of a direct operation by rank, as Direct returns
	// them, and the mappings they lie in (direct.go).
	direct    [][2][]byte
	views     [][2]*regmem.View
	directOps atomic.Uint64
	lines     [][]byte // by rank: the data of its fast line, as Exchange returns them
	// uses counts the operations running, two per operation, with bit 0
	// set once the communicator closed: the mapping goes when both are
	// over (release), unmapOnce makes sure once.
	uses      atomic.Uint64
	unmapOnce sync.Once
	// copier chooses how this rank copies into its slots.
	copier shmem.Copier
	// What single copies need (single.go): how the job allows them, this
	// process's cookie (its word, which the others read with each
	// copy), whether every rank can read every other's memory, what
	// chooses between a single copy and the slots, and what reads.
	policy    uint64 // singleNever, singleAuto, singleAlways or singleCrowded, as rank 0 set it
	crowding  int    // ranks of the host per CPU, rounded up, as rank 0 found it where they outnumber the CPUs; else 0
	cookie    *uint64
	allRead   atomic.Int32
	single    shmem.SingleCopy
	vm        shmem.VM
	huge      *hugepage.Collapser // this rank's buffers' huge pages (hugepages.go); nil: off
	singleOps atomic.Uint64
	timing    timedOp // the last timed operation this rank decided, until it learns from it
	// knocks wake this rank's waiter, parked, and knockOthers the
	// others' (knock_linux.go); nil where its socket could not be made.
	knocks      *knocker
	knockOthers func()
}

// Copier returns what chooses how this rank copies into the segment.
func (s *Segment) Copier() *shmem.Copier { return &s.copier }

// Layout of a segment. Lines are 128 bytes, two cache lines, so that the
// adjacent-line prefetcher does not make neighbours share.
const (
	segLine      = 128
	segMagic     = 0x67636f6c6c534547 // "gcollSEG"
	segSingle    = 24                 // uint64 in the first line: the single-copy policy (single.go)
	segCrowded   = 32                 // uint64 in the first line: the host's ranks per CPU, rounded up, where they outnumber the CPUs (Crowded); else 0
	segSleepers  = segLine            // uint32: ranks sleeping on segEpoch
	segEpoch     = 2 * segLine        // uint32: futex word, bumped to wake sleepers
	segControl   = 3 * segLine        // one line per rank: its step, gone mark and cookie (single.go), uint64s
	segRecords   = 16                 // call records per rank, a ring by ticket
	segRecord    = 256                // a call (32 bytes), then its buffers (direct.go, single.go)
	segPage      = 4096
	segYieldFor  = 5 * time.Millisecond   // spinning and yielding before sleeping
	segSleep     = 2 * time.Millisecond   // one sleep
	segLiveEvery = 100 * time.Millisecond // between checks that waited-for processes live
)

// DefaultSegmentSlot gives the bytes per rank and half of a segment of
// ranks ranks (WithSegmentSlot sets another): 8 MiB shared by the ranks,
// but 256 KiB to 1 MiB each. Every round of a collective costs each rank
// a wait or two, and on the machines measured (2026-11-23, 2 and 4
// ranks) 1 MiB slots made 1-64 MiB Allreduce 15-45 % faster and 16 MiB
// Bcast up to 3 times as fast as 256 KiB ones, although a round then no
// longer fits the caches; the bound keeps a segment of many ranks small.
func DefaultSegmentSlot(ranks int) int {
	slot := (8 << 20) / max(ranks, 1) / segPage * segPage
	return min(max(slot, 256<<10), 1<<20)
}

func segRecordsAt(ranks int) int { return segControl + ranks*segLine }

func segFastAt(ranks int) int { return segRecordsAt(ranks) + ranks*segRecords*segRecord }

func segDataAt(ranks int) int {
	end := segFastAt(ranks) + ranks*2*segLine
	return (end + segPage - 1) / segPage * segPage
}

func segSize(ranks, slot int) int { return segDataAt(ranks) + 2*ranks*slot }

// Size is the number of ranks that share the segment, its communicator's.
func (s *Segment) Size() int { return s.ranks }

// Rank is this rank's in the segment's communicator.
func (s *Segment) Rank() int { return s.c.rank }

// Crowded reports whether the ranks of the segment's host outnumber the
// CPUs they may run on, so that a rank that waits for another may hold
// the CPU that one needs. It is what rank 0 found when it made the
// segment, so that every rank gets the same answer: the collectives
// shape their rounds by it.
func (s *Segment) Crowded() bool { return s.crowding > 0 }

// SlotBytes is the size of one rank's slot in one half.
func (s *Segment) SlotBytes() int { return s.slot }

// Half is half h (0 or 1) of the data area: the slots of ranks 0, 1, …
// one after the other.
func (s *Segment) Half(h int) []byte {
	at := segDataAt(s.ranks) + h*s.ranks*s.slot
	return s.mem[at : at+s.ranks*s.slot : at+s.ranks*s.slot]
}

// Slot is rank r's slot in half h.
func (s *Segment) Slot(r, h int) []byte {
	at := segDataAt(s.ranks) + (h*s.ranks+r)*s.slot
	return s.mem[at : at+s.slot : at+s.slot]
}

func (s *Segment) word64(off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&s.mem[off]))
}

func (s *Segment) word32(off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s.mem[off]))
}

func (s *Segment) step(r int) *atomic.Uint64 { return s.word64(segControl + r*segLine) }

// gone is rank r's mark that it closed its communicator, next to its step
// in its own line: nonzero once it will never publish another step.
func (s *Segment) gone(r int) *atomic.Uint64 { return s.word64(segControl + r*segLine + 8) }

// sleeping is rank r's word that says its waiter sleeps (shmem.Bell).
func (s *Segment) sleeping(r int) *atomic.Uint32 {
	return s.word32(segControl + r*segLine + ctlSleeping)
}

// sleepingWords are every rank's sleeping words, by rank.
func (s *Segment) sleepingWords() []*atomic.Uint32 {
	w := make([]*atomic.Uint32, s.ranks)
	for r := range w {
		w[r] = s.sleeping(r)
	}
	return w
}

// The marks of gone.
const (
	goneClosed  = 1 // the rank closed its communicator
	goneFailing = 2 // it closed it after its job failed
)

// record is where rank r records the call of the operation with ticket t.
func (s *Segment) record(r int, t uint64) []byte {
	at := segRecordsAt(s.ranks) + (r*segRecords+int(t%segRecords))*segRecord
	return s.mem[at : at+segRecord : at+segRecord]
}

// Enqueue takes the next place in the communicator's order of segment
// operations. Call it when the operation is issued, right after
// StartCall, and pass the ticket to Begin.
func (s *Segment) Enqueue() uint64 { return s.ticket.Add(1) }

// A SegmentOp is one collective running on a segment. It is a value the
// caller keeps on its stack; its methods do not allocate.
type SegmentOp struct {
	s        *Segment
	ctx      context.Context
	call     wire.Call
	seq      uint64 // the call's sequence number on the communicator
	ticket   uint64
	decider  int           // the rank that chooses whether the operation copies once (single.go); -1: it cannot
	way      uint64        // what that rank chose: slotsUntimed, slotsTimed or singleCopy
	choice   shmem.Choice  // and how, on that rank
	began    int64         // when this rank began an operation that may be timed (Now)
	pins     [2]regmem.Pin // this rank's registered buffers, held until End
	own      [2][]byte     // and the buffers themselves
	direct   bool          // this rank's buffers are all registered
	mapped   bool          // Direct mapped the others'
	round    uint64        // current round, from 1
	first    uint64        // first round of the operation
	deadline time.Time     // when the communicator's timeout passes; zero until the first slow wait
	live     time.Time     // when to check next that waited-for ranks live; zero until the first slow wait
	beside   bool          // see Beside
	// allBegun says that this rank has seen every rank begin the
	// operation; one that ends without it leaves the next to settle
	// (fast.go).
	allBegun bool
	// unrecorded says that the call is not in the communicator's call
	// table yet (BeginLines): the first slow wait records it.
	unrecorded bool
	// noted says that a wait of the operation is in its call's record,
	// for the flight recorder (callTable.waiting).
	noted bool
	// timed says to add up in waited the time the waits take (Time).
	timed  bool
	waited int64
}

// Time makes the operation add up the time it waits for other ranks,
// which Waited returns: for a call whose Tally is timed. (The operation
// does not hold the call's Tally itself, which would move the call to
// the heap.)
func (op *SegmentOp) Time(timed bool) { op.timed = timed }

// Waited is how long the operation has waited for other ranks, if it is
// timed.
func (op *SegmentOp) Waited() int64 { return op.waited }

// Beside says that the operation runs beside work of this process's own,
// as an async collective runs beside the computation it overlaps: its
// waits then give the processor to the process's goroutines too, and
// sleep on a timer rather than in a system call (shmem.Beside). Before, a
// waiting AllreduceAsync at GOMAXPROCS=1 kept its rank's computation off
// the processor until the runtime preempted it: 16 ms of work took 26.
func (op *SegmentOp) Beside() { op.beside = true }

// Begin waits for the turn of the operation with the given ticket (every
// earlier one has ended), makes op that operation and records its call,
// the one StartCall or NextSeq numbered seq, in the segment. End must follow a
// successful Begin. bufs are this rank's buffers, one or two, nil where
// it has none, for an operation that can work on the ranks' own buffers
// where all of them lie in registered memory (Direct), or, where decider
// is a rank, by copying once out of them (Single), which decider
// chooses; an operation that can do neither passes no buffers and
// decider -1. op is filled in place, not returned: it is a few hundred
// bytes, and a small call's whole time is a few hundred nanoseconds.
func (s *Segment) Begin(op *SegmentOp, ctx context.Context, ticket, seq uint64, call wire.Call, bufs [2][]byte, decider int) error {
	if err := s.begin(op, ctx, ticket, seq, call, false); err != nil {
		return err
	}
	rec := s.record(s.c.rank, ticket)
	op.putBuffers(rec, bufs)
	op.useHugePages(bufs, decider)
	op.chooseWay(rec, decider)
	recordTook(rec).Store(0)
	putCall(rec, ticket, op.seq, op.call)
	// A rank that works on registered buffers waits for the records.
	s.bell().Ring()
	return nil
}

// BeginLines is Begin for an operation that runs through the fast lines
// (Exchange), whose call goes in its line, not in a record. It also
// records the call in the communicator's call table (Comm.RecordCall)
// only if a wait of the operation turns slow: when every rank's line
// shows this call, no rank sends this one a frame of the operation, and
// when a rank makes another call, this one waits for its line.
func (s *Segment) BeginLines(op *SegmentOp, ctx context.Context, ticket, seq uint64, call wire.Call) error {
	return s.begin(op, ctx, ticket, seq, call, true)
}

// begin is what Begin and BeginLines share: op becomes the operation, in
// its turn, once every rank has begun the one before it (settle).
func (s *Segment) begin(op *SegmentOp, ctx context.Context, ticket, seq uint64, call wire.Call, unrecorded bool) error {
	if s.uses.Add(2)&segClosed != 0 {
		s.release(false)
		return ErrClosed
	}
	*op = SegmentOp{s: s, ctx: ctx, call: call, seq: seq, ticket: ticket, decider: -1, unrecorded: unrecorded}
	// Operations issued at once (AllreduceAsync) take their turns here.
	for i := 0; s.turn.Load()+1 != ticket; i++ {
		if err := op.failed(-1); err != nil {
			s.release(false)
			return err
		}
		if i > 64 {
			time.Sleep(20 * time.Microsecond)
		} else {
			runtime.Gosched()
		}
	}
	if s.unsettled != 0 && s.unsettled+1 == ticket {
		if err := op.settle(); err != nil {
			s.release(false)
			return err
		}
	}
	s.learnTimed()
	op.first = s.round + 1
	return nil
}

// Finish compares every rank's call with this rank's, once each has
// started the operation: a rank that waited for some ranks only (a
// Bcast's non-root) or for none (its root) has not compared the others,
// and ranks that disagree must all fail inside the call. Call it before
// End when the operation's work is done; it costs a wait for the slowest
// rank to start.
func (op *SegmentOp) Finish() error {
	return op.waitAll(2*op.first - 1)
}

// End finishes the operation and hands the turn to the next one.
func (op *SegmentOp) End() {
	if !op.allBegun {
		op.s.unsettled = op.ticket
	}
	op.recordTook()
	op.unpin()
	if op.round != 0 {
		op.s.round = op.round
	}
	op.s.turn.Store(op.ticket)
	op.s.release(false)
}

// release ends an operation's use of the segment, or, with closing, the
// communicator's; the mapping goes once both are over, so that closing a
// communicator never pulls memory from under a running operation.
func (s *Segment) release(closing bool) {
	var left uint64 // uses after this release
	if closing {
		// Ranks waiting for this one's next step learn that it will
		// not come, as they would from a goodbye over a link, or, if
		// the job failed, that they must wait for its failure.
		mark := uint64(goneClosed)
		if s.c.ep.err() != nil {
			mark = goneFailing
		}
		s.gone(s.c.rank).Store(mark)
		s.bell().Ring()
		left = s.uses.Or(segClosed) | segClosed
	} else {
		left = s.uses.Add(^uint64(1)) // minus 2
	}
	if left == segClosed {
		s.unmapOnce.Do(func() {
			s.region.Close()
			if s.knocks != nil {
				s.knocks.close()
			}
		})
	}
}

// segClosed is the bit of Segment.uses that says the communicator closed.
const segClosed = 1

// Next starts the operation's next round and returns the half it uses.
// It first waits until every rank is done with the round before the last,
// which used the same half: until every rank has published In for the
// last round, since a rank reads nothing of a round once it has.
func (op *SegmentOp) Next() (int, error) {
	if op.round == 0 {
		op.round = op.first
	} else {
		op.round++
	}
	if op.round > 2 {
		if err := op.waitAll(2*(op.round-1) - 1); err != nil {
			return 0, err
		}
	}
	return int(op.round % 2), nil
}

// In publishes that this rank's data of the round is in place, and so
// that it is finished with the round before; Done that its work on the
// round is in place (a share of a reduction, say) for ranks that wait
// for it with WaitDone or WaitDoneOf. A round in which nobody waits for
// Done leaves it out, which spares the other ranks a cache miss on this
// rank's counter.
func (op *SegmentOp) In()   { op.s.publish(2*op.round - 1) }
func (op *SegmentOp) Done() { op.s.publish(2 * op.round) }

// WaitIn waits until every rank published In for the round; WaitDone
// until every rank published Done.
func (op *SegmentOp) WaitIn() error   { return op.waitAll(2*op.round - 1) }
func (op *SegmentOp) WaitDone() error { return op.waitAll(2 * op.round) }

// WaitInOf waits until rank r published In for the round.
func (op *SegmentOp) WaitInOf(r int) error { return op.wait(r, 2*op.round-1) }

func (s *Segment) publish(step uint64) {
	s.step(s.c.rank).Store(step)
	s.bell().Ring()
}

// bell is what ranks waiting for a step sleep on.
func (s *Segment) bell() shmem.Bell {
	return shmem.Bell{Sleepers: s.word32(segSleepers), Seq: s.word32(segEpoch), Knock: s.knockOthers,
		Sleeping: s.sleeping(s.c.rank)}
}

// Sleepers is how many of the segment's waiters have gone to sleep, or
// are about to.
func (s *Segment) Sleepers() uint32 { return s.word32(segSleepers).Load() }

// Knocks is how many knocks this rank's waiter has heard (knock_linux.go).
func (s *Segment) Knocks() uint64 {
	if s.knocks == nil {
		return 0
	}
	return s.knocks.heard.Load()
}

func (op *SegmentOp) waitAll(step uint64) error {
	for r := range op.s.ranks {
		if r != op.s.c.rank {
			if err := op.wait(r, step); err != nil {
				return err
			}
		}
	}
	if step >= 2*op.first-1 {
		op.allBegun = true // each published a step of the operation
	}
	return nil
}

// wait waits until rank r's counter reaches step: spinning, then yielding
// the processor, then sleeping (parked until a knock), checking for
// failures between sleeps. When r reaches the operation's first step, its
// call is compared with this rank's.
func (op *SegmentOp) wait(r int, step uint64) error {
	s := op.s
	if s.known[r] < step {
		w := s.step(r)
		v := w.Load()
		if v < step {
			if err := op.spin(r, w, step); err != nil {
				return err
			}
			v = step
		}
		s.known[r] = v
	}
	if s.seen[r] < op.ticket {
		return op.check(r)
	}
	return nil
}

// spin waits for w to reach step with the segment's waiter, which
// sleeps on the segment's bell after segYieldFor. Between polls it checks
// that the operation can go on and that rank r did not leave: the gone
// mark is set after r's last step, so a rank that left with w still short
// of step will never reach it.
func (op *SegmentOp) spin(r int, w *atomic.Uint64, step uint64) error {
	return op.spinOr(r, w, nil, step)
}

// errReachedOr ends a wait of spinOr whose other word reached its step.
var errReachedOr = errors.New("the other word reached the step")

// spinOr is spin that also ends, successfully, once or (nil for none)
// reaches step.
func (op *SegmentOp) spinOr(r int, w, or *atomic.Uint64, step uint64) error {
	s := op.s
	yield := shmem.ToProcess
	if s.pids[r] == s.pids[s.c.rank] {
		yield = shmem.ToGoroutines
	}
	if op.beside {
		yield |= shmem.Beside
	}
	if op.timed {
		defer op.timeWait(r, step, Now())
	}
	_, err := s.waiter.Wait(w, 0, step, s.bell(), yield, func() error {
		if err := op.failed(r); err != nil {
			return err
		}
		if or != nil && or.Load() >= step {
			return errReachedOr
		}
		switch g := s.gone(r).Load(); {
		case g == 0 || w.Load() >= step:
			return nil
		case g == goneFailing:
			return op.leftFailing(r)
		}
		return fmt.Errorf("%w: rank %d closed its communicator before reaching step %d of the shared-memory %s",
			ErrPeerClosed, s.c.group[r], step, op.call)
	})
	if err == errReachedOr {
		return nil
	}
	return err
}

// leftFailing is the error of a wait for rank r, which closed its
// communicator after its job failed: the failure, once this rank hears
// of it. A rank that finds a loss passes it on to the rendezvous store,
// which tells every rank, before its call returns, and each rank fails
// once its own LossSettle is over; where it is faster than that to find
// the loss (a copy out of a dead rank's memory fails at once), it may
// close before the others have heard, and had they taken its leaving
// for a goodbye, they would have blamed it and not the ranks lost.
func (op *SegmentOp) leftFailing(r int) error {
	ep := op.s.c.ep
	t := time.NewTimer(ep.opts.lossSettle + 2*passOnWithin)
	defer t.Stop()
	select {
	case <-ep.failed:
		return ep.err()
	case <-op.ctx.Done():
		return context.Cause(op.ctx)
	case <-t.C:
	}
	return fmt.Errorf("%w: rank %d left the shared-memory %s after its job failed, and the failure did not reach this rank",
		ErrAborted, op.s.c.group[r], op.call)
}

// timeWait ends a wait of a timed operation for rank r's step, begun at
// start: it counts in Waited, and is a span of the rank's timeline.
func (op *SegmentOp) timeWait(r int, step uint64, start int64) {
	end := Now()
	op.waited += end - start
	if op.s.c.traced {
		op.s.c.TimelineSpan(&timeline.Span{Name: "wait", Cat: "wait", Start: start, End: end,
			Seq: op.seq, Peer: r, Step: int(step), Transport: "segment"})
	}
}

// failed reports why the operation cannot go on, if it cannot: its
// context ended, the communicator's timeout passed, the job failed, the
// segment closed, or rank r (waited for; -1 for none) died. The costlier
// checks run only now and then.
func (op *SegmentOp) failed(r int) error {
	s := op.s
	if err := s.c.ep.err(); err != nil {
		return err
	}
	if done := op.ctx.Done(); done != nil {
		select {
		case <-done:
			return context.Cause(op.ctx)
		default:
		}
	}
	now := time.Now()
	if op.live.IsZero() {
		if op.unrecorded {
			op.unrecorded = false
			if err := s.c.RecordCall(op.seq, op.call); err != nil {
				return err
			}
		}
		// The first slow wait of the operation starts its clocks: a
		// fast operation never reads the time.
		op.live = now.Add(segLiveEvery)
		if t := s.c.ep.opts.timeout; t > 0 {
			op.deadline = now.Add(t)
		}
		return nil
	}
	if now.Before(op.live) {
		return nil
	}
	if r >= 0 && !op.noted {
		// A wait this long is what the flight recorder is for. The
		// first slow wait of an operation comes after a few hundred
		// polls, a common turn of small operations, which taking the
		// call table's lock there made a fifth slower.
		op.noted = true
		s.c.calls.waiting(op.seq, r, -1, op.live.Add(-segLiveEvery))
	}
	op.live = now.Add(segLiveEvery)
	if !op.deadline.IsZero() && now.After(op.deadline) {
		if r >= 0 {
			return s.c.ep.silent(s.c.group[r], fmt.Sprintf("rank %d did not reach step %d of the shared-memory %s within %v",
				s.c.group[r], s.step(r).Load(), op.call, s.c.ep.opts.timeout))
		}
		return ErrTimeout
	}
	// A rank that closed its communicator may have exited since: the
	// wait's own look at its gone mark tells what its leaving means.
	if r >= 0 && !shmem.Alive(s.pids[r]) && s.gone(r).Load() == 0 {
		return s.c.ep.loseAndWait(s.c.group[r], fmt.Errorf("process %d exited during a shared-memory %s", s.pids[r], op.call))
	}
	// A rank whose call differs may wait elsewhere (in its fast line,
	// say, where this one waits for a step): its record tells, once it
	// has begun. Should the wait succeed all the same, the comparison
	// after it finds the difference again.
	if r >= 0 && s.seen[r] < op.ticket {
		return op.differs(r, op.ticket)
	}
	return nil
}

// check compares the calls rank r recorded with this rank's, once r has
// reached the operation's first step: for this operation and for the
// ones since the last comparison with r. An operation in which this rank
// waited for nobody, a Bcast's root, is so compared in the next one that
// waits.
func (op *SegmentOp) check(r int) error {
	s := op.s
	if s.known[r] < 2*op.first-1 {
		return nil // waited for an earlier step only
	}
	// A rank runs at most a few rounds ahead of the slowest (every round
	// waits for everyone to be in the round before it), so the
	// ring still holds the records compared here; one overwritten by a
	// later operation all the same is skipped, not misread.
	return op.compare(r)
}

// compare compares the calls rank r recorded with this rank's, for this
// operation and for the ones since the last comparison with r.
func (op *SegmentOp) compare(r int) error { return op.compareThrough(r, op.ticket) }

// compareThrough is compare up to the operation with ticket last.
func (op *SegmentOp) compareThrough(r int, last uint64) error {
	s := op.s
	from := max(s.seen[r]+1, last-min(last-1, segRecords/2))
	s.seen[r] = last
	for t := from; t <= last; t++ {
		if err := op.differs(r, t); err != nil {
			return err
		}
	}
	return nil
}

// differs compares the calls that rank r and this rank recorded for the
// operation with ticket t, if r's record is still there, and fails the
// job if they differ.
func (op *SegmentOp) differs(r int, t uint64) error {
	s := op.s
	mine, mySeq, myTicket := s.recorded(s.c.rank, t)
	theirs, seq, ticket := s.recorded(r, t)
	if ticket != t || myTicket != t || seq == mySeq && theirs == mine {
		return nil
	}
	m := &MismatchError{Rank: s.c.rank, Peer: r, Local: mine, Remote: theirs}
	if seq != mySeq {
		m.Detail = fmt.Sprintf("its shared-memory operation %d is the communicator's operation %d, this rank's is %d", t, seq, mySeq)
	}
	s.c.ep.abort(m)
	return m
}

// recorded returns the call that rank r recorded for the operation with
// ticket t, from its record or, for an operation through the fast lines
// (BeginLines), from its line; the ticket returned is not t when neither
// holds that operation any more.
func (s *Segment) recorded(r int, t uint64) (call wire.Call, seq, ticket uint64) {
	if call, seq, ticket = getCall(s.record(r, t)); ticket != t {
		call, seq, ticket = getCall(s.fastLine(r, t))
	}
	return call, seq, ticket
}

// putCall and getCall store a call record: ticket, sequence number, count,
// root and the four one-byte fields, NoReceipts in the algorithm byte's
// top bit (no algorithm number reaches it). The ticket goes last, and
// atomically: a rank that sees it may read the rest (Direct).
func putCall(b []byte, ticket, seq uint64, c wire.Call) {
	b = b[:recExtents]
	le := binary.LittleEndian
	le.PutUint64(b[8:], seq)
	le.PutUint64(b[16:], uint64(c.Count))
	algo := uint64(c.Algorithm)
	if c.NoReceipts {
		algo |= noReceiptsBit
	}
	le.PutUint64(b[24:], uint64(uint32(int32(c.Root)))|uint64(c.Kind)<<32|uint64(c.DType)<<40|uint64(c.Op)<<48|algo<<56)
	recordTicket(b).Store(ticket)
}

const noReceiptsBit = 0x80

func getCall(b []byte) (call wire.Call, seq, ticket uint64) {
	b = b[:recExtents]
	le := binary.LittleEndian
	ticket, seq = recordTicket(b).Load(), le.Uint64(b[8:])
	w := le.Uint64(b[24:])
	algo := w >> 56
	call = wire.Call{Kind: wire.Kind(w >> 32), DType: kernel.DType(w >> 40), Op: ops.ID(w >> 48),
		Algorithm: wire.Algorithm(algo &^ noReceiptsBit), NoReceipts: algo&noReceiptsBit != 0,
		Count: int(le.Uint64(b[16:])), Root: int(int32(uint32(w)))}
	return call, seq, ticket
}
