package core

import (
	"fmt"
	"slices"
	"testing"

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
		s := &Segment{policy: singlePolicy(tt.mode, tt.crowded)}
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%s/crowded=%v/%s", tt.mode, tt.crowded, kind), func(t *testing.T) {
				require.Equal(t, slices.Contains(tt.may, kind), s.maySingle(kind, 1<<20))
			})
		}
	}
}

// TestCrowdedSingleMins: on a crowded host, auto lets a Gather or a
// Scatter copy once from crowdedRootedSingleMin bytes only, and an
// Alltoall from crowdedAlltoallSingleMin; cma lets them at any size.
func TestCrowdedSingleMins(t *testing.T) {
	tests := []struct {
		mode  string
		below bool // whether a call smaller than its kind's minimum may
	}{
		{SingleCopyAuto, false},
		{SingleCopyCMA, true},
	}
	mins := []struct {
		kind wire.Kind
		min  int
	}{
		{wire.KindGather, crowdedRootedSingleMin},
		{wire.KindScatter, crowdedRootedSingleMin},
		{wire.KindAlltoall, crowdedAlltoallSingleMin},
	}
	for _, tt := range tests {
		s := &Segment{policy: singlePolicy(tt.mode, true)}
		for _, m := range mins {
			t.Run(tt.mode+"/"+m.kind.String(), func(t *testing.T) {
				require.Equal(t, tt.below, s.maySingle(m.kind, m.min-1))
				require.True(t, s.maySingle(m.kind, m.min))
			})
		}
	}
}

// TestAllreduceSingleMax: an Allreduce may copy once by choice up to
// allreduceSingleMax bytes, and at every size where the setting says
// always.
func TestAllreduceSingleMax(t *testing.T) {
	tests := []struct {
		mode  string
		above bool // whether one larger than allreduceSingleMax may
	}{
		{SingleCopyAuto, false},
		{SingleCopyCMA, true},
	}
	for _, tt := range tests {
		s := &Segment{policy: singlePolicy(tt.mode, false)}
		t.Run(tt.mode, func(t *testing.T) {
			require.True(t, s.maySingle(wire.KindAllreduce, allreduceSingleMax))
			require.Equal(t, tt.above, s.maySingle(wire.KindAllreduce, allreduceSingleMax+1))
			require.True(t, s.maySingle(wire.KindBcast, allreduceSingleMax+1))
		})
	}
}

// TestSingleFamily: an Allreduce, whose ranks combine what they read,
// does not borrow its single-copy choice from the kinds that only move
// data, nor they from it; those kinds are one family.
func TestSingleFamily(t *testing.T) {
	tests := []struct {
		kind   wire.Kind
		family int
	}{
		{wire.KindAllreduce, familyAllreduce},
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
	require.NotEqual(t, familyMoves, familyAllreduce)
}
