package collective

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// vKinds are the rooted v-collectives, whose counts only root needs. run
// makes rank c.Rank()'s call with the part count mine (its len(send) for
// Gatherv, its len(recv) for Scatterv), passing counts (which root's
// rootCounts are), and checks the result where the call succeeds.
var vKinds = []struct {
	name string
	run  func(ctx context.Context, c *comm.Comm, root, mine int, counts, rootCounts []int, opts ...Option) error
}{
	{"Gatherv", func(ctx context.Context, c *comm.Comm, root, mine int, counts, rootCounts []int, opts ...Option) error {
		me := c.Rank()
		send := input[int32](me, mine, 11)
		var recv, want []int32
		if me == root {
			parts := make([][]int32, len(rootCounts))
			for r, m := range rootCounts {
				parts[r] = input[int32](r, m, 11)
			}
			spare := []int32{-1, -2, -3}
			want = slices.Concat(append(parts, spare)...)
			recv = slices.Concat(make([]int32, len(want)-len(spare)), spare)
		}
		if err := Gatherv(ctx, c, send, recv, counts, root, opts...); err != nil {
			return err
		}
		if err := equalBits(send, input[int32](me, mine, 11)); err != nil {
			return fmt.Errorf("send changed: %w", err)
		}
		return equalBits(recv, want)
	}},
	{"Scatterv", func(ctx context.Context, c *comm.Comm, root, mine int, counts, rootCounts []int, opts ...Option) error {
		me := c.Rank()
		var send []int32
		if me == root {
			parts := make([][]int32, len(rootCounts))
			for r, m := range rootCounts {
				parts[r] = input[int32](r, m, 13)
			}
			send = slices.Concat(append(parts, []int32{-1, -2})...)
		}
		recv := make([]int32, mine)
		if err := Scatterv(ctx, c, send, counts, recv, root, opts...); err != nil {
			return err
		}
		return equalBits(recv, input[int32](me, mine, 13))
	}},
}

// TestVCountsOnlyAtRoot: Gatherv and Scatterv need counts only at root,
// as in MPI. The other ranks pass nil, an empty slice, or (for
// compatibility) the full counts, in any mix, for every root, with and
// without receipts and compression, and every rank gets its part.
func TestVCountsOnlyAtRoot(t *testing.T) {
	sizes := []int{1, 2, 3, 5}
	if raceEnabled {
		sizes = []int{2, 3}
	}
	styles := []struct {
		name   string
		counts func(r int, counts []int) []int // what non-root r passes
	}{
		{"nil", func(int, []int) []int { return nil }},
		{"empty", func(int, []int) []int { return []int{} }},
		{"mixed", func(r int, counts []int) []int {
			if r%2 == 1 {
				return counts
			}
			return nil
		}},
	}
	options := []struct {
		name string
		opts []Option
	}{
		{"default", nil},
		{"without receipts", []Option{WithReceipts(false)}},
		{"s2", []Option{WithCompression(codec.S2)}},
	}
	for _, tr := range []string{"mem", "tcp", "shm"} {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := job(t, n, comm.WithTransport(tr))
				for _, kind := range vKinds {
					for _, style := range styles {
						for _, o := range options {
							for root := range n {
								for _, count := range []int{0, 37, 3000} {
									counts := vCounts(n, count)
									t.Run(fmt.Sprintf("%s/%s/%s/root=%d/count=%d", kind.name, style.name, o.name, root, count), func(t *testing.T) {
										allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
											mine := counts
											if c.Rank() != root {
												mine = style.counts(c.Rank(), counts)
											}
											return kind.run(ctx, c, root, counts[c.Rank()], mine, counts, o.opts...)
										})
									})
								}
							}
						}
					}
				}
			})
		}
	}
}

