package shmem

import (
	"fmt"
	"testing"
)

// TestCopier drives a Copier with made-up copy times, in nanoseconds per
// KiB, and counts how often it goes around the caches: it tries each way
// twice, keeps through the caches unless around is at least aroundGain
// times faster, tries the other way one operation in exploreEvery,
// follows costs that change, and lets neither a slow first use nor one
// slow copy decide.
func TestCopier(t *testing.T) {
	const kind, bytes = 3, 64 << 10
	type phase struct {
		ops            int
		cached, around float64
		wantAround     int // of the phase's ops
	}
	tests := []struct {
		name   string
		phases []phase
		// spike, when not zero, is a cached copy this many times slower
		// than the rest, at the first op of the second phase.
		spike float64
	}{
		{"through the caches when they are not slower", []phase{{4, 40, 50, 2}, {320, 40, 50, 10}}, 0},
		{"through the caches when around gains less than twice", []phase{{4, 60, 35, 2}, {320, 60, 35, 10}}, 0},
		// A 16 KiB Bcast's root in the host's fast state (2026-11-28):
		// around, its readers' copies out of memory cost more than the
		// writer gains.
		{"through the caches when around gains 2.6 times", []phase{{4, 26, 10, 2}, {320, 26, 10, 10}}, 0},
		{"around when the caches are slow", []phase{{4, 250, 50, 2}, {320, 250, 50, 310}}, 0},
		{"following the host into the slow state", []phase{{4, 40, 50, 2}, {320, 40, 50, 10}, {320, 250, 50, 300}}, 0},
		{"and back", []phase{{4, 250, 50, 2}, {320, 250, 50, 310}, {320, 40, 50, 36}}, 0},
		{"not for one slow copy", []phase{{4, 40, 50, 2}, {320, 40, 50, 10}}, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Copier
			for i, ph := range tc.phases {
				around := 0
				for op := range ph.ops {
					a := c.Choose(kind, bytes)
					cost := ph.cached
					if a {
						around++
						cost = ph.around
					} else if tc.spike > 0 && i == 1 && op == 0 {
						cost *= tc.spike
					}
					c.Learn(kind, bytes, a, 1024, int64(cost))
				}
				if d := around - ph.wantAround; d < -12 || d > 12 {
					t.Errorf("phase %d: around %d times of %d, want about %d", i, around, ph.ops, ph.wantAround)
				}
			}
		})
	}
	// Kinds and size classes are learned apart.
	var c Copier
	for range 8 {
		for _, k := range []struct {
			kind, bytes int
			cached      int64
		}{{1, 32 << 10, 300}, {1, 1 << 20, 40}, {2, 32 << 10, 40}} {
			a := c.Choose(k.kind, k.bytes)
			cost := k.cached
			if a {
				cost = 50
			}
			c.Learn(k.kind, k.bytes, a, 1024, cost)
		}
	}
	for _, k := range []struct {
		kind, bytes int
		want        bool
	}{{1, 32 << 10, true}, {1, 1 << 20, false}, {2, 32 << 10, false}} {
		if got := c.Choose(k.kind, k.bytes); got != k.want {
			t.Errorf("%s: around %v, want %v", fmt.Sprint(k.kind, "/", k.bytes), got, k.want)
		}
	}
}

// TestCopierMargin: around the caches must copy aroundGain times faster
// to be taken in an operation below aroundLargeMin bytes, and only
// aroundGainLarge times from there on.
func TestCopierMargin(t *testing.T) {
	const kind = 2
	for _, tc := range []struct {
		name           string
		bytes          int
		cached, around int64
		want           bool
	}{
		{"small, around 1.8 times faster", 64 << 10, 90, 50, false},
		{"small, around 3.6 times faster", 64 << 10, 180, 50, true},
		{"large, around 1.8 times faster", aroundLargeMin, 90, 50, true},
		{"large, around 1.1 times faster", 16 << 20, 55, 50, false},
		{"large, around slower", 16 << 20, 40, 50, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Copier
			around := 0
			const ops = 10 * exploreEvery
			for range ops {
				a := c.Choose(kind, tc.bytes)
				cost := tc.cached
				if a {
					around++
					cost = tc.around
				}
				c.Learn(kind, tc.bytes, a, 1024, cost)
			}
			if got := around > ops/2; got != tc.want {
				t.Errorf("around the caches %d times of %d, want mostly around: %v", around, ops, tc.want)
			}
		})
	}
}

// TestCopierClearLoserIsNotRetriedEarly: once each way has been timed
// twice, a way that loses by twice the margin it needs (around the
// caches, which must copy aroundGain times faster to be taken) is tried
// again only one copy in exploreEvery, not one in four of the first
// exploreEarly too, so that a short run pays little for learning; ways
// closer than that still are.
func TestCopierClearLoserIsNotRetriedEarly(t *testing.T) {
	const kind, bytes = 1, 64 << 10
	for _, tc := range []struct {
		name           string
		cached, around float64
		want           int // copies around the caches in the first exploreEvery
	}{
		{"as fast as through the caches", 100, 100, 3},
		{"2.3 times as fast", 100, 44, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Copier
			around := 0
			for range exploreEvery {
				a := c.Choose(kind, bytes)
				cost := tc.cached
				if a {
					around++
					cost = tc.around
				}
				c.Learn(kind, bytes, a, 1024, int64(cost))
			}
			if around != tc.want {
				t.Errorf("copied around the caches %d times in %d copies, want %d", around, exploreEvery, tc.want)
			}
		})
	}
}
