package shmem

import (
	"math/bits"
	"sync"
)

// A Copier chooses how a rank copies into shared memory that other
// processes read next: through the caches (Copy) or around them
// (kernel.CopyAround's non-temporal stores).
//
// Through the caches is the faster way where the cores hand lines to
// each other quickly: the readers then find the data in a cache rather
// than in memory. But each line such a copy writes must first be taken
// back from the core that last read it, and on some hosts that is slow:
// this project's two-vCPU machine spends whole runs in a state in which
// a 64 KiB handoff between two processes takes 21-30 µs through the
// caches, the writer's copy alone 16 µs, against 3-8 µs otherwise, while
// around the caches it takes 8-10 µs in either state, the copy 3 µs
// (bench/reference/limits.c, shm_handoff_*, 2026-11-26). (Those copies
// through the caches were Go's copy, whose vector stores each wait for
// their line; Copy's string moves do not, which takes much of the slow
// state's cost away: see Copy.) So each rank
// times its own copies both ways, per kind of operation and size class,
// and goes around the caches only while that copies at least aroundGain
// times faster, which it does in the slow state alone: that margin
// stands for what the readers then lose by reading from memory. In the
// fast state a writer's small copies still gain 2.2-2.5 times around
// the caches (16 and 32 KiB; 1.5 at 64 KiB, 1.05 at 256 KiB), and its
// readers lose more: two-rank Bcasts, Allgathers, Gathers and Allreduces
// of 16-32 KiB took 1.6-1.9 times as long as through the caches
// (2026-11-28), while in the slow state the writer gains about five
// times (16 µs against 3). In operations of aroundLargeMin bytes and
// more the readers have little to lose, and the margin is
// aroundGainLarge. It tries the way it does not take one
// operation in exploreEvery (one in four of the first exploreEarly,
// unless it has been twice as slow),
// which follows a host that changes state during a run.
//
// A Copier is safe for concurrent use; its zero value is ready.
type Copier struct{ ways twoWays }

// CopierMin is the smallest operation, in bytes, whose copies a Copier
// chooses: below it the copies are too short for stores around the caches
// to pay, and timing them would cost a noticeable part of the operation.
const CopierMin = 16 << 10

const (
	aroundGain   = 3
	exploreEvery = 32
	exploreEarly = 16
)

// aroundGainLarge is aroundGain for operations of aroundLargeMin bytes
// and more, whose data the readers' caches do not keep for them either
// way. A Zen 3 VM (2026-11-30) ran two ranks' 16 MiB Allreduces through
// the slots at 3.2-3.7 ms a call in some runs and 5.7-6.5 in others. In
// the slow ones a put through the caches cost 1.8-2.8 times one around
// them (4 MiB: 2.0-5.0), short of aroundGain mostly; in the fast ones
// 0.8 (4 MiB: 0.4-0.6), so they stayed. With this margin, fourteen pairs
// of runs alternating with the build before, median of the pairs' time
// ratios: 4 MiB 0.90, 8 MiB 0.70, 16 MiB 0.85, 64 MiB 0.95; Allgathers,
// Bcasts and Gathers, which mostly copy once there, within the host's
// swings. The margin keeps one slow copy from flipping the way. Where the
// last-level cache holds such operations whole, readers could lose by
// it, as taking results out of the slots around the caches lost
// slightly at 4-12 MiB on the Intel host of 300 MiB (collective's
// receiveAroundMin). There (2026-11-30), against the margin of 3, median
// of the pairs' time ratios, two ranks in ten pairs of runs: Allreduce
// 0.89 / 1.01 / 1.05 / 1.00 at 4 / 8 / 16 / 64 MiB, Bcast 0.88 / 0.88 /
// 0.87 / 1.06, Allgather and Gather 0.91-1.14; four ranks (two CPUs) in
// fourteen: 0.93-1.18, the worst Allreduce at 16 MiB, 1.12, slower in
// 12 pairs. Within the host's swings, so the margin holds there too.
const (
	aroundGainLarge = 1.25
	aroundLargeMin  = 4 << 20
)

// copierGain is the margin by which a copy around the caches must be
// faster for a Copier to take it in an operation of bytes.
func copierGain(bytes int) float64 {
	if bytes >= aroundLargeMin {
		return aroundGainLarge
	}
	return aroundGain
}

