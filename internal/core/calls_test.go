package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/gocoll/gocoll/internal/wire"
)

// TestCallTable drives one communicator's table through the orders in
// which this rank's calls and its peers' frames can meet. The
// communicator has world ranks 10, 11 and 12; this rank is 11, rank 1 of
// the communicator.
func TestCallTable(t *testing.T) {
	sum := wire.Call{Kind: wire.KindAllreduce, DType: kernel.Float32, Op: ops.Sum, Count: 8, Root: -1, Algorithm: wire.AlgoRing}
	maxCall := sum
	maxCall.Op = ops.Max
	bcast := wire.Call{Kind: wire.KindBcast, DType: kernel.Float32, Count: 8, Root: 2, Algorithm: wire.AlgoTree}

	type event struct {
		start bool // this rank starts call seq; else world rank from sends a frame of it
		seq   uint64
		call  wire.Call
		from  int
	}
	tests := []struct {
		name   string
		events []event
		// want is the mismatch the last event finds, as text; "" for none.
		want string
	}{
		{"frames of the running call", []event{{true, 1, sum, 0}, {false, 1, sum, 10}, {false, 1, sum, 12}}, ""},
		{"frame of another call", []event{{true, 1, sum, 0}, {false, 1, maxCall, 12}},
			"rank 1 called Allreduce(8 × float32, sum) with ring but rank 2 called Allreduce(8 × float32, max) with ring"},
		{"frame after the call ended", []event{{true, 1, bcast, 0}, {true, 2, sum, 0}, {false, 1, sum, 10}},
			"rank 1 called Bcast(8 × float32, root 2) with tree but rank 0 called Allreduce(8 × float32, sum) with ring"},
		{"early frame of the same call", []event{{false, 1, sum, 10}, {false, 1, sum, 12}, {true, 1, sum, 0}}, ""},
		{"early frame of another call", []event{{false, 1, bcast, 12}, {true, 1, sum, 0}},
			"rank 1 called Allreduce(8 × float32, sum) with ring but rank 2 called Bcast(8 × float32, root 2) with tree"},
		{"early frames that disagree", []event{{false, 1, sum, 10}, {false, 1, bcast, 12}, {true, 1, sum, 0}},
			"rank 1 called Allreduce(8 × float32, sum) with ring but rank 2 called Bcast(8 × float32, root 2) with tree"},
		{"early frame of a later call", []event{{false, 2, bcast, 12}, {true, 1, sum, 0}}, ""},
		{"early frame checked against its own call", []event{{false, 2, bcast, 12}, {true, 1, sum, 0}, {true, 2, bcast, 0}}, ""},
		{"slot reused a whole history later", []event{{true, 1, sum, 0}, {false, 1 + callHistory, bcast, 10}, {true, 1 + callHistory, maxCall, 0}},
			"rank 1 called Allreduce(8 × float32, max) with ring but rank 0 called Bcast(8 × float32, root 2) with tree"},
		{"frame older than the history", []event{{true, 1 + callHistory, sum, 0}, {false, 1, bcast, 10}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := &callTable{}
			table.bind(&Comm{rank: 1, group: []int{10, 11, 12}})
			var got *MismatchError
			for i, e := range tt.events {
				if e.start {
					got = table.start(e.seq, e.call)
				} else {
					h := wire.Header{Kind: e.call.Kind, DType: e.call.DType, Op: e.call.Op, Seq: e.seq,
						Count: uint64(e.call.Count), Root: int32(e.call.Root), Algorithm: e.call.Algorithm}
					got = table.observe(e.from, &h)
				}
				if i < len(tt.events)-1 {
					require.Nil(t, got, "event %d", i)
				}
			}
			if tt.want == "" {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.ErrorIs(t, got, ErrMismatch)
			require.EqualError(t, got, tt.want)
		})
	}
}
