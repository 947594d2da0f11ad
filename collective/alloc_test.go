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
						registered = func(int) bool { return true }
						defer func() { registered = nil }()
					}
					cs := job(t, 3, opts...)
					requireNoAllocs(t, cs, count, WithAlgorithm(algo))
					if tr == "registered" && 4*count >= directMin {
						require.Positive(t, directOps(cs)[0], "direct operations")
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
					requireNoAllocs(t, job(t, 3, comm.WithTransport(tr)), 256<<10,
						WithAlgorithm(algo), WithCompression(c), WithChunkSize(256<<10))
				})
			}
		}
	}
}

// requireNoAllocs runs Allreduce of count float32s with opts on every
// rank of cs, on buffers that place gives, rank 0 out of place, and
// requires rank 0's calls, once warm, to allocate nothing.
func requireNoAllocs(t *testing.T, cs []*comm.Comm, count int, opts ...Option) {
	t.Helper()
	const rounds = 50
	ctx := context.Background()
	others := make(chan error, len(cs)-1)
	for _, c := range cs[1:] {
		buf := place(t, c.Rank(), make([]float32, count))
		go func() {
			for range rounds + 2 {
				if err := Allreduce(ctx, c, buf, codec.Sum, opts...); err != nil {
					others <- err
					return
				}
			}
			others <- nil
		}()
	}
	send, buf := place(t, 0, make([]float32, count)), place(t, 0, make([]float32, count))
	step := func() {
		if err := AllreduceInto(ctx, cs[0], send, buf, codec.Sum, opts...); err != nil {
			t.Fatal(err)
		}
	}
	step() // warm-up
	allocs := steadyAllocs(rounds, step)
	for range cs[1:] {
		require.NoError(t, <-others)
	}
	require.Zero(t, allocs, "allocations per Allreduce")
}
