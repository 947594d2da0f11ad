package core

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/gocoll/gocoll/internal/wire"
)

// TestCallRecord: a call record in a segment gives back the call, its
// sequence number and ticket, every field of the call included.
func TestCallRecord(t *testing.T) {
	tests := []struct {
		name string
		call wire.Call
	}{
		{"allreduce", wire.Call{Kind: wire.KindAllreduce, DType: kernel.Float32, Op: ops.Sum, Count: min(1<<40, math.MaxInt), Root: -1, Algorithm: wire.AlgoShm}},
		{"bcast without receipts", wire.Call{Kind: wire.KindBcast, DType: kernel.Uint8, Count: 8, Root: 7, Algorithm: wire.AlgoShm, NoReceipts: true}},
		{"barrier without receipts", wire.Call{Kind: wire.KindBarrier, DType: kernel.Uint8, Root: -1, Algorithm: wire.AlgoHierarchical, NoReceipts: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, segRecord)
			putCall(b, 11, 12, tt.call)
			call, seq, ticket := getCall(b)
			require.Equal(t, tt.call, call)
			require.Equal(t, uint64(12), seq)
			require.Equal(t, uint64(11), ticket)
		})
	}
}
