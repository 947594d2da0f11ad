package core

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/hugepage"
	"github.com/gocoll/gocoll/internal/wire"
)

// TestLinkOptions: shared-memory links may copy large payloads once
// (CMA) unless single copies are off: always with cma, where that has
// been faster with auto.
func TestLinkOptions(t *testing.T) {
	for _, tc := range []struct {
		singleCopy string
		cma        bool
	}{
		{SingleCopyAuto, true},
		{SingleCopyCMA, true},
		{SingleCopyNone, false},
	} {
		t.Run(tc.singleCopy, func(t *testing.T) {
			assert.Equal(t, tc.cma, len(linkOptions(tc.singleCopy)) == 1)
		})
	}
}

// TestFirstReachIsPassedOn: where a single copy's way is chosen by
// timing (auto), the choosers are told what its first reach of a page
// costs on this host: each rank's in its segment that times the segment's
// ranks, whose buffers a call's single copies may all reach, the first
// reach of huge pages where the ranks put their buffers there (unless
// the host gives none), and the links' that of small pages, once. Where
// single copies are always (cma) or never (none) taken, nothing is
// chosen and the host is not asked.
func TestFirstReachIsPassedOn(t *testing.T) {
	const perPage, perHugePage, ranks = 3 * time.Microsecond, 50 * time.Nanosecond, 2
	onHuge := ranks * perPage
	if hugepage.Available() {
		onHuge = ranks * perHugePage
	}
	tests := []struct {
		mode    string
		huge    bool
		links   int           // times linkOptions asks for the first reach
		segment time.Duration // what each rank's segment chooser is told
	}{
		{SingleCopyAuto, true, 1, onHuge},
		{SingleCopyAuto, false, 1, ranks * perPage},
		{SingleCopyCMA, true, 0, 0},
		{SingleCopyNone, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/huge=%v", tt.mode, tt.huge), func(t *testing.T) {
			var asked atomic.Int32 // the ranks of a local job start at once
			oldSmall, oldHuge := firstReach, firstReachHuge
			firstReach = func() time.Duration { asked.Add(1); return perPage }
			firstReachHuge = func() time.Duration { return perHugePage }
			t.Cleanup(func() { firstReach, firstReachHuge = oldSmall, oldHuge })

			linkOptions(tt.mode)
			assert.Equal(t, tt.links, int(asked.Load()), "first reaches asked for by the links' options")

			for r, c := range pollJob(t, "shm", ranks, WithSingleCopy(tt.mode), WithHugePages(tt.huge)) {
				s := c.Segment()
				require.NotNil(t, s, "rank %d has no segment", r)
				assert.Equal(t, tt.segment, s.single.FirstReach(), "rank %d's segment chooser", r)
			}
		})
	}
}

// TestCrowdedPolicyFollowsFirstReach: where a host's ranks outnumber its
// CPUs, rank 0 asks what a single copy's first reach of a page costs when
// it makes the segment, and every rank takes the policy it recorded:
// singleCrowded where that costs nothing more than a later reach,
// singleCrowdedShadowed where it does (crowdedSingleSizes gives each its
// minimums); and every rank takes how crowded rank 0 found the host.
func TestCrowdedPolicyFollowsFirstReach(t *testing.T) {
	crowded := runtime.NumCPU() + 1
	crowding := (crowded + runtime.NumCPU() - 1) / runtime.NumCPU()
	tests := []struct {
		name  string
		reach time.Duration
		want  uint64
	}{
		{"alike", 0, singleCrowded},
		{"shadowed", 3 * time.Microsecond, singleCrowdedShadowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := firstReach
			firstReach = func() time.Duration { return tt.reach }
			t.Cleanup(func() { firstReach = old })

			for r, c := range pollJob(t, "shm", crowded) {
				s := c.Segment()
				require.NotNil(t, s, "rank %d has no segment", r)
				require.True(t, s.Crowded(), "rank %d's segment", r)
				assert.Equal(t, tt.want, s.policy, "rank %d's policy", r)
				assert.Equal(t, crowding, s.crowding, "rank %d's ranks to a CPU", r)
			}
		})
	}
}

// TestSegmentChooserLendsAllreducesLosses: a segment's chooser takes an
// Allreduce's clear loss of the single copy at one size to its larger
// sizes, which then go through the slots from their first operation and
// try copying once only at their first run (the 32nd); a Bcast's, whose
// family wins and loses by size, is not lent, and its new size times
// both ways first (the 5th operation copies once).
func TestSegmentChooserLendsAllreducesLosses(t *testing.T) {
	s := segmentsOf(t, 2)[0]
	s.single.SetFirstReach(0) // no rent before the first single copy, on any host
	// drive makes ops operations of kind and bytes, copying once at
	// twice the slots' time, and returns the first that copied once.
	drive := func(kind wire.Kind, bytes, ops int) int {
		first := -1
		for op := range ops {
			c := s.single.Choose(int(kind), singleFamily(kind, false), bytes)
			if c.Single && first < 0 {
				first = op
			}
			nanos := int64(bytes / 10)
			if c.Single {
				nanos *= 2
			}
			if c.Timed {
				s.single.Learn(int(kind), bytes, c, nanos)
			}
		}
		return first
	}
	for _, tt := range []struct {
		kind      wire.Kind
		wantFirst int
	}{
		{wire.KindAllreduce, 31},
		{wire.KindBcast, 4},
	} {
		t.Run(tt.kind.String(), func(t *testing.T) {
			require.Equal(t, 4, drive(tt.kind, 1<<20, 300), "the first size times both ways")
			require.Equal(t, tt.wantFirst, drive(tt.kind, 4<<20, 86), "the first single copy of the next size")
		})
	}
}