// What a SingleCopy does differently, since it times whole operations.
// A way's first operations after the other way's run cold: the memory
// they use (the segment's slots, or the pages process_vm_readv reads)
// has left the caches. Two ranks' 1 MiB Gathers, each timed, in turns of
// 32 single copies and 64 through the slots (2026-11-28, an AMD EPYC
// host), ns/KiB by place in the turn: single copies 65, 91, then 49-55,
// through the slots 92, 70, then 28-34 (Allgathers: 83, 131, then
// 57-63; 182, 83, then 43-49). Before, each way was tried one
// operation at a time, so that every try ran cold, and a cold single
// copy cost less than the cold slots: auto copied once where that was
// 1.5-2 times slower. So the way not taken is tried in runs of runOps
// operations, each way begins with such a run, and the first coldOps
// operations after a change of way are not learned from. A run costs
// the operations of the slower way and the cold ones on both sides,
// about six operations' time, so runs come one in runEvery operations,
// but sooner early on (at 32, 64 and 128), when what the first runs
// learned may have been a slow start (first use of the buffers' pages).
const (
	coldOps  = 2
	runOps   = 4
	runEvery = 256
)

// wholeClear is how many times another way's cost a way of whole
// operations must cost to have clearly lost. A way taken that wins
// clearly at two of the early runs' points in a row skips the early runs
// from then on (runDue): each costs runOps operations of a way that
// loses, and cold ones on both sides of it. Two ranks' 4 MiB Allreduces
// of an AMD EPYC Zen 3 VM, which copy once at about twice the slots'
// time (2026-11-30, a build that logged the chooser), copied once 12 to
// 31 times in a sweep's point of 86, at 1.0-2.4 ms against the slots'
// 0.5-0.7; the Zen 5 VM's took 465-550 µs under auto against 360-385
// through the slots alone (2026-11-30). The early runs are for a slow
// start, which makes ways look alike or flips them, not for a clear win
// found twice.
const wholeClear = 1.5

// lendSizes is how many size classes down a class of a lending family
// (SingleCopy.LendAcrossSizes) looks for its kind's clear loss of the
// second way: a sweep's sizes step four times apart.
const lendSizes = 2

type copyKey struct{ kind, class int }

// twoWays is what a Copier or a SingleCopy knows: of every kind of
// operation and size class, how each of two ways went.
type twoWays struct {
	mu   sync.Mutex
	ways map[copyKey]*copyWays
	// reach is what the second way's first operation on new buffers
	// costs more than a later one, in nanoseconds per KiB (a
	// SingleCopy's: SetFirstReach); 0 for a Copier.
	reach float64
	// lenders are the families whose kinds lend a clear loss of the
	// second way to their larger size classes (SingleCopy.LendAcrossSizes).
	lenders map[int]bool
}

// copyWays is what is known of one kind and size class: the operations
// chosen so far, and of each way (for a Copier, through the caches [0]
// and around them [1]) how many were timed and an average of their
// nanoseconds per KiB, and whether the second way is the one taken,
// tries of the other apart.
type copyWays struct {
	ops    uint64
	timed  [2]uint64
	cost   [2]float64
	second bool

	// Of whole operations only: whether the last one took the second
	// way, how many more will still run cold, how many operations the
	// run of the way not taken has left, whether the run's next sample
	// is its first warm one, the family of the kind (SingleCopy.Choose),
	// whether the class took its way from its family or a smaller class
	// (borrow), and at how many of the early runs' points in a row the
	// way taken had won clearly (runDue).
	last      bool
	cold, run int
	fresh     bool
	family    int
	borrowed  bool
	clearWins int
}

// Choose reports whether an operation of the given kind and bytes, at
// least CopierMin, should copy around the caches.
func (c *Copier) Choose(kind, bytes int) bool {
	around, _ := c.ways.choose(kind, bytes, copierGain(bytes))
	return around
}

// entry is what is known of kind's operations of bytes' size class,
// made on first use (made); t.mu is held.
func (t *twoWays) entry(kind, bytes int) (w *copyWays, made bool) {
	if t.ways == nil {
		t.ways = make(map[copyKey]*copyWays)
	}
	k := copyKey{kind, bits.Len(uint(bytes))}
	if w = t.ways[k]; w == nil {
		w = new(copyWays)
		t.ways[k] = w
		made = true
	}
	return w, made
}

// choose reports whether an operation of the given kind and bytes should
// take the second way, which it does while that way's average is gain
// times lower than the first's, and how many operations of the kind and
// size class have been chosen, this one included.
func (t *twoWays) choose(kind, bytes int, gain float64) (second bool, ops uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, _ := t.entry(kind, bytes)
	w.ops++
	if !w.known() {
		return w.timed[1] < w.timed[0], w.ops // each way twice, in turn
	}
	second = w.cost[1]*gain < w.cost[0]
	w.second = second
	// Early on, the way not taken is tried again unless it has been
	// twice as slow: a clear loser then waits for exploreEvery, which
	// spares short runs (a benchmark's few dozen calls of a size) most
	// of what learning costs.
	if w.ops%exploreEvery == 0 || w.ops < exploreEarly && w.ops%4 == 0 && !w.clearLoser(gain) {
		second = !second
	}
	return second, w.ops
}

