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
// crowded host only Gathers, Scatters, Alltoalls, Reduces and Bcasts (of
// 1 MiB, here; see TestCrowdedSingleSizes).
func TestSinglePolicy(t *testing.T) {
	kinds := []wire.Kind{wire.KindAllreduce, wire.KindReduce, wire.KindReduceScatter, wire.KindBcast, wire.KindGather, wire.KindScatter, wire.KindAllgather, wire.KindAllgatherv, wire.KindAlltoall}
	tests := []struct {
		mode    string
		crowded bool
		may     []wire.Kind
	}{
		{SingleCopyAuto, false, kinds},
		{SingleCopyAuto, true, []wire.Kind{wire.KindReduce, wire.KindBcast, wire.KindGather, wire.KindScatter, wire.KindAlltoall}},
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

// TestCrowdedSingleSizes: on a crowded host, auto lets a Gather or a
// Scatter copy once from crowdedRootedSingleMin bytes, an Alltoall from
// crowdedAlltoallSingleMin, a Reduce from crowdedReduceSingleMin and a
// Bcast from crowdedBcastSingleMin, or packedBcastSingleMin where there
// are more than two ranks to a CPU, to crowdedBcastSingleMax; where a
// single copy's first reach of a page costs more than a later one,
// Gathers and Scatters from shadowedRootedSingleMin, Alltoalls from
// shadowedAlltoallSingleMin, and Reduces and Bcasts never. cma lets them
// all at any size.
func TestCrowdedSingleSizes(t *testing.T) {
	const never = -1
	const shadowedReach = 8 * time.Microsecond
	tests := []struct {
		kind wire.Kind
		// The smallest that may copy once by choice with two ranks to a
		// CPU, with four, and where the first reach costs (or never),
		// and the largest (0: no largest).
		least, packedLeast, shadowedLeast, most int
	}{
		{wire.KindGather, crowdedRootedSingleMin, crowdedRootedSingleMin, shadowedRootedSingleMin, 0},
		{wire.KindScatter, crowdedRootedSingleMin, crowdedRootedSingleMin, shadowedRootedSingleMin, 0},
		{wire.KindAlltoall, crowdedAlltoallSingleMin, crowdedAlltoallSingleMin, shadowedAlltoallSingleMin, 0},
		{wire.KindReduce, crowdedReduceSingleMin, crowdedReduceSingleMin, never, 0},
		{wire.KindBcast, crowdedBcastSingleMin, packedBcastSingleMin, never, crowdedBcastSingleMax},
		{wire.KindAllreduce, never, never, never, 0},
	}
	hosts := []struct {
		name     string
		crowding int
		reach    time.Duration
	}{
		{"two ranks a CPU", 2, 0},
		{"four ranks a CPU", 4, 0},
		{"shadowed", 2, shadowedReach},
	}
	for _, tt := range tests {
		for i, host := range hosts {
			least := [...]int{tt.least, tt.packedLeast, tt.shadowedLeast}[i]
			t.Run(fmt.Sprintf("%s/%s", tt.kind, host.name), func(t *testing.T) {
				auto := &Segment{policy: singlePolicy(SingleCopyAuto, true, func() time.Duration { return host.reach }), crowding: host.crowding}
				cma := &Segment{policy: singlePolicy(SingleCopyCMA, true, func() time.Duration { return host.reach }), crowding: host.crowding}
				switch {
				case least == never:
					require.False(t, auto.maySingle(tt.kind, 1<<20), "auto, 1 MiB")
					require.False(t, auto.maySingle(tt.kind, 64<<20), "auto, 64 MiB")
				case tt.most > 0:
					require.True(t, auto.maySingle(tt.kind, tt.most), "auto, at the maximum")
					require.False(t, auto.maySingle(tt.kind, tt.most+1), "auto, just above")
					fallthrough
				default:
					require.False(t, auto.maySingle(tt.kind, least-1), "auto, just below")
					require.True(t, auto.maySingle(tt.kind, least), "auto, at the minimum")
				}
				if tt.most == 0 && least != never {
					require.True(t, auto.maySingle(tt.kind, 1<<30), "auto, 1 GiB")
				}
				require.True(t, cma.maySingle(tt.kind, 1), "cma, 1 byte")
				require.True(t, cma.maySingle(tt.kind, 1<<30), "cma, 1 GiB")
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
// them; those kinds are another, but for a crowded host's Bcasts, which
// are a third.
func TestSingleFamily(t *testing.T) {
	tests := []struct {
		kind             wire.Kind
		family, crowdedF int
	}{
		{wire.KindAllreduce, familyCombines, familyCombines},
		{wire.KindReduce, familyCombines, familyCombines},
		{wire.KindReduceScatter, familyCombines, familyCombines},
		{wire.KindBcast, familyMoves, familyCrowdedBcast},
		{wire.KindGather, familyMoves, familyMoves},
		{wire.KindScatter, familyMoves, familyMoves},
		{wire.KindAllgather, familyMoves, familyMoves},
		{wire.KindAllgatherv, familyMoves, familyMoves},
		{wire.KindAlltoall, familyMoves, familyMoves},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String(), func(t *testing.T) {
			require.Equal(t, tt.family, singleFamily(tt.kind, false), "a host with a CPU for each rank")
			require.Equal(t, tt.crowdedF, singleFamily(tt.kind, true), "a crowded host")
		})
	}
	families := []int{familyMoves, familyCombines, familyCrowdedBcast}
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(families))), len(families), "families apart")
}
