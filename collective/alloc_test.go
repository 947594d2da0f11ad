package collective

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// TestAllreduceAllocatesNothing: once links and pools are warm, an
// Allreduce allocates nothing, on any rank, over links, through shared
// memory, direct between registered buffers, and across "hosts" (two, by
// their claimed identity); rank 0 calls it out of place (AllreduceInto).
func TestAllreduceAllocatesNothing(t *testing.T) {
	if raceEnabled || !codec.Aliasing {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items) and in the purego build (views copy); make test runs this without either")
	}
	linkAlgos := []Algorithm{RecursiveDoubling, Ring, RingChunked, Rabenseifner, Tree}
	for _, tr := range []string{"mem", "tcp", "auto", "registered", "hosts"} {
		algos, opts := linkAlgos, []comm.Option{comm.WithTransport(tr)}
		switch tr {
		case "auto":
			algos = []Algorithm{Shm}
		case "registered":
			algos, opts = []Algorithm{Shm}, []comm.Option{comm.WithTransport("auto")}
		case "hosts":
			algos = []Algorithm{Hierarchical}
			opts = []comm.Option{comm.WithTransport("auto"), comm.WithHostIdentity(func(r int) string { return fmt.Sprint(r % 2) })}
		}
		for _, algo := range algos {
			for _, count := range []int{8, 256, 256 << 10} {
				t.Run(fmt.Sprintf("%s/%s/%d", tr, algo, count), func(t *testing.T) {
					if tr == "registered" {
						useRegistered(t, func(int) bool { return true })
					}
					cs := job(t, 3, opts...)
					before := directOps(cs)
					calls := requireNoAllocs(t, cs, allreduceStep(count, WithAlgorithm(algo)))
					if tr == "registered" && 4*count >= directMin {
						requireDirect(t, cs, before, calls)
					}
				})
			}
		}
	}
}

// TestCompressedAllreduceAllocatesNothing: compression takes its wire
// buffers from the pools too, so a compressed Allreduce allocates
// nothing either, for every codec and over a pipelined and a one-shot
// algorithm.
func TestCompressedAllreduceAllocatesNothing(t *testing.T) {
	if raceEnabled || !codec.Aliasing {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items) and in the purego build (views copy); make test runs this without either")
	}
	for _, tr := range []string{"mem", "tcp"} {
		for _, c := range codecs {
			for _, algo := range []Algorithm{RecursiveDoubling, RingChunked} {
				t.Run(fmt.Sprintf("%s/%s/%s", tr, c, algo), func(t *testing.T) {
					requireNoAllocs(t, job(t, 3, comm.WithTransport(tr)), allreduceStep(256<<10,
						WithAlgorithm(algo), WithCompression(c), WithChunkSize(256<<10)))
				})
			}
		}
	}
}

