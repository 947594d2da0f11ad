package collective

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// asyncTransports are the transports the async tests run on: links in
// memory, over tcp and over shared memory (whose ranks also share a
// segment, so Auto picks Shm there), and auto.
var asyncTransports = []string{"mem", "tcp", "shm", "auto"}

// shardedStep is one step of a sharded optimiser's traffic, as a rank
// issues it: a ReduceScatterAsync of a gradient bucket, an
// AllgatherAsync of a parameter shard (in place, from recv's own block,
// every other step) and an AllreduceAsync, each of its own size and
// algorithm, some on a sub-communicator whose ranks are in reverse order.
type shardedStep struct {
	m         int // elements per rank's block
	rsAlgo    Algorithm
	agAlgo    Algorithm
	arAlgo    Algorithm
	op        codec.Op
	sub       bool // on the reversed sub-communicator
	inPlace   bool // AllgatherAsync from recv's own block
	allreduce bool // issue an AllreduceAsync in between
}

// shardedSteps are the steps TestShardedAsyncOverlap issues, all at once.
// Algorithms that need a shared segment are replaced by Auto on
// transports without one (linkAlgo).
var shardedSteps = []shardedStep{
	{m: 1, rsAlgo: Auto, agAlgo: Auto, arAlgo: Auto, op: codec.Sum, allreduce: true},
	{m: 33, rsAlgo: Ring, agAlgo: Ring, arAlgo: RingChunked, op: codec.Sum, inPlace: true, allreduce: true},
	{m: 0, rsAlgo: RecursiveHalving, agAlgo: Bruck, arAlgo: RecursiveDoubling, op: codec.Max},
	{m: 1000, rsAlgo: RecursiveHalving, agAlgo: RecursiveDoubling, arAlgo: Rabenseifner, op: codec.Avg, sub: true, allreduce: true},
	{m: 5, rsAlgo: Shm, agAlgo: Shm, arAlgo: Shm, op: codec.Sum, inPlace: true},
	{m: 20000, rsAlgo: Shm, agAlgo: Shm, arAlgo: Auto, op: codec.Sum, allreduce: true},
	{m: 7, rsAlgo: Auto, agAlgo: Auto, arAlgo: Tree, op: codec.Min, sub: true, inPlace: true, allreduce: true},
	{m: 3000, rsAlgo: Ring, agAlgo: Bruck, arAlgo: Ring, op: codec.Sum},
}

// linkAlgo is a, or Auto where a needs a segment that transport tr does
// not give.
func linkAlgo(tr string, a Algorithm) Algorithm {
	if a == Shm && (tr == "mem" || tr == "tcp") {
		return Auto
	}
	return a
}

// TestShardedAsyncOverlap issues every step of shardedSteps at once on
// every rank, a ReduceScatterAsync, an AllgatherAsync and, in most, an
// AllreduceAsync each, on the world and on a sub-communicator, and then
// waits for them in reverse order. Every rank issues them in one order
// and their sizes, ops and algorithms differ, so any call matched with
// another rank's different call would fail (as a mismatch) or give a
// wrong result: each result must be exact, on every rank.
func TestShardedAsyncOverlap(t *testing.T) {
	sizes := []int{2, 3, 4}
	if raceEnabled {
		sizes = []int{2, 3}
	}
	for _, tr := range asyncTransports {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := job(t, n, comm.WithTransport(tr))
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					sub, err := c.Split(ctx, 0, -c.Rank())
					if err != nil {
						return err
					}
					return shardedOverlap(ctx, tr, c, sub)
				})
			})
		}
	}
}

