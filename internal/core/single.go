package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/gocoll/gocoll/internal/hugepage"
	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/wire"
)

// Single copies. Where the ranks' buffers are ordinary Go memory, a
// collective through the segment copies every byte twice, into a slot
// and out of it; a rank can instead read another's buffer straight into
// its own with process_vm_readv, once, as Open MPI's vader does, or
// write its own into another's with process_vm_writev (Read, Write).
// Which is faster depends on the host's state (shmem.SingleCopy), so one
// rank of each operation, its decider (a rooted call's root, else rank
// 0), chooses, times the operation and learns, and records its choice in
// its call record, where the others read it before they move any data
// (Single): all of them take the same way. Which operations may copy
// once at all every rank knows alike, from their kind and size and the
// segment's policy, which rank 0 sets when it makes the segment
// (WithSingleCopy, and whether the host is crowded): the others need
// not wait for the decider's record in an operation that cannot.
//
// A rank records its buffers' addresses in its call record (Begin) and
// keeps them until every reader and writer is done (WaitDone): the
// collectives' buffers live in Go's heap (a call keeps them, so they
// escape there), which does not move objects.
//
// The kernel allows the copy only where the reader may ptrace the other
// process, which the ranks find out when the segment is made: each puts
// its cookie in its control line, reads every other's, and records in
// its line whether it could (probeSingle). A decider copies once only
// once every rank has said it could, so that no rank meets a refusal in
// an operation, where it could not fall back alone.
//
// Control line of a rank, after its step and gone mark:
//
//	16  its cookie's address in its process, then the cookie (shmem.Cookie)
//	32  whether it can read every other rank's memory: readsAll, readsNot,
//	    0 until it has tried
//	40  uint32: 1 while its waiter sleeps, 2 once knocked on (knock_linux.go)
const (
	ctlCookie   = 16
	ctlReads    = 32
	ctlSleeping = 40
	readsAll    = 1
	readsNot    = 2
)

// The ways of an operation that can copy once, as its decider records it.
const (
	slotsUntimed = iota // through the slots
	slotsTimed          // through the slots, timed: every rank says when it is done
	singleCopy          // once, by process_vm_readv
)

// Settings of GOCOLL_SINGLE_COPY (WithSingleCopy).
const (
	SingleCopyAuto = "auto" // copy once where that has been faster, on a host that is not crowded (the default)
	SingleCopyCMA  = "cma"  // copy once wherever the kernel allows it
	SingleCopyNone = "none" // always through the slots
)

// The policies of a segment, as rank 0 records it.
const (
	singleNever           = iota // SingleCopyNone
	singleAuto                   // by timing
	singleAlways                 // SingleCopyCMA
	singleCrowded                // by timing, large Gathers, Scatters, Alltoalls, Reduces and Bcasts only: SingleCopyAuto on a crowded host (see singlePolicy)
	singleCrowdedShadowed        // singleCrowded where a single copy's first reach of a page costs more (shmem.FirstReach)
)

