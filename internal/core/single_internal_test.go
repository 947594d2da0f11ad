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
// crowded host only Gathers and Scatters, whose ranks other than root
// need not wait for root's buffer longer than through the slots.
func TestSinglePolicy(t *testing.T) {
	kinds := []wire.Kind{wire.KindBcast, wire.KindGather, wire.KindScatter, wire.KindAllgather, wire.KindAllgatherv, wire.KindAlltoall}
	tests := []struct {
		mode    string
		crowded bool
		may     []wire.Kind
	}{
		{SingleCopyAuto, false, kinds},
		{SingleCopyAuto, true, []wire.Kind{wire.KindGather, wire.KindScatter}},
		{SingleCopyCMA, false, kinds},
		{SingleCopyCMA, true, kinds},
		{SingleCopyNone, false, nil},
		{SingleCopyNone, true, nil},
	}
	for _, tt := range tests {
		s := &Segment{policy: singlePolicy(tt.mode, tt.crowded)}
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%s/crowded=%v/%s", tt.mode, tt.crowded, kind), func(t *testing.T) {
				require.Equal(t, slices.Contains(tt.may, kind), s.maySingle(kind))
			})
		}
	}
}