// shardedOverlap is one rank's part of TestShardedAsyncOverlap.
func shardedOverlap(ctx context.Context, tr string, world, sub *comm.Comm) error {
	type issued struct {
		rs, ag, ar     *Request
		grads, shard   []int32
		params, bucket []int32
		on             *comm.Comm
	}
	steps := make([]issued, len(shardedSteps))
	for i, s := range shardedSteps {
		on := world
		if s.sub {
			on = sub
		}
		p, me := on.Size(), on.Rank()
		st := &steps[i]
		st.on = on
		st.grads = input[int32](me, p*s.m, i)
		st.shard = make([]int32, s.m)
		st.rs = ReduceScatterAsync(ctx, on, st.grads, st.shard, s.op, WithAlgorithm(linkAlgo(tr, s.rsAlgo)))
		if s.allreduce {
			st.bucket = input[int32](me, 2*s.m+1, 100+i)
			st.ar = AllreduceAsync(ctx, on, st.bucket, codec.Sum, WithAlgorithm(linkAlgo(tr, s.arAlgo)))
		}
		st.params = make([]int32, p*s.m)
		send := input[int32](me, s.m, 200+i)
		if s.inPlace {
			copy(st.params[me*s.m:], send)
			send = st.params[me*s.m : (me+1)*s.m]
		}
		st.ag = AllgatherAsync(ctx, on, send, st.params, WithAlgorithm(linkAlgo(tr, s.agAlgo)))
	}
	for i := len(steps) - 1; i >= 0; i-- {
		s, st := shardedSteps[i], &steps[i]
		p, me := st.on.Size(), st.on.Rank()
		for name, r := range map[string]*Request{"AllgatherAsync": st.ag, "ReduceScatterAsync": st.rs, "AllreduceAsync": st.ar} {
			if r == nil {
				continue
			}
			if err := r.Wait(ctx); err != nil {
				return fmt.Errorf("step %d: %s: %w", i, name, err)
			}
		}
		grads, params, buckets := make([][]int32, p), make([][]int32, p), make([][]int32, p)
		for r := range p {
			grads[r] = input[int32](r, p*s.m, i)
			params[r] = input[int32](r, s.m, 200+i)
			buckets[r] = input[int32](r, 2*s.m+1, 100+i)
		}
		if err := equalBits(st.shard, reference(s.op, grads)[me*s.m:(me+1)*s.m]); err != nil {
			return fmt.Errorf("step %d: ReduceScatterAsync on rank %d of %d: %w", i, me, p, err)
		}
		if err := equalBits(st.params, slices.Concat(params...)); err != nil {
			return fmt.Errorf("step %d: AllgatherAsync on rank %d of %d: %w", i, me, p, err)
		}
		if st.ar != nil {
			if err := equalBits(st.bucket, reference(codec.Sum, buckets)); err != nil {
				return fmt.Errorf("step %d: AllreduceAsync on rank %d of %d: %w", i, me, p, err)
			}
		}
		if err := equalBits(st.grads, input[int32](me, p*s.m, i)); err != nil {
			return fmt.Errorf("step %d: ReduceScatterAsync changed send: %w", i, err)
		}
	}
	// The communicators are still in step: a blocking call matches.
	return Barrier(ctx, world)
}