// singlePolicy is the policy of a segment that rank 0 makes with the
// setting mode, on a host that is crowded or not; firstReach is what a
// single copy's first reach of a page costs there (shmem.FirstReach),
// asked only of a crowded host.
//
// Where ranks outnumber the CPUs (Crowded), only Gathers and Scatters
// (from crowdedRootedSingleMin, or shadowedRootedSingleMin where that
// first reach costs), Alltoalls (from crowdedAlltoallSingleMin, or
// shadowedAlltoallSingleMin) and, where it does not, Reduces (from
// crowdedReduceSingleMin) and Bcasts (from crowdedBcastSingleMin, or
// packedBcastSingleMin where there are more than two ranks to a CPU, to
// crowdedBcastSingleMax) may copy once by choice (crowdedSingleSizes). In
// the others, a rank whose buffer others use must wait for them, each
// wait a turn of the scheduler, while through the slots it leaves once
// its data is in; and every rank would wait for the decider's record,
// which through the slots only some do. In a Gather each rank but root
// writes its part into root's buffer and leaves, in a Scatter each reads
// its block out of root's, which it waits for anyway, and an Alltoall
// through the slots copies every block in and out in rounds that wait for
// every rank too. Four ranks on two CPUs of an Intel Xeon host, µs
// through the slots / once (2026-11-29): Scatter 1 MiB 99 / 30, 16 MiB
// 1838 / 1096; Gather 87 / 37, 1860 / 1068; Alltoall, once it wrote,
// 323-391 / 280-301 and 11.0-11.8 / 7.4-8.7 ms; but Bcast 16 MiB 3.5-4.8
// / 6.9-7.0 ms, Allgather 64 KiB 11.5-11.7 / 18.8-27.9, 16 MiB 4.2-4.4 /
// 5.5-5.6 ms (on an AMD EPYC host, before Gathers and Alltoalls wrote,
// Scatter, Gather and Alltoall were 1.3-1.9 times as slow at 16 MiB once,
// 2026-11-28).
//
// Elsewhere operations of every size may: until 2026-11-29 those above
// 2 MiB did not, since on that AMD host process_vm_readv of a buffer no
// longer in the caches ran at 5-6 GB/s and a 16 MiB Bcast took 3.0 ms
// against 1.8 through the slots. Once a Bcast's root copied a share and
// a Gather's ranks wrote into root's buffer, copying once won up to 64
// MiB on the Intel host (two ranks, µs through the slots / once: Bcast 4
// MiB 375 / 231, 16 MiB 1418 / 1087; Gather 350 / 257, 1302 / 1122, and
// 64 MiB 9.6 / 8.2 ms; Scatter 16 MiB 1352 / 1136), and the timing that
// chooses the way costs a few operations of a size class, at its start
// and now and then.
func singlePolicy(mode string, crowded bool, firstReach func() time.Duration) uint64 {
	switch {
	case mode == SingleCopyCMA:
		return singleAlways
	case mode == SingleCopyNone:
		return singleNever
	case crowded && firstReach() > 0:
		return singleCrowdedShadowed
	case crowded:
		return singleCrowded
	}
	return singleAuto
}

// crowdedPolicy reports whether the policy is one of a crowded host's.
func (s *Segment) crowdedPolicy() bool {
	return s.policy == singleCrowded || s.policy == singleCrowdedShadowed
}

// maySingle reports whether an operation of kind and bytes may copy
// once under the segment's policy.
func (s *Segment) maySingle(kind wire.Kind, bytes int) bool {
	switch {
	case s.policy == singleNever:
		return false
	case s.crowdedPolicy():
		least, most, may := crowdedSingleSizes(kind, s.policy == singleCrowdedShadowed, s.crowding)
		return may && bytes >= least && bytes <= most
	}
	return true
}

// crowdedSingleSizes is the smallest and the largest operation of kind,
// in bytes, that may copy once by choice on a crowded host, one whose
// hypervisor shadows the guest's page tables or not
// (singleCrowdedShadowed), whose ranks are crowding to a CPU (rounded
// up); may is false for the kinds that never do there (see
// singlePolicy).
func crowdedSingleSizes(kind wire.Kind, shadowed bool, crowding int) (least, most int, may bool) {
	switch {
	case kind == wire.KindGather || kind == wire.KindScatter:
		if shadowed {
			return shadowedRootedSingleMin, math.MaxInt, true
		}
		return crowdedRootedSingleMin, math.MaxInt, true
	case kind == wire.KindAlltoall:
		if shadowed {
			return shadowedAlltoallSingleMin, math.MaxInt, true
		}
		return crowdedAlltoallSingleMin, math.MaxInt, true
	case kind == wire.KindReduce && !shadowed:
		return crowdedReduceSingleMin, math.MaxInt, true
	case kind == wire.KindBcast && !shadowed && crowding > 2:
		return packedBcastSingleMin, crowdedBcastSingleMax, true
	case kind == wire.KindBcast && !shadowed:
		return crowdedBcastSingleMin, crowdedBcastSingleMax, true
	}
	return 0, 0, false
}

