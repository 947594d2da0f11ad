package shmem

import "testing"

// costs are made-up operation times of the two ways, in nanoseconds per
// KiB: a way's steady cost, and what its first coldOps operations after
// the other way's cost (nil: as much as the steady ones).
type costs struct {
	slots, single         float64
	slotsCold, singleCold []float64
}

// drive makes ops operations of the given kind and bytes with s, each
// costing what k says of the operation's way and its place since the
// way changed, learning from the timed ones as core does, and returns
// how many copied once and how many through the segment were timed.
func drive(t *testing.T, s *SingleCopy, kind, bytes, ops int, k costs) (single, timedSlots int) {
	t.Helper()
	last, since := false, 0
	for op := range ops {
		c := s.Choose(kind, bytes)
		if op == 0 || c.Single != last {
			since = 0
		}
		last = c.Single
		x, cold := k.slots, k.slotsCold
		if c.Single {
			x, cold = k.single, k.singleCold
			single++
			if !c.Timed {
				t.Fatalf("operation %d: a single copy that is not timed", op)
			}
		} else if c.Timed {
			timedSlots++
		}
		if since < len(cold) {
			x = cold[since]
		}
		since++
		if c.Timed {
			s.Learn(kind, bytes, c, int64(x*float64(bytes)/1024))
		}
	}
	return single, timedSlots
}

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
				single, timed := drive(t, &s, kind, bytes, ph.ops, costs{slots: ph.slots, single: ph.single})
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
// an operation at a time copied once nearly always.
func TestSingleCopyLearnsWarmWays(t *testing.T) {
	const kind, bytes = 5, 1 << 20
	gather := costs{slots: 30, single: 51, slotsCold: []float64{92, 70}, singleCold: []float64{65, 91}}
	for _, tc := range []struct {
		name string
		k    costs
		want func(single int) bool
	}{
		{"through the slots", gather, func(single int) bool { return single < 30 }},
		{"once, the costs the other way round", costs{slots: 51, single: 30, slotsCold: []float64{65, 91}, singleCold: []float64{92, 70}},
			func(single int) bool { return single > 570 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s SingleCopy
			single, _ := drive(t, &s, kind, bytes, 600, tc.k)
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
	single, fast := 0, false
	for op := range 600 {
		c := s.Choose(kind, bytes)
		cost := 150.0
		if c.Single {
			fast = !fast
			cost = 300
			if fast {
				cost = 80
			}
			if op >= 300 {
				single++
			}
		}
		if c.Timed {
			s.Learn(kind, bytes, c, int64(cost*bytes/1024))
		}
	}
	if single > 12 {
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
	single := 0
	for op := range 300 {
		c := s.Choose(kind, bytes)
		cost := 170.0
		if c.Single {
			cost = 85
		}
		if op < slow {
			cost = 1500
		} else if c.Single && op >= 150 {
			single++
		}
		if c.Timed {
			s.Learn(kind, bytes, c, int64(cost*bytes/1024))
		}
	}
	if single < 140 {
		t.Errorf("copied once %d times in the last 150 operations, want nearly all", single)
	}
}
