package shmem

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// costs are made-up operation times of the two ways, in nanoseconds per
// KiB: a way's steady cost, and what its first coldOps operations after
// the other way's cost (nil: as much as the steady ones).
type costs struct {
	slots, single         float64
	slotsCold, singleCold []float64
}

// at is what an operation costs that took the way single says, since
// places after the way changed, whatever its number.
func (k costs) at(_ int, single bool, since int) float64 {
	x, cold := k.slots, k.slotsCold
	if single {
		x, cold = k.single, k.singleCold
	}
	if since < len(cold) {
		return cold[since]
	}
	return x
}

// drive makes ops operations of the given kind and bytes with s, each
// costing what cost says of it (its number, its way, and its place since
// the way changed), learns from the timed ones as core does, and returns
// the choices.
func drive(t *testing.T, s *SingleCopy, kind, bytes, ops int, cost func(op int, single bool, since int) float64) []Choice {
	t.Helper()
	return driveFamily(t, s, kind, 0, bytes, ops, cost)
}

// driveFamily is drive for a kind of the given family.
func driveFamily(t *testing.T, s *SingleCopy, kind, family, bytes, ops int, cost func(op int, single bool, since int) float64) []Choice {
	t.Helper()
	choices := make([]Choice, ops)
	since := 0
	for op := range choices {
		c := s.Choose(kind, family, bytes)
		if op == 0 || c.Single != choices[op-1].Single {
			since = 0
		}
		if c.Single && !c.Timed {
			t.Fatalf("operation %d: a single copy that is not timed", op)
		}
		x := cost(op, c.Single, since)
		since++
		if c.Timed {
			s.Learn(kind, bytes, c, int64(x*float64(bytes)/1024))
		}
		choices[op] = c
	}
	return choices
}

// count is how many of choices, from the one numbered from on, want says
// of.
func count(choices []Choice, from int, want func(Choice) bool) int {
	n := 0
	for _, c := range choices[from:] {
		if want(c) {
			n++
		}
	}
	return n
}

func copiedOnce(c Choice) bool        { return c.Single }
func timedThroughSlots(c Choice) bool { return !c.Single && c.Timed }

// TestSingleCopy drives a SingleCopy with made-up operation times: it
// copies once while that is faster, follows the host when that changes,
// and times the operations through the segment only now and then, once
// each way has been timed.
func TestSingleCopy(t *testing.T) {
	const kind, bytes = 3, 256 << 10
	type phase struct {
		ops           int
		slots, single float64
		wantSingle    int // of the phase's ops
		wantTimed     int // of its ops through the segment
	}
	tests := []struct {
		name   string
		phases []phase
	}{
		// Runs of the other way at 32, 64, 128 and 256, four
		// operations each, then one in runEvery.
		{"once when that is faster", []phase{{300, 120, 80, 276, 17}}},
		{"through the segment when that is faster", []phase{{300, 80, 120, 20, 77}}},
		// The way taken moves its average an eighth towards each
		// sample, one operation in four through the segment is timed,
		// and the other way is tried one run in runEvery operations:
		// the other way takes over at the first run after the change,
		// the 512th operation and the 1024th.
		{"following the host", []phase{{400, 80, 120, 24, 100}, {400, 120, 80, 288, 30}, {400, 80, 120, 232, 48}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s SingleCopy
			for i, ph := range tc.phases {
				choices := drive(t, &s, kind, bytes, ph.ops, costs{slots: ph.slots, single: ph.single}.at)
				single, timed := count(choices, 0, copiedOnce), count(choices, 0, timedThroughSlots)
				if d := single - ph.wantSingle; d < -12 || d > 12 {
					t.Errorf("phase %d: copied once %d times of %d, want about %d", i, single, ph.ops, ph.wantSingle)
				}
				if d := timed - ph.wantTimed; d < -12 || d > 12 {
					t.Errorf("phase %d: timed %d operations through the segment, want about %d", i, timed, ph.wantTimed)
				}
			}
		})
	}
}