// crowdedAlltoallSingleMin is the smallest Alltoall, in bytes, that may
// copy once by choice on a crowded host where a single copy's first reach
// of a page costs no more than a later one. Below it, what choosing costs
// is more than a single copy can win: every rank waits for the decider's
// record before it moves any data, on two CPUs a turn of the scheduler.
// From it, the single copy wins by more than that on an Intel Xeon VM of
// model 167, whose process switch takes 0.89 µs and whose shared-memory
// handoff of 64 KiB (19.2 µs) takes three times process_vm_readv's (6.4):
// four ranks on its two CPUs, 2026-12-01, eight alternating rounds,
// median µs from 1 MiB / from 256 KiB (median of the rounds' ratios):
// 256 KiB 54.9 / 41.1 (0.77), 512 KiB 152.4 / 88.7 (0.59), 1 MiB 218.0 /
// 232.6 (1.07); always once took 34.3 at 256 KiB and 71.2 at 512 KiB in
// an earlier set, where at 128 KiB the slots and the single copy were
// level (35.2 / 35.7). Three ranks: 384 KiB 101.0 / 42.4 (0.41), 768
// KiB 231.0 / 145.2 (0.64). Eight ranks on the two CPUs lose a little,
// the record's wait being longer there: 256 KiB 147.0 / 163.4 (1.14),
// 512 KiB 273.6 / 288.6 (1.05). On a Zen 4 VM
// (2026-11-29) choosing had looked costly at 256 KiB, auto 33.6 against
// 26.1 with Alltoalls kept to the slots, but the slots alone took 40.2
// in the same rounds (25-42): within their noise.
const crowdedAlltoallSingleMin = 256 << 10

// shadowedAlltoallSingleMin is crowdedAlltoallSingleMin on a host whose
// hypervisor shadows the guest's page tables (shmem.FirstReach), where a
// process switch is slow too and the wait for the decider's record costs
// more (see shadowedRootedSingleMin): the minimum all crowded hosts had
// until 2026-12-01, the size from which an Intel Xeon host won by
// copying once (2026-11-29, see singlePolicy), the smallest it tried.
const shadowedAlltoallSingleMin = 1 << 20

// crowdedRootedSingleMin is crowdedAlltoallSingleMin for Gathers and
// Scatters, as large as directMinCrowded, below which their registered
// buffers do not go direct either. Four ranks on two CPUs of a Zen 4 VM,
// whose process switch takes 1.44 µs and where a single copy's first
// reach of a page costs no more than a later one (2026-12-01, five
// alternating rounds, µs, from 512 KiB / from 256 KiB / always once):
// Scatter 256 KiB 29.6 / 20.4 / 19.6, 384 KiB 36.9 / 24.8 / 23.3;
// Gather 22.9 / 20.7 / 17.6 and 28.9 / 24.8 / 22.0; three ranks, 384
// KiB: Scatter 30.0 / 18.1 / 19.2, Gather 18.8 / 16.5 / 17.3.
const crowdedRootedSingleMin = 256 << 10

// crowdedReduceSingleMin is crowdedRootedSingleMin for Reduces, which
// copy once by choice on a crowded host only where a single copy's first
// reach of a page costs no more than a later one: through the slots every
// rank combines its share of every rank's slot, so each waits for all of
// them in every round anyway, and copying once adds only the wait for
// root's record. Four ranks on two CPUs of an Intel Xeon VM of model 167,
// 2026-12-01, six alternating rounds, median µs through the slots / by
// choice from this minimum (median of the rounds' ratios): 64 KiB, left
// to the slots, 38.8 / 38.9 (1.01), 256 KiB 118.2 / 84.5 (0.75), 1 MiB
// 502.2 / 321.5 (0.65), 4 MiB 2180 / 1610 (0.70), where Open MPI took
// 39.4, 110.6, 674.2 and 4370; three ranks 384 KiB 0.69, 1.5 MiB 0.60;
// eight 256 KiB 0.99, 1 MiB 0.76, 4 MiB 0.86. Where the first reach
// costs, no crowded Reduce has been measured copying once.
const crowdedReduceSingleMin = 256 << 10

