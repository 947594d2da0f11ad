package collective

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// statsOf is the row of c's Stats for collective and algo.
func statsOf(t *testing.T, c *comm.Comm, collective string, algo Algorithm) comm.CallStats {
	t.Helper()
	for _, s := range c.Stats() {
		if s.Collective == collective && s.Algorithm == algo.String() {
			return s
		}
	}
	t.Fatalf("rank %d: no stats for %s/%s in %+v", c.Rank(), collective, algo, c.Stats())
	return comm.CallStats{}
}

// TestStatsBytes checks that each algorithm's calls count the bytes the
// algorithm must move, by its formula, and time every call with a
// sampling of 1, split into parts that add up to no more than the call.
func TestStatsBytes(t *testing.T) {
	const (
		n     = 4
		count = 1024 // elements of float32, a multiple of n
		bytes = count * 4
		block = bytes / n
		calls = 3
	)
	cases := []struct {
		name       string
		collective string
		algo       Algorithm
		run        func(ctx context.Context, c *comm.Comm, algo Algorithm) error
		// sent and received by rank r.
		sent, received func(r int) int
	}{
		{"allreduce ring", "Allreduce", Ring,
			func(ctx context.Context, c *comm.Comm, a Algorithm) error {
				return Allreduce(ctx, c, make([]float32, count), codec.Sum, WithAlgorithm(a))
			},
			func(int) int { return 2 * (n - 1) * block }, func(int) int { return 2 * (n - 1) * block }},
		{"allreduce recursive doubling", "Allreduce", RecursiveDoubling,
			func(ctx context.Context, c *comm.Comm, a Algorithm) error {
				return Allreduce(ctx, c, make([]float32, count), codec.Sum, WithAlgorithm(a))
			},
			func(int) int { return 2 * bytes }, func(int) int { return 2 * bytes }}, // lg 4 = 2 exchanges
		{"bcast linear", "Bcast", Linear,
			func(ctx context.Context, c *comm.Comm, a Algorithm) error {
				return Bcast(ctx, c, make([]float32, count), 1, WithAlgorithm(a))
			},
			func(r int) int { return map[bool]int{true: (n - 1) * bytes}[r == 1] },
			func(r int) int { return map[bool]int{false: bytes}[r == 1] }},
		{"gather linear", "Gather", Linear,
			func(ctx context.Context, c *comm.Comm, a Algorithm) error {
				return Gather(ctx, c, make([]float32, count/n), make([]float32, count), 0, WithAlgorithm(a))
			},
			func(r int) int { return map[bool]int{false: block}[r == 0] },
			func(r int) int { return map[bool]int{true: (n - 1) * block}[r == 0] }},
		{"allgather ring", "Allgather", Ring,
			func(ctx context.Context, c *comm.Comm, a Algorithm) error {
				return Allgather(ctx, c, make([]float32, count/n), make([]float32, count), WithAlgorithm(a))
			},
			func(int) int { return (n - 1) * block }, func(int) int { return (n - 1) * block }},
		{"reducescatter ring", "ReduceScatter", Ring,
			func(ctx context.Context, c *comm.Comm, a Algorithm) error {
				return ReduceScatter(ctx, c, make([]float32, count), make([]float32, count/n), codec.Sum, WithAlgorithm(a))
			},
			func(int) int { return (n - 1) * block }, func(int) int { return (n - 1) * block }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := job(t, n, comm.WithStatsSampling(1))
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				for range calls {
					if err := tc.run(ctx, c, tc.algo); err != nil {
						return err
					}
				}
				return nil
			})
			for r, c := range cs {
				s := statsOf(t, c, tc.collective, tc.algo)
				require.Equal(t, uint64(calls), s.Calls, "rank %d", r)
				require.Zero(t, s.Failed, "rank %d", r)
				require.Equal(t, uint64(calls*tc.sent(r)), s.BytesSent, "rank %d sent", r)
				require.Equal(t, uint64(calls*tc.received(r)), s.BytesReceived, "rank %d received", r)
				require.Equal(t, "mem", s.Transport, "rank %d", r)
				requireTimeAddsUp(t, s, calls)
			}
		})
	}
}