// TestRegisteredAllocatesNothing: once warm, every collective that has a
// direct path, on registered buffers of directElems in all, goes direct
// on every call and allocates nothing; rooted calls with rank 0, whose
// calls are counted, as root and not. Allreduce's direct calls are
// TestAllreduceAllocatesNothing's.
func TestRegisteredAllocatesNothing(t *testing.T) {
	if raceEnabled || !codec.Aliasing {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items) and in the purego build (views copy); make test runs this without either")
	}
	useRegistered(t, func(int) bool { return true })
	const n = 3
	per := perRank(n)
	// Root's buffer of count elements; nil on the other ranks.
	atRoot := func(t *testing.T, c *comm.Comm, root, count int) []float32 {
		if c.Rank() != root {
			return nil
		}
		return place(t, root, make([]float32, count))
	}
	type call = func(ctx context.Context) error
	type test struct {
		name string
		step func(t *testing.T, c *comm.Comm) call
	}
	tests := []test{
		{"reducescatter", func(t *testing.T, c *comm.Comm) call {
			send, recv := place(t, c.Rank(), make([]float32, n*per)), place(t, c.Rank(), make([]float32, per))
			return func(ctx context.Context) error { return ReduceScatter(ctx, c, send, recv, codec.Sum) }
		}},
		{"allgather", func(t *testing.T, c *comm.Comm) call {
			send, recv := place(t, c.Rank(), make([]float32, per)), place(t, c.Rank(), make([]float32, n*per))
			return func(ctx context.Context) error { return Allgather(ctx, c, send, recv) }
		}},
		{"allgatherv", func(t *testing.T, c *comm.Comm) call {
			counts := []int{per, 2 * per, 1} // of the n ranks
			send, recv := place(t, c.Rank(), make([]float32, counts[c.Rank()])), place(t, c.Rank(), make([]float32, 3*per+1))
			return func(ctx context.Context) error { return Allgatherv(ctx, c, send, recv, counts) }
		}},
		{"alltoall", func(t *testing.T, c *comm.Comm) call {
			send, recv := place(t, c.Rank(), make([]float32, n*per)), place(t, c.Rank(), make([]float32, n*per))
			return func(ctx context.Context) error { return Alltoall(ctx, c, send, recv) }
		}},
	}
	for _, root := range []int{0, n - 1} {
		tests = append(tests, test{fmt.Sprint("bcast/root=", root), func(t *testing.T, c *comm.Comm) call {
			buf := place(t, c.Rank(), make([]float32, directElems))
			return func(ctx context.Context) error { return Bcast(ctx, c, buf, root) }
		}}, test{fmt.Sprint("gather/root=", root), func(t *testing.T, c *comm.Comm) call {
			send, recv := place(t, c.Rank(), make([]float32, per)), atRoot(t, c, root, n*per)
			return func(ctx context.Context) error { return Gather(ctx, c, send, recv, root) }
		}}, test{fmt.Sprint("scatter/root=", root), func(t *testing.T, c *comm.Comm) call {
			send, recv := atRoot(t, c, root, n*per), place(t, c.Rank(), make([]float32, per))
			return func(ctx context.Context) error { return Scatter(ctx, c, send, recv, root) }
		}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := shmJob(t, n)
			before := directOps(cs)
			requireDirect(t, cs, before, requireNoAllocs(t, cs, tt.step))
		})
	}
}

// allreduceStep is requireNoAllocs's step for Allreduce of count float32s
// with opts: out of place (AllreduceInto) on rank 0, in place elsewhere.
func allreduceStep(count int, opts ...Option) func(t *testing.T, c *comm.Comm) func(ctx context.Context) error {
	return func(t *testing.T, c *comm.Comm) func(ctx context.Context) error {
		buf := place(t, c.Rank(), make([]float32, count))
		if c.Rank() > 0 {
			return func(ctx context.Context) error { return Allreduce(ctx, c, buf, codec.Sum, opts...) }
		}
		send := place(t, 0, make([]float32, count))
		return func(ctx context.Context) error { return AllreduceInto(ctx, c, send, buf, codec.Sum, opts...) }
	}
}

