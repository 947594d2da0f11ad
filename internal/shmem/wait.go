package shmem

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// A Bell is what waiters on shared memory sleep on: Seq is the futex
// word, bumped by every ring, and Sleepers counts the waiters that are
// about to sleep or sleeping. A waiter announces itself before its last
// look at the condition, so that the side that changes the condition pays
// for a wake-up system call only when someone sleeps.
type Bell struct {
	Sleepers *atomic.Uint32
	Seq      *atomic.Uint32
	// Knock, when set, wakes the sleepers in place of the futex: they
	// park their goroutines (Waiter.SetPark) instead of sleeping on Seq.
	Knock func()
	// Sleeping, when set, is the waiter's own word, which it sets to 1
	// before it announces itself and to 0 when it wakes: a Knock that
	// reads every waiter's word can knock on the sleeping ones only.
	Sleeping *atomic.Uint32
}

// Ring wakes the bell's sleepers, if there are any. Call it after storing
// what they wait for.
func (b Bell) Ring() {
	if b.Sleepers.Load() != 0 {
		b.Wake()
	}
}

// Wake wakes every sleeper, announced or not: for a change that waiters
// learn of by other means than their counter, such as a close.
func (b Bell) Wake() {
	b.Seq.Add(1)
	if b.Knock != nil {
		b.Knock()
		return
	}
	Wake(b.Seq, math.MaxInt32)
}

// The waiting policy's constants.
const (
	// checkEvery polls pass between calls of a wait's stop function,
	// which may read the clock or make a system call.
	checkEvery = 64
	// A waiter polls between burstMin and burstMax times between yields
	// of the processor, or burstCrowded where the processes cannot all
	// have a CPU (NewWaiter).
	burstMin     = 16
	burstMax     = 1024
	burstCrowded = 64
	// switched is how long a yield takes that ran another thread.
	switched = 2 * time.Microsecond
)

// A Waiter waits for counters in shared memory that other processes (or
// goroutines) advance: the shared-memory links' rings and the segment of
// a communicator use the same one. It polls, yielding the processor now
// and then, for a while; then it sleeps on the counter's bell, for a
// bounded time at once, until the counter is far enough or stop says to give
// up.
//
// Polling covers the microseconds in which a peer that is running
// answers; the sleeps keep an idle waiter from costing a core. How often
// it yields adapts to what the yields show: a yield that returns at once
// found nothing else to run, so the peer has a core of its own and the
// waiter polls longer between yields; a yield that ran another thread,
// after which the wait is over, ran the peer on this core, and polling
// only keeps it from running, so the waiter yields sooner.
//
// A Waiter belongs to one goroutine at a time.
type Waiter struct {
	spinFor  time.Duration
	sleepFor time.Duration
	burst    int // polls between yields
	most     int // the most polls between yields
	ts       Timespec
	park     func(d time.Duration) // nil: sleep on the bell's futex
}

// NewWaiter returns a Waiter that polls and yields for spinFor before it
// first sleeps, and sleeps for sleepFor at most at a time: how late it
// notices what stop reports when nobody rings its bell. crowded says that
// the processes that take part in the waits cannot all have a CPU: the
// Waiter then starts out yielding often, and never polls more than
// burstCrowded times between yields.
//
// There a yield that returns at once shows only that nothing else waits
// for this CPU now: a peer that runs on the other CPU may come to wait
// behind this one at the next turn of the scheduler. A waiter whose
// bursts had grown to burstMax (some 25 µs there, where a PAUSE took
// 22-27 ns) then held such a peer off for a whole burst each time, and a
// job settled into turns that kept its calls on plateaus some 16 µs
// apart for hundreds of calls at a time: four ranks' 256 KiB Gathers on
// two CPUs of an Intel Xeon VM of model 167 took 10-13 µs in some runs
// and 21-55 in others (2026-12-01). With bursts
// of at most 64 polls, the median of five alternating rounds' time
// ratios against 1024, four ranks: Gather 256 KiB 0.28, 1 MiB 0.45;
// Bcast 64 KiB 0.66, 1 MiB 0.75; Reduce 64 KiB 0.61; Alltoall 64 KiB
// 0.74; Scatter 64 KiB 0.74; the geometric mean of the 32 points from 64
// KiB to 4 MiB 0.844, the worst Allgather 1 MiB 1.11 (16 polls: 0.853,
// 32: 0.872, 128: 0.944). Three ranks: 0.946 over 15 points; eight:
// 1.013 over 36 points, Alltoall 256 KiB 1.20 the worst.
func NewWaiter(spinFor, sleepFor time.Duration, crowded bool) Waiter {
	w := Waiter{spinFor: spinFor, sleepFor: sleepFor, burst: burstMax, most: burstMax}
	if crowded {
		w.burst, w.most = burstMin, burstCrowded
	}
	return w
}

// SetSpin sets how long the waiter polls and yields before it first
// sleeps.
func (w *Waiter) SetSpin(spinFor time.Duration) { w.spinFor = spinFor }