// crowdedBcastSingleMin and crowdedBcastSingleMax bound the Bcasts that
// copy once by choice on a crowded host where a single copy's first
// reach of a page costs no more than a later one and there are at most
// two ranks to a CPU (packedBcastSingleMin where there are more).
// Through the slots every other rank waits for root's data anyway, as
// it waits for root's record when copying once; and each copies the
// data once instead of twice, a share of it root's (bcastDirect). Four
// ranks on two CPUs of an Intel Xeon VM of model 167, 2026-12-01, five
// alternating rounds, median µs through the slots / by choice from 256
// KiB (median of the rounds' ratios), Open MPI: 256 KiB 40.9 / 25.9
// (0.53) / 57.7, 512 KiB 104.2 / 50.0 (0.48), 1 MiB 210.2 / 120.0 (0.65)
// / 288.8, 4 MiB 759 / 610 (0.78) / 1227, 16 MiB 3391 / 3211 (0.94).
// Three ranks, four rounds: 256 KiB 0.50, 1 MiB 0.40, 4 MiB 0.57, 16 MiB
// 0.85. Eight ranks on the two CPUs: 256 KiB 1.09, 1 MiB 0.89, 4 MiB
// 0.97, but 16 MiB 1.33 (4.7-6.0 ms through the slots, 5.4-7.7 by
// choice), and an Intel Xeon host lost four ranks' 16 MiB Bcasts
// copying once (see singlePolicy): larger Bcasts stay in the slots.
// Smaller ones gained nothing by choice (from 128 KiB, 1.02 at 128 KiB)
// until a crowded host's waiters stopped polling long between yields
// (shmem.NewWaiter); since, from 64 KiB against from 256 KiB, ten
// rounds: four ranks 64 KiB 14.3 / 11.6 µs (0.80), Open MPI 12.4, 128
// KiB 19.6 / 13.8 (0.72); three ranks, six rounds, 0.71 and 0.61; but
// eight ranks 1.48 and 1.22, where 256 KiB gained (0.68). Where the
// first reach costs, no crowded Bcast has been measured copying once.
const (
	crowdedBcastSingleMin = 64 << 10
	packedBcastSingleMin  = 256 << 10
	crowdedBcastSingleMax = 4 << 20
)

// shadowedRootedSingleMin is crowdedRootedSingleMin on a host whose
// hypervisor shadows the guest's page tables (shmem.FirstReach), where a
// process switch is slow too, and the wait for the decider's record
// costs a Gather or a Scatter more than copying once wins: four ranks
// on two CPUs of a Zen 5 VM under PVM, whose process switch takes 4.9 µs
// (1.95 on a Zen 3 VM), 2026-11-30, µs, auto / always the slots / always
// once, two sets of five alternating rounds: Gather 256 KiB 41.8 / 26.7
// / 35.8 and 37.4 / 31.1 / 43.8, Scatter 29.4 / 25.1 / 30.2 and 29.5 /
// 27.4 / 41.0 (a third, auto / auto with this minimum: Gather 37.1 /
// 27.7, Scatter 44.5 / 29.2); at 512 KiB the three within each other's
// ranges (Gather 35.6 / 35.9 / 36.3, Scatter 35.3 / 33.8 / 34.1), at 1
// MiB the single copy ahead (Gather 42.0 / 54.1 / 38.4, Scatter 41.2 /
// 59.4 / 38.6).
const shadowedRootedSingleMin = 512 << 10