// chooseWhole is choose for whole operations (SingleCopy), which take
// the faster way by any margin: it also reports whether the choice needs
// the operation's time (a run's) and whether the operation runs cold,
// which its time then must say to learn. A kind's first operation of a
// size class may borrow its way from others of its family (borrow).
func (t *twoWays) chooseWhole(kind, family, bytes int) (second bool, ops uint64, time, cold bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, made := t.entry(kind, bytes)
	if made {
		w.family = family
		t.borrow(w, kind, bits.Len(uint(bytes)))
	}
	w.ops++
	second, time, cold = w.wholeWay(t.reach)
	return second, w.ops, time, cold
}

// borrow starts w, new, on the way that the other kinds of its family
// have found faster in size class class, where every one of them that
// has timed both ways agrees, and marks it borrowed: it then takes that
// way until its first run of the other (the 32nd operation), rather than
// timing both ways in its first operations. Learning costs a class some
// four operations the slower way and two cold ones, which a long job
// does not notice, but a short one does: a sweep's 16 MiB points are 18
// operations, and two ranks' Allgathers and Alltoalls took 1807-1974 µs
// against 1561-1690 copying once alone (an Intel Xeon host, 2026-11-29).
// The kinds of a family (core's: those that only move data) have won
// and lost together, size by size, wherever docs/performance.md records
// both (on a crowded host Allgathers, which lost where Gathers won, do
// not copy once, and Bcasts, which copy once there only up to 4 MiB, are
// a family of their own), so a class's first kind pays for what the
// others take; a kind that differs finds out at its first run.
//
// A kind of a lending family (SingleCopy.LendAcrossSizes) with nothing to
// borrow in its class takes the first way where its nearest smaller
// class, at most lendSizes classes down, found the second clearly slower
// (wholeClear), and counts that as one clear win (runDue): an Allreduce
// that copies once at twice the slots' time at 1 MiB does so at 4 MiB
// too. Only a loss is lent: a class that borrowed the second way would
// skip the rent that its first reach of the new, larger buffers costs.
func (t *twoWays) borrow(w *copyWays, kind, class int) {
	agreed, second := false, false
	for k, o := range t.ways {
		if k.class != class || o == w || o.family != w.family || !o.known() {
			continue
		}
		if agreed && o.second != second {
			return
		}
		agreed, second = true, o.second
	}
	if agreed || !t.lenders[w.family] {
		w.borrowed, w.second = agreed, second
		return
	}
	for c := class - 1; c >= class-lendSizes; c-- {
		if o := t.ways[copyKey{kind, c}]; o != nil && o.known() {
			if o.cost[1] >= wholeClear*o.cost[0] {
				w.borrowed, w.second, w.clearWins = true, false, 1
			}
			return
		}
	}
}

// wholeWay is the way of w's next whole operation: a run of the first
// way until it has two warm samples, and until it has cost what the
// second's first reach of new buffers would (renting), then one of the
// second; then the faster way, but for a run of the other when one is
// due (runDue). The runs' operations need their times; a cold one's time
// is not learned, but the way taken after a run learns its first warm
// ones as it learns any (one in slotsTimedEvery through the slots). A
// borrowed class takes its way at once, until a run has timed the
// other.
func (w *copyWays) wholeWay(reach float64) (second, time, cold bool) {
	time = true
	learned := w.known()
	switch {
	case !learned && !w.borrowed:
		second = w.timed[0] >= 2 && !w.renting(reach)
	case w.run > 0:
		w.run--
		second = !w.second
	default:
		time = false
		if learned {
			w.second = w.cost[1] < w.cost[0]
		}
		second = w.second
		if w.runDue() {
			w.run, w.fresh = runOps-1, true
			second, time = !second, true
		}
	}
	if w.ops == 1 || second != w.last {
		w.cold = coldOps
	}
	w.last = second
	if cold = w.cold > 0; cold {
		w.cold--
	}
	return second, time, cold
}

// runDue reports whether w's next operation, its ops'th, starts a run of
// the way not taken: one in runEvery, and sooner early on, at the 32nd,
// 64th and 128th, when what the first runs learned may have been a slow
// start (first use of the buffers' pages), unless the way taken has won
// by wholeClear at two of those points in a row. It counts those wins
// as it passes the points, so it is asked once an operation.
func (w *copyWays) runDue() bool {
	switch {
	case w.ops%runEvery == 0:
		return true
	case w.ops < 32 || w.ops&(w.ops-1) != 0:
		return false
	case !w.known():
		// A borrowed way, not yet timed against the other: its run is
		// due, and there is no margin to count.
	case w.cost[0] >= wholeClear*w.cost[1] || w.cost[1] >= wholeClear*w.cost[0]:
		w.clearWins++
	default:
		w.clearWins = 0
	}
	return w.clearWins < 2
}