// TestSingleCopyLearnsWarmWays: a way's first operations after the
// other's run cold, and a cold single copy can cost less than cold slots
// though the single copy is the slower way. Here the figures of two
// ranks' 1 MiB Gathers (2026-11-28): through the slots 92 and 70 ns/KiB
// cold, then 30; copying once 65 and 91, then 51. The chooser must learn
// from warm operations and go through the slots; one that tried each way
// an operation at a time copied once nearly always. Runs alone do not
// suffice where both cold operations mislead: slots that cost 300 and
// 200 cold against single copies' 40 and 45 would keep the chooser on
// the single copy unless it drops the cold ones' times.
func TestSingleCopyLearnsWarmWays(t *testing.T) {
	const kind, bytes = 5, 1 << 20
	gather := costs{slots: 30, single: 51, slotsCold: []float64{92, 70}, singleCold: []float64{65, 91}}
	for _, tc := range []struct {
		name string
		k    costs
		want func(single int) bool
	}{
		{"through the slots", gather, func(single int) bool { return single < 30 }},
		{"through the slots, colder still", costs{slots: 30, single: 51, slotsCold: []float64{300, 200}, singleCold: []float64{40, 45}},
			func(single int) bool { return single < 30 }},
		{"once, the costs the other way round", costs{slots: 51, single: 30, slotsCold: []float64{65, 91}, singleCold: []float64{92, 70}},
			func(single int) bool { return single > 570 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s SingleCopy
			single := count(drive(t, &s, kind, bytes, 600, tc.k.at), 0, copiedOnce)
			if !tc.want(single) {
				t.Errorf("copied once %d times in 600 operations", single)
			}
		})
	}
}

// TestSingleCopyFollowsTheMean: a way that is fast half the time and
// slow the other half is judged by its mean, which is what a caller pays:
// copies once at 80 and 300 ns/KiB in turn (190 on average) lose to the
// segment's steady 150, though half of them are faster.
func TestSingleCopyFollowsTheMean(t *testing.T) {
	const kind, bytes = 2, 128 << 10
	var s SingleCopy
	fast := false
	choices := drive(t, &s, kind, bytes, 600, func(_ int, single bool, _ int) float64 {
		if !single {
			return 150
		}
		if fast = !fast; fast {
			return 80
		}
		return 300
	})
	if single := count(choices, 300, copiedOnce); single > 12 {
		t.Errorf("copied once %d times in the last 300 operations, want about 8", single)
	}
}

// TestSingleCopyForgetsASlowStart: the first operations of a size can be
// slow both ways (a collection, pages faulted in: a sweep's first 64 KiB
// Bcasts after 64 MiB calls took 20-150 µs where they then took 5-11),
// and the way not taken is tried one run in runEvery operations, so its
// average could hold that start for hundreds of operations after the
// other way's had recovered: here, copies once at 85 ns/KiB against the
// segment's 170, after 40 operations at 1500 either way. Early runs (at
// 32, 64 and 128) find the single copy by the 70th.
func TestSingleCopyForgetsASlowStart(t *testing.T) {
	const kind, bytes, slow = 4, 64 << 10, 40
	var s SingleCopy
	choices := drive(t, &s, kind, bytes, 300, func(op int, single bool, since int) float64 {
		if op < slow {
			return 1500
		}
		return costs{slots: 170, single: 85}.at(op, single, since)
	})
	if single := count(choices, 150, copiedOnce); single < 140 {
		t.Errorf("copied once %d times in the last 150 operations, want nearly all", single)
	}
}

// TestSingleCopyIsNotTurnedByOneSlowCall: now and then a call takes ten
// times its usual time whichever way it goes (the runtime's monitor, an
// interrupt: about one 64 KiB call in a hundred took 40-60 µs on
// 2026-11-28's hosts, against 5-10). One such call of the way taken
// must not move its average past the other way's, where that is not
// much slower: the way not taken is tried again only at its next run, up
// to runEvery calls later, so the chooser would stay on the slower way
// until then. Here copies once at 100 ns/KiB against the segment's 125
// (two ranks' 64 KiB Bcasts, 2026-11-28), with single copies of ten
// times that at the 300th and the 700th call.
func TestSingleCopyIsNotTurnedByOneSlowCall(t *testing.T) {
	const kind, bytes = 4, 64 << 10
	var s SingleCopy
	choices := drive(t, &s, kind, bytes, 1000, func(op int, single bool, since int) float64 {
		if single && (op == 300 || op == 700) {
			return 1000
		}
		return costs{slots: 125, single: 100}.at(op, single, since)
	})
	// Of the 800 calls from the 200th, the runs through the segment at
	// 256, 512 and 768 take 12.
	if single := count(choices, 200, copiedOnce); single < 770 {
		t.Errorf("copied once %d times in the last 800 operations, want about 788", single)
	}
}