// WithSingleCopy sets how the collectives of a segment copy between
// ordinary buffers: SingleCopyAuto, SingleCopyCMA or SingleCopyNone.
func WithSingleCopy(mode string) Option {
	return func(o *Options) error {
		switch mode {
		case SingleCopyAuto, SingleCopyCMA, SingleCopyNone:
			o.singleCopy = mode
			return nil
		}
		return fmt.Errorf("%w: single copy %q (want auto, cma or none)", ErrInvalid, mode)
	}
}

// publishCookie puts this process's cookie in rank's control line of
// the segment mapped at mem, before the ranks tell each other that they
// have mapped it.
func publishCookie(mem []byte, rank int, c shmem.Cookie) {
	line := mem[segControl+rank*segLine:]
	binary.LittleEndian.PutUint64(line[ctlCookie:], c.Addr)
	binary.LittleEndian.PutUint64(line[ctlCookie+8:], c.Value)
}

// cookieOf is the cookie rank r published.
func (s *Segment) cookieOf(r int) shmem.Cookie {
	line := s.mem[segControl+r*segLine:]
	return shmem.Cookie{Addr: binary.LittleEndian.Uint64(line[ctlCookie:]), Value: binary.LittleEndian.Uint64(line[ctlCookie+8:])}
}

// firstReach is shmem.FirstReach, or what a test makes it: what a single
// copy's first reach of a page costs on this host. firstReachHuge is
// that of memory on huge pages (shmem.FirstReachHuge).
var firstReach, firstReachHuge = shmem.FirstReach, shmem.FirstReachHuge

// probeSingle reads every other rank's cookie with process_vm_readv and
// records in this rank's control line whether it could, once every rank
// has published its cookie. Where it could and the segment's policy
// times the single copy, it tells the rank's chooser what the copy's
// first reach of a page costs on this host (shmem.FirstReach), which
// the process measures once: in 1.7-2.7 ms on the Zen 5 VM where a
// first reach is slow, most of it the measure's own page faults. Where
// the rank puts its buffers on huge pages, it is their first reach
// (shmem.FirstReachHuge, nothing on that VM), which assumes the other
// ranks do too, as they do unless told otherwise.
func (s *Segment) probeSingle() {
	reads := uint64(readsAll)
	if f := s.c.ep.opts.singleRefused; f != nil && f(s.c.rank) {
		reads = readsNot
	}
	var got [8]byte
	for r := range s.ranks {
		if r == s.c.rank || reads == readsNot {
			continue
		}
		c := s.cookieOf(r)
		if err := s.vm.Read(s.pids[r], c, c.Addr, got[:]); err != nil || binary.NativeEndian.Uint64(got[:]) != c.Value {
			s.c.ep.log.Debug("collectives copy through the segment only: this rank cannot read another's memory",
				"comm", s.c.id, "rank", r, "pid", s.pids[r], "err", err)
			reads = readsNot
			break
		}
	}
	if reads == readsAll && (s.policy == singleAuto || s.crowdedPolicy()) {
		// A call's single copies may reach the buffers of every rank.
		// A buffer goes on huge pages at its second call
		// (useHugePages), and a size class that rents copies through
		// the slots at least twice first.
		reach := firstReach
		if s.huge != nil && hugepage.Available() {
			reach = firstReachHuge
		}
		s.single.SetFirstReach(reach() * time.Duration(s.ranks))
	}
	s.word64(segControl + s.c.rank*segLine + ctlReads).Store(reads)
}

// everyoneReads reports whether every rank has found that it can read
// every other's memory. Once true it stays so; until every rank has
// tried, it is false.
func (s *Segment) everyoneReads() bool {
	if v := s.allRead.Load(); v != 0 {
		return v == readsAll
	}
	for r := range s.ranks {
		switch s.word64(segControl + r*segLine + ctlReads).Load() {
		case readsNot:
			s.allRead.Store(readsNot)
			return false
		case 0:
			return false
		}
	}
	s.allRead.Store(readsAll)
	return true
}

