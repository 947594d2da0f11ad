package core

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
// ranks, whose buffers a call's single copies may all reach, and the
// links' that once. Where single copies are always (cma) or never (none)
// taken, nothing is chosen and the host is not asked.
func TestFirstReachIsPassedOn(t *testing.T) {
	const perPage, ranks = 3 * time.Microsecond, 2
	tests := []struct {
		mode    string
		links   int           // times linkOptions asks for the first reach
		segment time.Duration // what each rank's segment chooser is told
	}{
		{SingleCopyAuto, 1, ranks * perPage},
		{SingleCopyCMA, 0, 0},
		{SingleCopyNone, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			var asked atomic.Int32 // the ranks of a local job start at once
			old := firstReach
			firstReach = func() time.Duration { asked.Add(1); return perPage }
			t.Cleanup(func() { firstReach = old })

			linkOptions(tt.mode)
			assert.Equal(t, tt.links, int(asked.Load()), "first reaches asked for by the links' options")

			cs, err := NewLocal(ranks, WithTransport("shm"), WithSingleCopy(tt.mode))
			require.NoError(t, err)
			t.Cleanup(func() {
				for _, c := range cs {
					c.Close()
				}
			})
			for r, c := range cs {
				s := c.Segment()
				require.NotNil(t, s, "rank %d has no segment", r)
				assert.Equal(t, tt.segment, s.single.FirstReach(), "rank %d's segment chooser", r)
			}
		})
	}
}