// TestStatsSegment checks the bytes of calls through a shared segment:
// what a rank puts there for the others and what it takes of theirs.
func TestStatsSegment(t *testing.T) {
	const n = 3
	cases := []struct {
		name       string
		collective string
		count      int
		run        func(ctx context.Context, c *comm.Comm, count int) error
		sent       func(r, bytes int) int
		received   func(r, bytes int) int
	}{
		{"allreduce in fast lines", "Allreduce", 2,
			func(ctx context.Context, c *comm.Comm, count int) error {
				return Allreduce(ctx, c, make([]float32, count), codec.Sum, WithAlgorithm(Shm))
			},
			func(_, b int) int { return b }, func(_, b int) int { return (n - 1) * b }},
		{"bcast in fast lines", "Bcast", 2,
			func(ctx context.Context, c *comm.Comm, count int) error {
				return Bcast(ctx, c, make([]float32, count), 2, WithAlgorithm(Shm))
			},
			func(r, b int) int { return map[bool]int{true: b}[r == 2] },
			func(r, b int) int { return map[bool]int{false: b}[r == 2] }},
		{"bcast through the slots", "Bcast", 64 << 10,
			func(ctx context.Context, c *comm.Comm, count int) error {
				return Bcast(ctx, c, make([]float32, count), 2, WithAlgorithm(Shm))
			},
			func(r, b int) int { return map[bool]int{true: b}[r == 2] },
			func(r, b int) int { return map[bool]int{false: b}[r == 2] }},
		{"gather through the slots", "Gather", 3 << 14,
			func(ctx context.Context, c *comm.Comm, count int) error {
				return Gather(ctx, c, make([]float32, count/n), make([]float32, count), 0, WithAlgorithm(Shm))
			},
			func(r, b int) int { return map[bool]int{false: b / n}[r == 0] },
			func(r, b int) int { return map[bool]int{true: (n - 1) * b / n}[r == 0] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := job(t, n, comm.WithTransport("auto"), comm.WithStatsSampling(1))
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error { return tc.run(ctx, c, tc.count) })
			for r, c := range cs {
				s := statsOf(t, c, tc.collective, Shm)
				require.Equal(t, "segment", s.Transport, "rank %d", r)
				require.Equal(t, uint64(tc.sent(r, 4*tc.count)), s.BytesSent, "rank %d sent", r)
				require.Equal(t, uint64(tc.received(r, 4*tc.count)), s.BytesReceived, "rank %d received", r)
				requireTimeAddsUp(t, s, 1)
			}
		})
	}
}

// requireTimeAddsUp checks that every call was timed and that the parts
// of the time are no more than the whole.
func requireTimeAddsUp(t *testing.T, s comm.CallStats, timed uint64) {
	t.Helper()
	require.Equal(t, timed, s.Timed, "%+v", s)
	require.Positive(t, s.Time, "%+v", s)
	for _, d := range []time.Duration{s.Wait, s.Wire, s.Copy, s.Reduce, s.Codec} {
		require.GreaterOrEqual(t, d, time.Duration(0), "%+v", s)
	}
	require.GreaterOrEqual(t, s.Other(), time.Duration(0), "parts exceed the time: %+v", s)
}

// TestStatsSlowRank checks that a rank that waits for a late one counts
// that time as Wait: rank 1 enters the Allreduce a good while after rank
// 0, whose wait cannot be shorter than most of that while however fast
// the machine.
func TestStatsSlowRank(t *testing.T) {
	const late = 100 * time.Millisecond
	cs := job(t, 2, comm.WithStatsSampling(1))
	entered := make(chan time.Time, 1)
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		buf := make([]float32, 16)
		if c.Rank() == 1 {
			time.Sleep(time.Until((<-entered).Add(late)))
		} else {
			entered <- time.Now()
		}
		return Allreduce(ctx, c, buf, codec.Sum, WithAlgorithm(RecursiveDoubling))
	})
	fast := statsOf(t, cs[0], "Allreduce", RecursiveDoubling)
	requireTimeAddsUp(t, fast, 1)
	require.GreaterOrEqual(t, fast.Wait, late/2, "%+v", fast)
	require.Equal(t, uint64(64), fast.BytesSent)
}