// chooseWay makes decider the decider of the operation if the segment's
// policy lets it copy once, and records on the decider the way it takes.
func (op *SegmentOp) chooseWay(rec []byte, decider int) {
	s := op.s
	if !op.chosen(decider) {
		return
	}
	op.decider = decider
	if s.policy != singleAlways {
		op.began = Now() // in case the decider times it
	}
	if decider != s.c.rank {
		return
	}
	op.way = slotsUntimed
	switch {
	case !s.everyoneReads():
	case s.policy == singleAlways:
		op.way = singleCopy
	default:
		op.choice = s.single.Choose(int(op.call.Kind), singleFamily(op.call.Kind, s.crowdedPolicy()), op.bytes())
		if op.choice.Single {
			op.way = singleCopy
		} else if op.choice.Timed {
			op.way = slotsTimed
		}
	}
	binary.LittleEndian.PutUint64(rec[recWay:], op.way)
}

// chosen reports whether the operation's way is chosen, by decider: it
// has one, and the segment's policy lets the operation copy once. Only
// then may a rank's buffers be read or written by the others
// (useHugePages).
func (op *SegmentOp) chosen(decider int) bool {
	return decider >= 0 && op.s.maySingle(op.call.Kind, op.bytes())
}

// The families of kinds that copy once alike (shmem.SingleCopy.Choose):
// those whose ranks only move data between buffers, and Allreduce,
// Reduce and ReduceScatter, whose ranks read and combine (an Allreduce's
// and a Reduce's write the result back too).
//
// Allreduce's single copy has won or lost alike at every size it may
// take, on each host measured: won from 64 KiB to 4 MiB on an Intel
// Xeon host, lost at about twice the slots' time from 256 KiB to 16 MiB
// on the Zen 3 and Zen 5 VMs (2026-11-29 and 2026-11-30). On the Intel
// host it then lost from 16 MiB (two ranks, µs through the slots /
// once, 2026-11-29: 4 MiB 754-769 / 653-687, 16 MiB 3302-3350 /
// 3997-4134, 64 MiB 18.6 / 25.9-26.5 ms), and Allreduces above 4 MiB
// never copied once by choice. Since each rank combines in its own
// receive buffer and in chunks of 128 KiB (collective's
// reduceSingle), it wins there at every size (2026-11-30, five
// alternating runs, median of the pairs' time ratios, once against the
// slots: 4 MiB 0.65, 8 MiB 0.65, 16 MiB 0.87, 32 MiB 0.95, 64 MiB 0.82),
// so no size is kept from it. Since it wins or loses alike, the family
// lends a clear loss to its larger size classes
// (shmem.SingleCopy.LendAcrossSizes), which then need not time that
// loss at their start. The kinds that only move data do not: on many
// hosts the slots win below some 64 KiB and the single copy above.
//
// On a crowded host Bcasts are a family of their own: they may copy
// once only up to crowdedBcastSingleMax, and their root copies a share
// and waits for every reader, so their single copy need not win or lose
// where a Gather's or a Scatter's does. As one of the kinds that move
// data, a Bcast that had found copying once faster lent it to the
// Scatter after it, which then went through the slots first at its
// first run, on pages of the segment not yet touched, inside the timed
// calls. Four ranks on two CPUs of an Intel Xeon VM of model 167,
// 2026-12-01, median of alternating rounds' time ratios against the
// build before Bcasts could copy once there, one family / families
// apart: a sweep of Bcast then Scatter, ten rounds, Scatter 1 MiB 1.47 /
// 1.09, 4 MiB 0.96 / 0.94; with the waiters' bursts bounded
// (shmem.NewWaiter), a sweep of Bcast, Gather, Scatter, Alltoall and
// Reduce, six rounds: Gather 1 MiB 1.13 / 1.05, 4 MiB 1.13 / 0.99,
// Scatter 256 KiB 1.14 / 0.98, 16 MiB 0.86 / 0.72.
const (
	familyMoves = iota
	familyCombines
	familyCrowdedBcast
)