// requireNoAllocs makes, on every rank of cs, the call that step returns
// for the rank, on buffers step made once, and requires rank 0's calls,
// once warm, to allocate nothing. It returns how many calls each rank
// made.
func requireNoAllocs(t *testing.T, cs []*comm.Comm, step func(t *testing.T, c *comm.Comm) func(ctx context.Context) error) int {
	t.Helper()
	const rounds = 50
	ctx := context.Background()
	calls := make([]func(ctx context.Context) error, len(cs))
	for r, c := range cs {
		calls[r] = step(t, c)
	}
	others := make(chan error, len(cs)-1)
	for _, call := range calls[1:] {
		go func() {
			for range rounds + 2 {
				if err := call(ctx); err != nil {
					others <- err
					return
				}
			}
			others <- nil
		}()
	}
	once := func() {
		if err := calls[0](ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A warm-up, and steadyAllocs (AllocsPerRun) warms up once more.
	once()
	allocs := steadyAllocs(rounds, once)
	for range cs[1:] {
		require.NoError(t, <-others)
	}
	require.Zero(t, allocs, "allocations per call")
	return rounds + 2
}

// TestFastLinesWithoutReceiptsAllocateNothing: small rooted calls in a
// shared segment without receipts, whose ranks compare the calls they
// skipped as their next call begins, allocate nothing either, as root
// and not.
func TestFastLinesWithoutReceiptsAllocateNothing(t *testing.T) {
	if raceEnabled || !codec.Aliasing {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items) and in the purego build (views copy); make test runs this without either")
	}
	const n = 3
	opts := []Option{WithReceipts(false)}
	for _, root := range []int{0, n - 1} {
		t.Run(fmt.Sprint("bcast/root=", root), func(t *testing.T) {
			requireNoAllocs(t, shmJob(t, n), func(t *testing.T, c *comm.Comm) func(ctx context.Context) error {
				buf := make([]float32, 5)
				return func(ctx context.Context) error { return Bcast(ctx, c, buf, root, opts...) }
			})
		})
		t.Run(fmt.Sprint("gather/root=", root), func(t *testing.T) {
			requireNoAllocs(t, shmJob(t, n), func(t *testing.T, c *comm.Comm) func(ctx context.Context) error {
				send, recv := make([]float32, 2), make([]float32, 2*n)
				return func(ctx context.Context) error { return Gather(ctx, c, send, recv, root, opts...) }
			})
		})
	}
}

// TestObjectsPointToPointAllocateNothing: a worker fleet's steady round
// trip of objects, SendObject there and RecvObjectInto back into the same
// value, allocates nothing once warm, for values whose raw block goes
// split from their memory (1 KiB and up) and in one piece, bare slices
// and structs that end with one, over every transport. (RecvObject
// allocates each value it returns, by its contract.)
func TestObjectsPointToPointAllocateNothing(t *testing.T) {
	if raceEnabled || !codec.Aliasing {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items) and in the purego build (views copy); make test runs this without either")
	}
	type gradients struct {
		Step int
		Grad []float32
	}
	type step = func(t *testing.T, c *comm.Comm) func(ctx context.Context) error
	for _, tr := range []string{"mem", "tcp", "shm"} {
		for _, elems := range []int{10, splitMin / 4, 64 << 10 / 4} {
			// Each rank round-trips a value of its own, of the one shape.
			steps := map[string]step{
				"slice": func(t *testing.T, c *comm.Comm) func(ctx context.Context) error {
					v := make([]float32, elems)
					return roundTrip(c, &v)
				},
				"struct": func(t *testing.T, c *comm.Comm) func(ctx context.Context) error {
					v := gradients{Step: 7, Grad: make([]float32, elems)}
					return roundTrip(c, &v)
				},
			}
			for name, step := range steps {
				t.Run(fmt.Sprintf("%s/%s/%d", tr, name, elems), func(t *testing.T) {
					requireNoAllocs(t, job(t, 2, comm.WithTransport(tr)), step)
				})
			}
		}
	}
}

// roundTrip is one round trip of *v between ranks 0 and 1 of c: rank 0
// sends first, rank 1 echoes.
func roundTrip[T any](c *comm.Comm, v *T) func(ctx context.Context) error {
	peer := 1 - c.Rank()
	send := func(ctx context.Context) error { return SendObject(ctx, c, peer, 5, *v) }
	recv := func(ctx context.Context) error { _, err := RecvObjectInto(ctx, c, peer, 5, v); return err }
	if c.Rank() == 0 {
		return func(ctx context.Context) error {
			if err := send(ctx); err != nil {
				return err
			}
			return recv(ctx)
		}
	}
	return func(ctx context.Context) error {
		if err := recv(ctx); err != nil {
			return err
		}
		return send(ctx)
	}
}