// renting reports whether w, which has not learned both ways, still
// takes the first way before it tries the second, whose first operation
// on new buffers costs reach nanoseconds a KiB more than a later one:
// until the first way's warm operations have cost that much in all, as
// a skier rents until the rent has come to the price of skis. A class
// then loses at most as much again to a second way that does not pay,
// and a short job that does not cover its price never pays it. A class
// that borrows its way pays no rent: the kinds it borrows from found the
// second way faster with its first reach behind them, often on the same
// pages, which Go's heap hands out again (Alltoalls of 64 MiB among
// four ranks of a Zen 5 VM took 15-18 ms a call borrowing the single
// copy after Gathers had paid for it, and 22-42 ms renting first,
// 2026-11-29).
func (w *copyWays) renting(reach float64) bool {
	return reach > 0 && (w.timed[0] < 2 || float64(w.timed[0])*w.cost[0] < reach)
}

// known reports whether both ways have been timed twice, from which on
// their averages choose.
func (w *copyWays) known() bool { return w.timed[0] >= 2 && w.timed[1] >= 2 }

// clearLoser reports whether one way has cost twice what the other has,
// the second's cost times gain.
func (w *copyWays) clearLoser(gain float64) bool {
	a, b := w.cost[0], w.cost[1]*gain
	return max(a, b) > 2*min(a, b)
}

// Learn records that an operation of the given kind and bytes, going
// around the caches or not, copied put bytes in nanos nanoseconds.
func (c *Copier) Learn(kind, bytes int, around bool, put, nanos int64) {
	c.ways.learn(kind, bytes, around, put, nanos, false)
}

// learn records that an operation of the given kind and bytes, taking
// the second way or the first, did amount bytes of work in nanos
// nanoseconds. With mean, the averages follow every sample alike (see
// below).
func (t *twoWays) learn(kind, bytes int, second bool, amount, nanos int64, mean bool) {
	if amount <= 0 || nanos <= 0 {
		return
	}
	way := 0
	if second {
		way = 1
	}
	x := float64(nanos) / float64(amount) * 1024
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.ways[copyKey{kind, bits.Len(uint(bytes))}]
	if w == nil {
		return
	}
	// A way's first copies pay for first use (the segment's pages, the
	// caches), so the second replaces the first (of whole operations,
	// see below). A faster copy moves the
	// average halfway: nothing makes a copy fast by accident, and the
	// way not taken is timed seldom. A slower one moves it an eighth,
	// counting as twice the average at most, so that one copy that the
	// scheduler interrupted does not decide.
	//
	// Whole operations are another matter (SingleCopy): one way's can be
	// fast at times and slow at others, waiting on the scheduler or the
	// kernel, and what a caller pays is their mean. The average of the
	// way taken moves an eighth towards every sample, faster or slower,
	// counting as twice the average at most like a copy's. Now and then
	// an operation takes ten times as long whichever way it goes (the
	// runtime's monitor, an interrupt: about one 64 KiB Bcast in a
	// hundred, 2026-11-28); counted as four times, as they once were,
	// one such operation moved the average three eighths, past the other
	// way's where that was a quarter slower, and the chooser then kept
	// the slower way until the next run (TestSingleCopyIsNotTurnedByOneSlowCall).
	// A cold operation's sample is dropped (SingleCopy.Learn). The way
	// not taken is tried in a run every runEvery operations, and the run
	// is all that is known of how it goes now: its first warm sample
	// replaces the average, the next moves it halfway. Else a slow start
	// (a collection, first page faults) that the way taken forgets in a
	// few dozen operations would hold the other's average up for
	// hundreds.
	switch w.timed[way]++; {
	case w.timed[way] == 1 || !mean && w.timed[way] == 2:
		w.cost[way] = x
	case mean && w.timed[way] == 2:
		// A whole operation's cold ones are not learned, so its first
		// two are both warm, and either can be slow: the first where
		// first use lasts longer, the second by chance. The smaller
		// stands for the way until more come
		// (TestSingleCopyIsNotTurnedByOneSlowEarlySample).
		w.cost[way] = min(w.cost[way], x)
	case mean && second != w.second && w.fresh:
		w.cost[way], w.fresh = x, false
	case mean && second != w.second:
		w.cost[way] += (min(x, 2*w.cost[way]) - w.cost[way]) / 2
	case !mean && x < w.cost[way]:
		w.cost[way] = (w.cost[way] + x) / 2
	default:
		w.cost[way] += (min(x, 2*w.cost[way]) - w.cost[way]) / 8
	}
}