// SetPark makes the waiter park with park, which returns when the bell
// knocks (Bell.Knock) or after d, in place of sleeping on the bell's
// futex. A futex sleep is a system call, and a goroutine in a system call
// keeps its processor until the runtime's monitor takes it back, 20 µs
// to 20 ms later: at GOMAXPROCS=1 an idle link's reader that went to
// sleep held back the rank's collective for 20 ms (an execution trace of
// gocoll bench --objects showed it, in 4 of 6 sweeps). A goroutine that
// parks gives its processor up at once.
func (w *Waiter) SetPark(park func(d time.Duration)) { w.park = park }

// A Yield says to whom a waiter gives the processor between bursts of
// polls, and how it sleeps: a set of the flags below.
type Yield uint8

const (
	// ToProcess yields with sched_yield, to another process: the peer,
	// which needs a core more than the Go scheduler needs waking.
	ToProcess Yield = 1 << iota
	// ToGoroutines yields with runtime.Gosched, to the goroutines of
	// this process: one of them advances idx, or must run before the
	// peer can (a link's reader hands what it read to the caller, which
	// answers).
	ToGoroutines
	// Beside says that the wait runs beside work of this process's own
	// (an AllreduceAsync beside the computation it overlaps): the waiter
	// yields to goroutines as well and sleeps on a timer rather than on
	// the futex, since a waiter that polls or sleeps in a system call
	// keeps that work off the processor at GOMAXPROCS=1 until the
	// runtime's monitor preempts it, 10 to 20 ms later.
	Beside
)

// timerSleepMin is the first timed sleep of a Beside waiter; each next
// one is twice as long, up to the waiter's sleepFor. Nothing wakes a
// timed sleep early, so short ones at first keep a wait that ends soon
// from ending late.
const timerSleepMin = 50 * time.Microsecond

// Wait waits until idx.Load()-base >= need and returns the value of idx
// that satisfied it. b is the bell that whoever advances idx rings.
// yield says how the waiter yields (see Yield).
//
// stop, called now and then and before every sleep, reports why the wait
// must end other than its condition: the counter is checked once more
// after it reports an error, since a peer stores its last counter value
// before it goes, and if the condition holds the wait succeeds. Otherwise
// Wait returns stop's error and the counter's value as last seen.
func (w *Waiter) Wait(idx *atomic.Uint64, base, need uint64, b Bell, yield Yield, stop func() error) (uint64, error) {
	var start time.Time
	polls := 0 // since the last yield
	nap := timerSleepMin
	pause := yield&(ToGoroutines|Beside) == 0
	for i := 1; ; i++ {
		if v := idx.Load(); v-base >= need {
			return v, nil
		}
		// Polls back to back made small calls slower: 8 B Bcasts of two
		// ranks took 0.64 µs at the median and 0.54 with a pause between
		// polls, Allreduces 0.77 and 0.68 (a Zen 5 VM, eight alternating
		// runs, 2026-11-29); 64 KiB calls did not move. A PAUSE took 19
		// ns there, so stop's checks, every checkEvery polls, come about
		// a microsecond apart, and a short wait makes none. A waiter that
		// yields to goroutines does not pause: its bursts between yields
		// are counted in polls, and a goroutine of its process waits out
		// a burst (1 MiB ping-pongs over a link, whose reader and caller
		// share the processor at GOMAXPROCS=1, took 170 µs a round trip
		// with the pause and 120 without).
		if pause {
			spinPause()
		}
		if i%checkEvery == 0 {
			if err := stop(); err != nil {
				v := idx.Load()
				if v-base >= need {
					return v, nil
				}
				return v, err
			}
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) >= w.spinFor {
				if yield&Beside != 0 && w.park == nil {
					time.Sleep(nap)
					nap = min(2*nap, w.sleepFor)
				} else {
					w.sleep(idx, base, need, b, stop)
				}
				continue
			}
		}
		if polls++; polls < w.burst {
			continue
		}
		polls = 0
		t := time.Now()
		if yield&(ToGoroutines|Beside) != 0 {
			runtime.Gosched()
		}
		if yield&ToProcess != 0 {
			yieldCPU()
		}
		ranOther := time.Since(t) > switched
		v := idx.Load()
		done := v-base >= need
		w.adapt(ranOther, done)
		if done {
			return v, nil
		}
	}
}

// adapt sets how many polls pass between yields from what the last yield
// showed: whether it ran another thread, and whether the wait was over
// after it (see Waiter).
func (w *Waiter) adapt(ranOther, done bool) {
	switch {
	case ranOther && done:
		w.burst = max(w.burst/2, burstMin)
	case !ranOther:
		w.burst = min(w.burst*2, w.most)
	}
}

// sleep sleeps on b for sleepFor at most, unless the condition holds or
// stop reports something once the waiter has announced itself: a ring
// after the announcement bumps Seq, which makes the sleep return at once,
// or knocks, which a parking waiter's park returns for.
func (w *Waiter) sleep(idx *atomic.Uint64, base, need uint64, b Bell, stop func() error) {
	if b.Sleeping != nil {
		b.Sleeping.Store(1)
	}
	b.Sleepers.Add(1)
	seq := b.Seq.Load()
	if idx.Load()-base < need && stop() == nil {
		if w.park != nil {
			w.park(w.sleepFor)
		} else {
			Wait(b.Seq, seq, w.sleepFor, &w.ts)
		}
	}
	b.Sleepers.Add(^uint32(0))
	if b.Sleeping != nil {
		b.Sleeping.Store(0)
	}
}