// singleFamily is the family of kind, on a crowded host or not.
func singleFamily(kind wire.Kind, crowded bool) int {
	switch {
	case kind == wire.KindAllreduce || kind == wire.KindReduce || kind == wire.KindReduceScatter:
		return familyCombines
	case kind == wire.KindBcast && crowded:
		return familyCrowdedBcast
	}
	return familyMoves
}

// bytes is the size of the operation's call, for the choice of its way.
func (op *SegmentOp) bytes() int { return op.call.Count * op.call.DType.Size() }

// Single reports whether the operation copies once between the ranks'
// buffers (Read) rather than through the slots, as its decider chose;
// every rank gets the same answer. Call it where Direct said no. A rank
// other than the decider waits for the decider's call record.
func (op *SegmentOp) Single() (bool, error) {
	if op.decider < 0 {
		return false, nil
	}
	if op.decider != op.s.c.rank {
		if err := op.waitRecord(op.decider); err != nil {
			return false, err
		}
		op.way = binary.LittleEndian.Uint64(op.s.record(op.decider, op.ticket)[recWay:])
	}
	if op.way != singleCopy {
		return false, nil
	}
	op.s.singleOps.Add(1)
	return true, nil
}

// SingleOps is how many of the segment's operations copied once.
func (s *Segment) SingleOps() uint64 { return s.singleOps.Load() }

// BufferLen is the length of rank r's buffer i in the operation, once r
// has recorded its call.
func (op *SegmentOp) BufferLen(r, i int) (int, error) {
	if err := op.recorded(r); err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint64(op.s.record(r, op.ticket)[recAddrs+16*i+8:])), nil
}

// recorded waits until rank r has recorded its call of the operation.
func (op *SegmentOp) recorded(r int) error {
	if recordTicket(op.s.record(r, op.ticket)).Load() >= op.ticket {
		return nil
	}
	return op.waitRecord(r)
}

// Read copies len(dst) bytes of rank r's buffer i, from byte off, into
// dst, with process_vm_readv, once r has recorded its call. The rank
// whose buffer it is waits, before it returns, until every rank that
// reads it is done (WaitDone). A failure to read fails the job: the
// others would wait for this rank.
func (op *SegmentOp) Read(r, i, off int, dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	addr, err := op.remote(r, i, off, len(dst), "reads")
	if err != nil {
		return err
	}
	return op.copied(r, "reading", len(dst), op.s.vm.Read(op.s.pids[r], op.s.cookieOf(r), addr, dst))
}

// Write copies src into rank r's buffer i, from byte off, with
// process_vm_writev, once r has recorded its call, as Read copies out of
// it: r waits, before it returns, until every rank that writes its
// buffer is done. Writing lets a rank that would only wait for others
// to read its buffer copy a share of the data itself (a Bcast's root).
func (op *SegmentOp) Write(r, i, off int, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	addr, err := op.remote(r, i, off, len(src), "writes")
	if err != nil {
		return err
	}
	return op.copied(r, "writing", len(src), op.s.vm.Write(op.s.pids[r], op.s.cookieOf(r), addr, src))
}

// remote is the address of byte off of rank r's buffer i, once r has
// recorded its call, where n bytes from there lie in the buffer; verb
// says what this rank does with them, for the error.
func (op *SegmentOp) remote(r, i, off, n int, verb string) (uint64, error) {
	s := op.s
	if err := op.recorded(r); err != nil {
		return 0, err
	}
	rec := s.record(r, op.ticket)
	addr := binary.LittleEndian.Uint64(rec[recAddrs+16*i:])
	size := int(binary.LittleEndian.Uint64(rec[recAddrs+16*i+8:]))
	if off < 0 || off+n > size {
		err := fmt.Errorf("%w: rank %d's buffer of the shared-memory %s holds %d bytes, and rank %d %s %d from byte %d",
			ErrMismatch, s.c.group[r], op.call, size, s.c.group[s.c.rank], verb, n, off)
		s.c.ep.abort(err)
		return 0, err
	}
	return addr + uint64(off), nil
}