// TestStatsSampling checks which calls are timed: of the small ones,
// every one with a sampling of 1, none with 0, and about one in n
// otherwise, whatever kinds of call alternate; every large one unless
// the sampling is 0. Which calls are sampled follows from their sequence
// numbers alone, so the counts are the same every run.
func TestStatsSampling(t *testing.T) {
	const calls = 400
	for _, tc := range []struct {
		sampling, small, large int
		min, max               uint64 // timed Allreduces
	}{
		{sampling: 1, small: calls, min: calls, max: calls},
		{sampling: 0, small: 3, large: 1},
		{sampling: 4, large: 2, min: 2, max: 2},
		{sampling: 8, small: calls, min: calls / 8 / 3, max: calls / 8 * 3},
	} {
		t.Run(fmt.Sprint(tc.sampling), func(t *testing.T) {
			cs := job(t, 2, comm.WithStatsSampling(tc.sampling))
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				for range tc.small {
					// A Barrier after every Allreduce: every other number.
					if err := Allreduce(ctx, c, make([]float32, 4), codec.Sum, WithAlgorithm(Ring)); err != nil {
						return err
					}
					if err := Barrier(ctx, c); err != nil {
						return err
					}
				}
				for range tc.large {
					if err := Allreduce(ctx, c, make([]float32, 16<<10), codec.Sum, WithAlgorithm(Ring)); err != nil {
						return err
					}
				}
				return nil
			})
			s := statsOf(t, cs[0], "Allreduce", Ring)
			require.Equal(t, uint64(tc.small+tc.large), s.Calls)
			require.GreaterOrEqual(t, s.Timed, tc.min, "%+v", s)
			require.LessOrEqual(t, s.Timed, tc.max, "%+v", s)
			if tc.small > 0 && tc.min > 0 {
				b := statsOf(t, cs[0], "Barrier", Dissemination)
				require.Positive(t, b.Timed, "the Barriers between are sampled too: %+v", b)
			}
		})
	}
}

// TestStatsWhileCalling reads Stats from other goroutines while the
// ranks call collectives, blocking and async: under the race detector
// this checks how Stats reads the counts that blocking calls keep
// pending, and the counts add up once the calls are over. Stats during a
// call that waits for a late rank returns at once.
func TestStatsWhileCalling(t *testing.T) {
	const n, calls = 2, 200
	cs := job(t, n)
	stop := make(chan struct{})
	readers := make(chan struct{})
	for _, c := range cs {
		go func() {
			defer func() { readers <- struct{}{} }()
			for {
				select {
				case <-stop:
					return
				default:
					c.Stats()
				}
			}
		}()
	}
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		for i := range calls {
			if i%10 == 0 {
				if err := AllreduceAsync(ctx, c, make([]int32, 4), codec.Sum).Wait(ctx); err != nil {
					return err
				}
				continue
			}
			if err := Allreduce(ctx, c, make([]int32, 4), codec.Sum, WithAlgorithm(Ring)); err != nil {
				return err
			}
		}
		return nil
	})
	close(stop)
	for range cs {
		<-readers
	}
	for r, c := range cs {
		var total uint64
		for _, s := range c.Stats() {
			total += s.Calls
		}
		require.Equal(t, uint64(calls), total, "rank %d: %+v", r, c.Stats())
	}

	// A call that waits: rank 0 alone enters a Barrier.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Barrier(ctx, cs[0]) }()
	for range 100 {
		cs[0].Stats()
	}
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
}
