package core

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/wire"
)

// TestSinglePolicy: which operations may copy once under each setting,
// on a host that is crowded and on one that is not: with auto on a
// crowded host only Gathers, Scatters and Alltoalls (of 1 MiB, here;
// see TestCrowdedSingleMins).
func TestSinglePolicy(t *testing.T) {
	kinds := []wire.Kind{wire.KindAllreduce, wire.KindBcast, wire.KindGather, wire.KindScatter, wire.KindAllgather, wire.KindAllgatherv, wire.KindAlltoall}
	tests := []struct {
		mode    string
		crowded bool
		may     []wire.Kind
	}{
		{SingleCopyAuto, false, kinds},
		{SingleCopyAuto, true, []wire.Kind{wire.KindGather, wire.KindScatter, wire.KindAlltoall}},
		{SingleCopyCMA, false, kinds},
		{SingleCopyCMA, true, kinds},
		{SingleCopyNone, false, nil},
		{SingleCopyNone, true, nil},
	}
	for _, tt := range tests {
		// Only a crowded host's automatic policy needs the first reach,
		// which takes a process a few milliseconds to measure.
		reach := func() time.Duration {
			if !tt.crowded || tt.mode != SingleCopyAuto {
				t.Errorf("%s, crowded=%v: the first reach measured", tt.mode, tt.crowded)
			}
			return 0
		}
		s := &Segment{policy: singlePolicy(tt.mode, tt.crowded, reach)}
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%s/crowded=%v/%s", tt.mode, tt.crowded, kind), func(t *testing.T) {
				require.Equal(t, slices.Contains(tt.may, kind), s.maySingle(kind, 1<<20))
			})
		}
	}
}

// TestCrowdedSingleMins: on a crowded host, auto lets a Gather or a
// Scatter copy once from crowdedRootedSingleMin bytes only, or from
// shadowedRootedSingleMin where a single copy's first reach of a page
// costs more than a later one, and an Alltoall from
// crowdedAlltoallSingleMin, or shadowedAlltoallSingleMin there; cma lets
// them at any size.
func TestCrowdedSingleMins(t *testing.T) {
	tests := []struct {
		name        string
		mode        string
		reach       time.Duration
		rootedMin   int
		alltoallMin int
		below       bool // whether a call smaller than its kind's minimum may
	}{
		{"auto", SingleCopyAuto, 0, crowdedRootedSingleMin, crowdedAlltoallSingleMin, false},
		{"auto/shadowed", SingleCopyAuto, 8 * time.Microsecond, shadowedRootedSingleMin, shadowedAlltoallSingleMin, false},
		{"cma", SingleCopyCMA, 0, crowdedRootedSingleMin, crowdedAlltoallSingleMin, true},
		{"cma/shadowed", SingleCopyCMA, 8 * time.Microsecond, shadowedRootedSingleMin, shadowedAlltoallSingleMin, true},
	}
	for _, tt := range tests {
		s := &Segment{policy: singlePolicy(tt.mode, true, func() time.Duration { return tt.reach })}
		mins := []struct {
			kind wire.Kind
			min  int
		}{
			{wire.KindGather, tt.rootedMin},
			{wire.KindScatter, tt.rootedMin},
			{wire.KindAlltoall, tt.alltoallMin},
		}
		for _, m := range mins {
			t.Run(tt.name+"/"+m.kind.String(), func(t *testing.T) {
				require.Equal(t, tt.below, s.maySingle(m.kind, m.min-1))
				require.True(t, s.maySingle(m.kind, m.min))
			})
		}
	}
}

// TestAllreduceMayCopyOnceAtEverySize: on a host with a CPU for each
// rank, an Allreduce may copy once at every size, by choice as when the
// setting says always (until 2026-11-30 only up to 4 MiB by choice); on
// a crowded host only where the setting says always.
func TestAllreduceMayCopyOnceAtEverySize(t *testing.T) {
	tests := []struct {
		mode    string
		crowded bool
		may     bool
	}{
		{SingleCopyAuto, false, true},
		{SingleCopyCMA, false, true},
		{SingleCopyAuto, true, false},
		{SingleCopyCMA, true, true},
		{SingleCopyNone, false, false},
	}
	for _, tt := range tests {
		s := &Segment{policy: singlePolicy(tt.mode, tt.crowded, func() time.Duration { return 0 })}
		t.Run(fmt.Sprintf("%s/crowded=%t", tt.mode, tt.crowded), func(t *testing.T) {
			for _, bytes := range []int{64 << 10, 4 << 20, 4<<20 + 4, 64 << 20, 1 << 30} {
				require.Equal(t, tt.may, s.maySingle(wire.KindAllreduce, bytes), "%d bytes", bytes)
			}
		})
	}
}

// TestSingleFamily: Allreduce, Reduce and ReduceScatter, whose ranks
// combine what they read, are one family and do not borrow their
// single-copy choice from the kinds that only move data, nor they from
// them; those kinds are another.
func TestSingleFamily(t *testing.T) {
	tests := []struct {
		kind   wire.Kind
		family int
	}{
		{wire.KindAllreduce, familyCombines},
		{wire.KindReduce, familyCombines},
		{wire.KindReduceScatter, familyCombines},
		{wire.KindBcast, familyMoves},
		{wire.KindGather, familyMoves},
		{wire.KindScatter, familyMoves},
		{wire.KindAllgather, familyMoves},
		{wire.KindAllgatherv, familyMoves},
		{wire.KindAlltoall, familyMoves},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String(), func(t *testing.T) {
			require.Equal(t, tt.family, singleFamily(tt.kind))
		})
	}
	require.NotEqual(t, familyMoves, familyCombines)
}