// copied is the outcome of a copy of n bytes out of or into rank r's
// buffer that ended with err: a process that is gone is a lost rank, and
// any other failure fails the job, since the others would wait for this
// rank.
func (op *SegmentOp) copied(r int, doing string, n int, err error) error {
	s := op.s
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ESRCH) || errors.Is(err, shmem.ErrNotPeer):
		return s.c.ep.loseAndWait(s.c.group[r], fmt.Errorf("process %d exited during a shared-memory %s", s.pids[r], op.call))
	default:
		err = fmt.Errorf("%s %d bytes of rank %d's buffer of the shared-memory %s: %w", doing, n, s.c.group[r], op.call, err)
		s.c.ep.abort(err)
		return err
	}
}

// Timing. The decider learns from what an operation cost every rank:
// the longest of their parts, each from its Begin to its End, which is
// what the slowest caller paid. Each rank of a timed operation records
// its part's length in its call record at End (recordTook), and the
// decider reads them when it begins its next operation (learnTimed),
// by which time every rank is done with this one, or one after that.
// Before, the decider waited at the end of a timed operation through
// the slots for every rank to say it was done: that wait made the timed
// ones a fifth to two fifths slower than the others (two ranks, 1 MiB
// Allgather 68-71 µs against 51-57, Gather 74 against 46, 2026-11-28),
// and what the decider learned of the slots was that much worse than
// what callers paid, while a single copy, whose lenders wait for their
// readers anyway, paid nothing more to be timed. So auto copied once
// where the slots were faster.

// A timedOp is what the decider keeps of its last timed operation until
// it learns from it; a zero ticket: none.
type timedOp struct {
	ticket      uint64
	kind, bytes int
	choice      shmem.Choice
	took        int64 // the decider's own part
}

// learned reports whether the decider learns from the operation's time:
// it chose its way by timing (SingleCopyAuto), and times this one.
func (op *SegmentOp) learned() bool {
	return op.decider >= 0 && op.s.policy != singleAlways && op.way != slotsUntimed
}

// recordTook ends this rank's part of a timed operation: it records how
// long the part took, and on the decider keeps the operation to learn
// from.
func (op *SegmentOp) recordTook() {
	if !op.learned() || op.mapped {
		return
	}
	took := max(Now()-op.began, 1)
	s := op.s
	if op.decider != s.c.rank {
		recordTook(s.record(s.c.rank, op.ticket)).Store(uint64(took))
		return
	}
	// The one before, if the others had not recorded theirs when this
	// one began, most likely have by now: every rank has begun this one.
	s.learnTimed()
	s.timing = timedOp{ticket: op.ticket, kind: int(op.call.Kind), bytes: op.bytes(), choice: op.choice, took: took}
}

// learnTimed learns from the decider's last timed operation once every
// rank has recorded its part, and leaves it for a later call until
// then. A record that a later operation has taken over (sixteen later)
// is given up.
func (s *Segment) learnTimed() {
	t := &s.timing
	if t.ticket == 0 {
		return
	}
	longest := t.took
	for r := range s.ranks {
		if r == s.c.rank {
			continue
		}
		rec := s.record(r, t.ticket)
		took := recordTook(rec).Load()
		if recordTicket(rec).Load() != t.ticket {
			*t = timedOp{}
			return
		}
		if took == 0 {
			return
		}
		longest = max(longest, int64(took))
	}
	s.single.Learn(t.kind, t.bytes, t.choice, longest)
	*t = timedOp{}
}