// TestShardedOptimiserStep is a ZeRO-style step as a trainer writes it:
// the gradient buckets' ReduceScatterAsyncs are issued as the buckets
// are ready; as each completes, the rank updates its shard of the
// parameters and issues an AllgatherAsync of it, in place, while later
// buckets still reduce. Every rank must end with the same parameters,
// those of a sequential update, bit for bit; with a non-commutative op
// (packedMatMul, on the order-keeping algorithms) the gradients must
// combine in rank order.
func TestShardedOptimiserStep(t *testing.T) {
	for _, tr := range asyncTransports {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := job(t, n, comm.WithTransport(tr))
				const buckets, m = 6, 257
				grad := func(r, b int) []uint64 { return packedMatrices(r, n*m, b) }
				initial := func(b int) []uint64 { return packedMatrices(n, n*m, 50+b) }
				update := func(param, g []uint64) {
					for i := range param {
						param[i] += 3 * g[i]
					}
				}
				// The sequential reference.
				want := make([][]uint64, buckets)
				for b := range buckets {
					gs := make([][]uint64, n)
					for r := range n {
						gs[r] = grad(r, b)
					}
					want[b] = initial(b)
					update(want[b], reference(packedMatMul, gs))
				}
				rsAlgos := []Algorithm{RecursiveHalving, Auto, Shm}
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					me := c.Rank()
					params := make([][]uint64, buckets)
					shards := make([][]uint64, buckets)
					rs := make([]*Request, buckets)
					for b := range buckets {
						params[b] = initial(b)
						shards[b] = make([]uint64, m)
						rs[b] = ReduceScatterAsync(ctx, c, grad(me, b), shards[b], packedMatMul,
							WithAlgorithm(linkAlgo(tr, rsAlgos[b%len(rsAlgos)])))
					}
					ag := make([]*Request, buckets)
					for b := range buckets {
						if err := rs[b].Wait(ctx); err != nil {
							return fmt.Errorf("bucket %d: %w", b, err)
						}
						mine := params[b][me*m : (me+1)*m]
						update(mine, shards[b])
						ag[b] = AllgatherAsync(ctx, c, mine, params[b])
					}
					for b := range buckets {
						if err := ag[b].Wait(ctx); err != nil {
							return fmt.Errorf("bucket %d: %w", b, err)
						}
						if err := equalBits(params[b], want[b]); err != nil {
							return fmt.Errorf("bucket %d on rank %d: %w", b, me, err)
						}
					}
					return nil
				})
			})
		}
	}
}

// TestAsyncRefusesBadArguments: a ReduceScatterAsync or AllgatherAsync
// whose buffers do not fit returns a Request that is complete already,
// and its Wait returns codec.ErrInvalid naming the call and the sizes;
// the refusal aborts the job, so the other ranks fail too instead of
// waiting.
func TestAsyncRefusesBadArguments(t *testing.T) {
	// wait waits for r, which must be complete already where this rank
	// refused the call.
	wait := func(r *Request, refused bool) error {
		select {
		case <-r.Done():
		default:
			if refused {
				return fmt.Errorf("the Request of a refused call is not complete")
			}
		}
		return r.Wait(context.Background())
	}
	t.Run("ReduceScatterAsync recv of the wrong length", func(t *testing.T) {
		requireRefused(t, 3, []int{2}, func(ctx context.Context, c *comm.Comm) error {
			recv := make([]float32, 4)
			if c.Rank() == 2 {
				recv = recv[:3]
			}
			return wait(ReduceScatterAsync(ctx, c, make([]float32, 12), recv, codec.Sum), c.Rank() == 2)
		}, "ReduceScatter(12 × float32, sum)", "send has 12 elements, want Size()·len(recv) = 3·3 = 9")
	})
	t.Run("AllgatherAsync recv of the wrong length", func(t *testing.T) {
		requireRefused(t, 3, []int{1}, func(ctx context.Context, c *comm.Comm) error {
			recv := make([]int64, 6)
			if c.Rank() == 1 {
				recv = make([]int64, 7)
			}
			return wait(AllgatherAsync(ctx, c, make([]int64, 2), recv, WithAlgorithm(Ring)), c.Rank() == 1)
		}, "Allgather(6 × int64) with ring", "recv has 7 elements, want Size()·len(send) = 3·2 = 6")
	})
	t.Run("ReduceScatterAsync op for the wrong type", func(t *testing.T) {
		requireRefused(t, 2, []int{0, 1}, func(ctx context.Context, c *comm.Comm) error {
			return wait(ReduceScatterAsync(ctx, c, make([]float32, 4), make([]float32, 2), codec.Xor), true)
		}, "ReduceScatter(4 × float32)", "xor")
	})
	t.Run("nil communicator", func(t *testing.T) {
		ctx := context.Background()
		buf := make([]float32, 4)
		for _, r := range []*Request{
			ReduceScatterAsync(ctx, nil, buf, buf[:2], codec.Sum),
			AllgatherAsync(ctx, nil, buf[:2], buf),
		} {
			err := wait(r, true)
			require.ErrorIs(t, err, codec.ErrInvalid)
			require.ErrorContains(t, err, "nil communicator")
		}
	})
}