// TestVCountsDisagree: a rank whose part (its len(send) of a Gatherv, its
// len(recv) of a Scatterv) differs from root's count for it fails with
// ErrMismatch inside the call, and so does root, each naming the rank
// and both counts, whether it passes counts or not, and whichever of the
// two only sends; the other ranks fail with the abort, in the call or in
// the Barrier after it. Nobody waits for the timeout. Without receipts
// the rank that only sends may return nil, and fails in its next call.
func TestVCountsDisagree(t *testing.T) {
	cases := []struct {
		name          string
		n, root, bad  int
		delta         int  // the bad rank's part is root's count + delta
		passes        bool // the bad rank passes counts (consistent with its part)
		opts          []Option
		senderMayPass bool // without receipts
	}{
		{name: "one more", n: 2, root: 0, bad: 1, delta: 1},
		{name: "one fewer, passing counts", n: 3, root: 2, bad: 0, delta: -1, passes: true},
		{name: "none where root expects some", n: 3, root: 1, bad: 2, delta: -8},
		{name: "compressed", n: 3, root: 0, bad: 2, delta: 5, opts: []Option{WithCompression(codec.S2)}},
		{name: "without receipts", n: 2, root: 1, bad: 0, delta: 2, opts: []Option{WithReceipts(false)}, senderMayPass: true},
	}
	for _, tr := range []string{"mem", "tcp", "shm"} {
		for _, kind := range vKinds {
			for _, tt := range cases {
				t.Run(fmt.Sprintf("%s/%s/%s", tr, kind.name, tt.name), func(t *testing.T) {
					cs := job(t, tt.n, comm.WithTransport(tr), comm.WithTimeout(watchdog))
					counts := make([]int, tt.n)
					for r := range counts {
						counts[r] = 8 + r
					}
					part := counts[tt.bad] + tt.delta
					inCall := make([]bool, tt.n)
					start := time.Now()
					errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
						me := c.Rank()
						var passed []int
						mine := counts[me]
						switch {
						case me == tt.root:
							passed = counts
						case me == tt.bad:
							mine = part
							if tt.passes {
								passed = slices.Clone(counts)
								passed[me] = part
							}
						}
						if err := kind.run(ctx, c, tt.root, mine, passed, counts, tt.opts...); err != nil {
							inCall[me] = true
							return err
						}
						return Barrier(ctx, c)
					})
					require.Less(t, time.Since(start), watchdog/2, "the ranks took long to find the mismatch")
					what := "send"
					if kind.name == "Scatterv" {
						what = "recv"
					}
					// The rank that receives the part finds the mismatch in
					// the call; with receipts, so does the one that sends it.
					sender, receiver := tt.bad, tt.root
					if kind.name == "Scatterv" {
						sender, receiver = tt.root, tt.bad
					}
					for r, err := range errs {
						require.Error(t, err, "rank %d", r)
						require.ErrorIs(t, err, comm.ErrMismatch, "rank %d", r)
						require.False(t, errors.Is(err, comm.ErrTimeout), "rank %d: %v", r, err)
						if r != tt.root && r != tt.bad {
							continue
						}
						if r == receiver || r == sender && !tt.senderMayPass {
							require.True(t, inCall[r], "rank %d returned nil from %s; it failed after: %v", r, kind.name, err)
							require.ErrorContains(t, err, fmt.Sprintf("counts[%d] is %d", tt.bad, counts[tt.bad]), "rank %d", r)
							require.ErrorContains(t, err, fmt.Sprintf("rank %d's %s has %d elements", tt.bad, what, part), "rank %d", r)
						}
					}
				})
			}
		}
	}
}

// TestVCountsRefused: root must pass one count per rank; a rank other
// than root may pass none, but counts it passes must still be one per
// rank, with its own part's length at its place. A refusal is
// ErrInvalid on the rank that made it, naming the rank, the call and the
// lengths, and aborts the job.
func TestVCountsRefused(t *testing.T) {
	cases := []struct {
		name   string
		n, bad int
		counts func(me int) []int // what rank me passes; root is rank 1
		want   []string
	}{
		{"root passes too few counts", 3, 1, func(me int) []int {
			if me == 1 {
				return []int{2, 2}
			}
			return nil
		}, []string{"(int32, root 1)", "counts has 2 entries at root 1, which needs one for each of 3 ranks"}},
		{"root passes no counts", 2, 1, func(int) []int { return nil },
			[]string{"counts has 0 entries at root 1, which needs one for each of 2 ranks"}},
		{"a rank passes counts of the wrong length", 3, 2, func(me int) []int {
			switch me {
			case 1:
				return []int{2, 2, 2}
			case 2:
				return []int{2, 2, 2, 2}
			}
			return nil
		}, []string{"counts has 4 entries for 3 ranks on rank 2"}},
		{"a rank's count is not its part", 3, 0, func(me int) []int {
			switch me {
			case 0:
				return []int{3, 2, 2}
			case 1:
				return []int{2, 2, 2}
			}
			return nil
		}, []string{"has 2 elements on rank 0 but counts[0] is 3"}},
	}
	for _, kind := range vKinds {
		for _, tt := range cases {
			t.Run(kind.name+"/"+tt.name, func(t *testing.T) {
				requireRefused(t, tt.n, []int{tt.bad}, func(ctx context.Context, c *comm.Comm) error {
					counts := slices.Repeat([]int{2}, tt.n)
					return kind.run(ctx, c, 1, 2, tt.counts(c.Rank()), counts)
				}, append([]string{kind.name}, tt.want...)...)
			})
		}
	}
}