// TestSingleCopyIsNotTurnedByOneSlowEarlySample: a way's first two warm
// operations are all that is known of it when the chooser first
// compares the ways, and one of them can take several times the other:
// the second by chance (the slots of two ranks' 4 MiB Allreduces took
// 322 and then 1176 µs, 2026-11-30), or the first where first use of
// the memory outlasts the cold operations. Neither may decide. Here the
// slots cost 80 ns/KiB but for one warm sample of 300, against single
// copies at 150.
func TestSingleCopyIsNotTurnedByOneSlowEarlySample(t *testing.T) {
	const kind, bytes = 7, 4 << 20
	for _, slow := range []int{1, 2} {
		t.Run(fmt.Sprintf("warm sample %d", slow), func(t *testing.T) {
			var s SingleCopy
			slotsWarm := 0
			choices := drive(t, &s, kind, bytes, 31, func(op int, single bool, since int) float64 {
				if !single && since >= coldOps {
					if slotsWarm++; slotsWarm == slow {
						return 300
					}
				}
				return costs{slots: 80, single: 150}.at(op, single, since)
			})
			// Both ways timed by the 8th operation; then, until the run
			// at the 32nd, the slots.
			if single := count(choices, 8, copiedOnce); single > 0 {
				t.Errorf("copied once %d times of the 9th to the 31st operation, want none", single)
			}
		})
	}
}

// TestSingleCopyBorrowsFromItsFamily: a kind's first operations of a
// size class take the way that the other kinds of its family agree is
// faster there, until its first run of the other way (the 32nd
// operation), rather than timing the slower way first; a kind whose
// costs differ from its family's turns at that run.
func TestSingleCopyBorrowsFromItsFamily(t *testing.T) {
	const bytes = 16 << 20
	onceFaster := costs{slots: 120, single: 80}.at
	slotsFaster := costs{slots: 80, single: 120}.at
	type lender struct {
		kind, family, bytes int
		cost                func(int, bool, int) float64
	}
	tests := []struct {
		name    string
		lenders []lender
		cost    func(int, bool, int) float64
		// Of the new kind's first 31 operations, how many copy once,
		// and of the 260 from the 40th, where runs of the other way at
		// 64, 128 and 256 take 12.
		wantFirst int
		wantLater func(single int) bool
	}{
		{"the faster way, once", []lender{{1, 0, bytes, onceFaster}}, onceFaster, 31,
			func(single int) bool { return single >= 240 }},
		{"the faster way, through the slots", []lender{{1, 0, bytes, slotsFaster}}, slotsFaster, 0,
			func(single int) bool { return single < 25 }},
		// The first run times the slots, and the kind turns to them.
		{"a kind that differs turns at its first run", []lender{{1, 0, bytes, onceFaster}}, slotsFaster, 31,
			func(single int) bool { return single < 25 }},
		// Nothing to borrow: the new kind times the slots first, four
		// operations, then copies once.
		{"not from another family", []lender{{1, 1, bytes, onceFaster}}, onceFaster, 27,
			func(single int) bool { return single >= 240 }},
		{"not from another size class", []lender{{1, 0, bytes / 16, onceFaster}}, onceFaster, 27,
			func(single int) bool { return single >= 240 }},
		{"not from a family that disagrees", []lender{{1, 0, bytes, onceFaster}, {2, 0, bytes, slotsFaster}}, onceFaster, 27,
			func(single int) bool { return single >= 240 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s SingleCopy
			for _, l := range tc.lenders {
				driveFamily(t, &s, l.kind, l.family, l.bytes, 300, l.cost)
			}
			choices := driveFamily(t, &s, 9, 0, bytes, 300, tc.cost)
			if first := count(choices[:31], 0, copiedOnce); first != tc.wantFirst {
				t.Errorf("copied once %d times in the first 31 operations, want %d", first, tc.wantFirst)
			}
			if single := count(choices, 40, copiedOnce); !tc.wantLater(single) {
				t.Errorf("copied once %d times in the 260 operations from the 40th", single)
			}
		})
	}
}

// TestSingleCopyRentsBeforeItsFirstReach: where a single copy's first
// reach of a page costs more than a later one (SetFirstReach), a size
// class goes through the slots, timing them, until they have cost that
// much a KiB, and only then tries copying once; a class that borrows
// copying once from its family copies once at once. Without a cost of
// first reach, the first single copy is the fifth operation.
func TestSingleCopyRentsBeforeItsFirstReach(t *testing.T) {
	const bytes = 16 << 20
	onceFaster := costs{slots: 80, single: 40}.at
	tests := []struct {
		name    string
		perPage time.Duration // 4 KiB: 4 ns a page is 1 ns a KiB
		borrow  bool
		// The operation, numbered from 0, that first copies once (-1:
		// none of the 300).
		wantFirst int
	}{
		{"no cost of first reach", 0, false, 4},
		// 800 ns a KiB: ten warm operations through the slots at 80,
		// after the first two, which run cold.
		{"rent of ten operations", 3200 * time.Nanosecond, false, 12},
		{"a price that a rent rounds up to", 3000 * time.Nanosecond, false, 12},
		{"a borrowed way pays no rent", 3200 * time.Nanosecond, true, 0},
		// 2800 operations' rent: a short job never pays.
		{"more than the job", 896 * time.Microsecond, false, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s SingleCopy
			s.SetFirstReach(tc.perPage)
			if tc.borrow {
				driveFamily(t, &s, 1, 0, bytes, 300, onceFaster)
			}
			choices := driveFamily(t, &s, 9, 0, bytes, 300, onceFaster)
			first := slices.IndexFunc(choices, copiedOnce)
			if first != tc.wantFirst {
				t.Fatalf("first copied once at operation %d, want %d", first, tc.wantFirst)
			}
			// Then it copies once but for its runs of the slots, four
			// operations at the 32nd, 64th, 128th and 256th.
			if slots := count(choices, first+8, timedThroughSlots); first >= 0 && slots > 16 {
				t.Errorf("went through the slots %d times after the single copy won", slots)
			}
		})
	}
}

