package collective

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// TestMismatch: ranks that disagree on a call, in every way a call can
// differ and whichever ranks' messages meet, each fail with both calls
// named, and none by the timeout. Some cases share no tag between the
// calls; in some a disagreeing rank only sends, and in "nobody sends"
// neither side sends the other anything, so only a stalled receive's
// probe can tell.
func TestMismatch(t *testing.T) {
	tests := []struct {
		name  string
		ranks []int
		call  rankCall
		want  []string
	}{
		{
			name:  "count",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Allreduce(ctx, c, make([]float32, 10+10*min(c.Rank(), 1)), codec.Sum)
			},
			want: []string{"Allreduce(10 × float32, sum)", "Allreduce(20 × float32, sum)"},
		},
		{
			// In a segment rank 0's call fits a fast line and the others'
			// go through the slots: each side waits where the other never
			// writes, and the records must tell them.
			name:  "count across paths",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Allreduce(ctx, c, make([]float32, 4+4092*min(c.Rank(), 1)), codec.Sum)
			},
			want: []string{"Allreduce(4 × float32, sum)", "Allreduce(4096 × float32, sum)"},
		},
		{
			name:  "element type",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 0 {
					return Allreduce(ctx, c, make([]float32, 8), codec.Sum)
				}
				return Allreduce(ctx, c, make([]int32, 8), codec.Sum)
			},
			want: []string{"8 × float32", "8 × int32"},
		},
		{
			name:  "op",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				op := codec.Sum
				if c.Rank() == 1 {
					op = codec.Max
				}
				return Allreduce(ctx, c, make([]float64, 8), op)
			},
			want: []string{"8 × float64, sum", "8 × float64, max"},
		},
		{
			name:  "codec",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				wire := codec.None
				if c.Rank() == 0 {
					wire = codec.BF16
				}
				return Allreduce(ctx, c, make([]float32, 64), codec.Sum, WithAlgorithm(Ring), WithCompression(wire))
			},
			want: []string{"bf16"},
		},
		{
			name:  "algorithm",
			ranks: []int{2, 3, 4},
			call: func(ctx context.Context, c *comm.Comm) error {
				algo := Tree
				if c.Rank() == 0 {
					algo = Ring
				}
				return Allreduce(ctx, c, make([]float32, 64), codec.Sum, WithAlgorithm(algo))
			},
			want: []string{"Allreduce(64 × float32, sum) with ring", "Allreduce(64 × float32, sum) with tree"},
		},
		{
			name:  "allreduce vs bcast",
			ranks: []int{2, 3, 4},
			call: func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					return Bcast(ctx, c, make([]float32, 10), 0)
				}
				return Allreduce(ctx, c, make([]float32, 10), codec.Sum)
			},
			want: []string{"Bcast(10 × float32, root 0)", "Allreduce(10 × float32, sum)"},
		},
		{
			name:  "counts that pick different algorithms",
			ranks: []int{2, 3, 4},
			call: func(ctx context.Context, c *comm.Comm) error {
				n := 8
				if c.Rank() == 0 {
					n = 1 << 20
				}
				return Allreduce(ctx, c, make([]float32, n), codec.Sum)
			},
			want: []string{"Allreduce(8 × float32, sum)", "Allreduce(1048576 × float32, sum)"},
		},
		{
			// The dissemination barrier's first step and Bruck's share
			// peers but no later step does; no tags are shared.
			name:  "barrier vs bruck allgather",
			ranks: []int{3, 4, 5},
			call: func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					return Barrier(ctx, c)
				}
				p := c.Size()
				return Allgather(ctx, c, make([]uint8, 3), make([]uint8, 3*p), WithAlgorithm(Bruck))
			},
			want: []string{"Barrier(0 × uint8) with ", "Allgather("},
		},
		{
			// Even ranks think rank 0 is the root, odd ones rank 1: each
			// self-declared root only sends, and is done before anyone
			// can tell it.
			name:  "bcast roots",
			ranks: []int{2, 3, 4, 5},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Bcast(ctx, c, make([]int32, 5), c.Rank()%2)
			},
			want: []string{"Bcast(5 × int32, root 0)", "Bcast(5 × int32, root 1)"},
		},
		{
			// Every rank thinks the next one is the root: every rank
			// waits for its parent and nobody sends anything.
			name:  "nobody sends",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Bcast(ctx, c, make([]float32, 7), (c.Rank()+1)%c.Size(), WithAlgorithm(Tree))
			},
			want: []string{"Bcast(7 × float32, root"},
		},
		{
			// Gather's leaves only send; the root is the only one that
			// receives, and it gathers to another rank than they do.
			name:  "gather roots",
			ranks: []int{2, 3, 4},
			call: func(ctx context.Context, c *comm.Comm) error {
				p := c.Size()
				root := 0
				if c.Rank() == p-1 {
					root = p - 1
				}
				return Gather(ctx, c, make([]float64, 2), make([]float64, 2*p), root, WithAlgorithm(Linear))
			},
			want: []string{"root 0)", "with linear"},
		},
		{
			// Each self-declared root only sends down a chain.
			name:  "chain bcast roots",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Bcast(ctx, c, make([]int32, 64), c.Rank()%2, WithAlgorithm(Chain), WithChunkSize(64))
			},
			want: []string{"root 0) with chain", "root 1) with chain"},
		},
		{
			name:  "scatter roots",
			ranks: []int{2, 3, 4},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Scatter(ctx, c, make([]int16, 3*c.Size()), make([]int16, 3), c.Rank()%2, WithAlgorithm(Tree))
			},
			want: []string{"root 0) with tree", "root 1) with tree"},
		},
		{
			name:  "linear scatter roots",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Scatter(ctx, c, make([]int16, 3*c.Size()), make([]int16, 3), c.Rank()%2, WithAlgorithm(Linear))
			},
			want: []string{"root 0) with linear", "root 1) with linear"},
		},
		{
			// The leaves of the tree only send.
			name:  "reduce leaf count",
			ranks: []int{2, 3, 4},
			call: func(ctx context.Context, c *comm.Comm) error {
				n := 6
				if c.Rank() == c.Size()-1 {
					n = 5
				}
				return Reduce(ctx, c, make([]int64, n), codec.Sum, 0, WithAlgorithm(Tree))
			},
			want: []string{"Reduce(6 × int64, sum, root 0)", "Reduce(5 × int64, sum, root 0)"},
		},
		{
			// Reduce's tree sends in segments of the chunk size, which
			// calls do not record: the segments' lengths tell.
			name:  "reduce segments",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Reduce(ctx, c, make([]int64, 100), codec.Sum, 0, WithAlgorithm(Tree), rootsChunk(c))
			},
			want: []string{"Reduce(100 × int64, sum, root 0)", "different chunk sizes?"},
		},
		{
			// The same for the chain's chunks: the root only sends.
			name:  "chain bcast chunks",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				return Bcast(ctx, c, make([]int64, 100), 0, WithAlgorithm(Chain), rootsChunk(c))
			},
			want: []string{"Bcast(100 × int64, root 0) with chain"},
		},
		{
			name:  "gather leaf count",
			ranks: []int{2, 3, 4},
			call: func(ctx context.Context, c *comm.Comm) error {
				n := 2
				if c.Rank() == c.Size()-1 {
					n = 3
				}
				return Gather(ctx, c, make([]float64, n), make([]float64, n*c.Size()), 0, WithAlgorithm(Tree))
			},
			want: []string{"Gather(", "root 0) with tree"},
		},
		{
			// Rank 0 comes late: the others' messages are there before
			// its call starts, and the check runs when it does.
			name:  "late rank",
			ranks: []int{2, 4},
			call: func(ctx context.Context, c *comm.Comm) error {
				n := 16
				if c.Rank() == 0 {
					time.Sleep(20 * time.Millisecond)
					n = 8
				}
				return Allreduce(ctx, c, make([]uint8, n), codec.Max)
			},
			want: []string{"Allreduce(8 × uint8, max)", "Allreduce(16 × uint8, max)"},
		},
		{
			// Two async allreduces in flight; the ranks disagree on the
			// second one's count.
			name:  "async",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				first := AllreduceAsync(ctx, c, make([]float32, 100), codec.Sum)
				second := AllreduceAsync(ctx, c, make([]float32, 100+c.Rank()%2), codec.Sum)
				return errors.Join(first.Wait(ctx), second.Wait(ctx))
			},
			want: []string{"Allreduce(100 × float32, sum)", "Allreduce(101 × float32, sum)"},
		},
		{
			name:  "split vs allreduce",
			ranks: []int{2, 3},
			call: func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					_, err := c.Split(ctx, 0, 0)
					return err
				}
				return Allreduce(ctx, c, make([]float32, 4), codec.Sum)
			},
			want: []string{"called Split", "Allreduce(4 × float32, sum)"},
		},
		{
			// The ranks of a sub-communicator are named as ranks of it.
			name:  "in a sub-communicator",
			ranks: []int{4},
			call: func(ctx context.Context, c *comm.Comm) error {
				sub, err := c.Split(ctx, c.Rank()%2, -c.Rank())
				if err != nil {
					return err
				}
				defer sub.Close()
				return Bcast(ctx, sub, make([]float32, 3+sub.Rank()), 0)
			},
			want: []string{"rank 0 called Bcast(3 × float32, root 0)", "rank 1 called Bcast(4 × float32, root 0)"},
		},
	}
	// Over links the calls meet in messages; with auto, whatever has a
	// shared-memory algorithm meets in the segment, against the other
	// ranks' calls there or against their messages.
	for _, tt := range tests {
		for _, n := range tt.ranks {
			for _, tr := range transports {
				t.Run(fmt.Sprintf("%s/n=%d/%s", tt.name, n, tr), func(t *testing.T) {
					requireMismatch(t, n, tt.call, tt.want, comm.WithTransport(tr))
				})
			}
		}
	}
}

// rootsChunk gives rank 0 chunks of 128 bytes and the other ranks chunks
// of 64: calls that cut their buffers differently.
func rootsChunk(c *comm.Comm) Option {
	if c.Rank() == 0 {
		return WithChunkSize(128)
	}
	return WithChunkSize(64)
}