// TestSingleCopySkipsEarlyRunsOnceClear: the runs of the way not taken
// at the 32nd, 64th and 128th operation are for a slow start; where the
// way taken has won by wholeClear when both ways were first timed and
// again at the run at the 32nd, the runs at the 64th and 128th are
// skipped, and each costs four operations of a way that loses. The run
// at the 256th comes whatever the margin.
func TestSingleCopySkipsEarlyRunsOnceClear(t *testing.T) {
	const kind, bytes = 2, 4 << 20
	tests := []struct {
		name          string
		slots, single float64
		taken         bool // the way that wins: true for the single copy
		// Of the operations from the 9th to the 255th, how many take
		// the way not taken, four a run.
		wantOther int
	}{
		{"a clear loss of the single copy", 80, 160, false, 4},
		{"a clear win of the single copy", 160, 80, true, 4},
		{"a win that is not clear", 100, 130, false, 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s SingleCopy
			choices := drive(t, &s, kind, bytes, 300, costs{slots: tc.slots, single: tc.single}.at)
			other := func(c Choice) bool { return c.Single != tc.taken }
			if n := count(choices[:255], 8, other); n != tc.wantOther {
				t.Errorf("took the other way %d times from the 9th operation to the 255th, want %d", n, tc.wantOther)
			}
			if n := count(choices[255:259], 0, other); n != runOps {
				t.Errorf("took the other way %d times in the run at the 256th operation, want %d", n, runOps)
			}
		})
	}
}

// TestSingleCopyLendsAClearLossAcrossSizes: a kind of a family that lends
// across sizes starts a new size class through the segment where its
// nearest smaller class found copying once clearly slower, and tries
// copying once at its first run, the 32nd operation, instead of at its
// 5th to 8th. Two ranks' Allreduces on the Zen 3 VM copied once at 1.8-2
// times the slots' time at 1 MiB and 4 MiB alike (2026-11-30). Nothing
// else is lent: a win, a loss that is not clear, a loss of another
// family's kind or of a class too far down.
func TestSingleCopyLendsAClearLossAcrossSizes(t *testing.T) {
	const lending, bytes = 1, 4 << 20
	clearLoss := costs{slots: 80, single: 160}.at
	tests := []struct {
		name               string
		family, lenderSize int
		lender, cost       func(int, bool, int) float64
		wantFirst          int // the operation, from 0, that first copies once
		wantSingle         int // copies once in the class's first 86 operations
	}{
		{"a clear loss", lending, bytes / 2, clearLoss, clearLoss, 31, 4},
		{"from two classes down", lending, bytes / 4, clearLoss, clearLoss, 31, 4},
		{"a class that differs turns at its first run", lending, bytes / 4, clearLoss, costs{slots: 160, single: 80}.at, 31, 55},
		// Without a loan the class times both ways first (the 5th to the
		// 8th operation) and runs the single copy at the 32nd.
		{"not to a family that does not lend", lending + 1, bytes / 4, clearLoss, clearLoss, 4, 8},
		{"not a loss that is not clear", lending, bytes / 4, costs{slots: 100, single: 130}.at, clearLoss, 4, 8},
		{"not a win", lending, bytes / 4, costs{slots: 160, single: 80}.at, clearLoss, 4, 8},
		{"not from three classes down", lending, bytes / 8, clearLoss, clearLoss, 4, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s SingleCopy
			s.LendAcrossSizes(lending)
			driveFamily(t, &s, 2, tc.family, tc.lenderSize, 300, tc.lender)
			choices := driveFamily(t, &s, 2, tc.family, bytes, 86, tc.cost)
			if first := slices.IndexFunc(choices, copiedOnce); first != tc.wantFirst {
				t.Errorf("first copied once at operation %d, want %d", first, tc.wantFirst)
			}
			if single := count(choices, 0, copiedOnce); single != tc.wantSingle {
				t.Errorf("copied once %d times in 86 operations, want %d", single, tc.wantSingle)
			}
		})
	}
}
