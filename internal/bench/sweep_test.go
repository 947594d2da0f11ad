package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	kernels "github.com/gocoll/gocoll/internal/kernel"
)

func TestIterations(t *testing.T) {
	tests := []struct {
		bytes int64
		scale float64
		want  int
	}{
		{8, 1, 1000},
		{256 << 10, 1, 1000},
		{1 << 20, 1, 256},
		{64 << 20, 1, 10},
		{1 << 30, 1, 10},
		{1 << 20, 0.5, 128},
		{64 << 20, 0.1, 2}, // never fewer than 2
		{8, 3, 3000},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Iterations(tt.bytes, tt.scale), "%d bytes × %v", tt.bytes, tt.scale)
	}
	for iters, want := range map[int]int{2: 2, 10: 2, 25: 2, 30: 3, 1000: 100} {
		require.Equal(t, want, Warmup(iters), "warm-up of %d calls", iters)
	}
	for iters, want := range map[int]int{2: 1, 7: 1, 8: 2, 1000: 250} {
		require.Equal(t, want, CPUCalls(iters), "calls that measure the CPU time after %d timed ones", iters)
	}
}

// TestSettleBefore: the first point settles long, a point after one
// whose slowest call took a millisecond or more settles shortly, any
// other point not at all.
func TestSettleBefore(t *testing.T) {
	tests := []struct {
		name    string
		results []Result
		want    time.Duration
	}{
		{"first point", nil, settleFirst},
		{"after short calls", []Result{{MaxUS: 5000}, {MaxUS: 999}}, 0},
		{"after a long call", []Result{{MaxUS: 1}, {MaxUS: 1000}}, settleBetween},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { require.Equal(t, tt.want, settleBefore(tt.results)) })
	}
}

func TestConfigErrors(t *testing.T) {
	sizes := []int64{8}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown collective", Config{Collectives: []string{"allreduce", "allsum"}, Sizes: sizes}, `unknown collective "allsum"`},
		{"no sizes", Config{}, "no message sizes"},
		{"zero size", Config{Sizes: []int64{0}}, "message size 0"},
		{"unknown codec", Config{Sizes: sizes, Codecs: []string{"none", "lz4"}}, `unknown codec "lz4" (want one of [none bf16 fp16 zstd s2])`},
		{"objects without none", Config{Sizes: sizes, Codecs: []string{"bf16", "zstd"}, Objects: true},
			"the object collectives take no codec and are measured uncompressed, and the codecs (bf16, zstd) leave out none"},
		{"negative iters", Config{Sizes: sizes, Iters: -1}, "iteration count -1"},
		{"negative scale", Config{Sizes: sizes, Scale: -2}, "iteration scale -2"},
		{"unknown algorithm", Config{Sizes: sizes, Algorithms: []string{"ring", "fastest"}}, `unknown algorithm "fastest"`},
		{"algorithm of no collective", Config{Collectives: []string{"allreduce", "bcast"}, Sizes: sizes, Algorithms: []string{"bruck"}},
			"algorithm bruck applies to none of allreduce, bcast (it applies to allgather)"},
		{"algorithm that cannot be forced", Config{Collectives: []string{"barrier"}, Sizes: sizes, Algorithms: []string{"dissemination"}},
			"algorithm dissemination applies to none of barrier (it applies to no collective that takes an algorithm)"},
		{"objects without allreduce", Config{Collectives: []string{"gather"}, Sizes: sizes, Objects: true}, "the object sweep measures allreduce, bcast and allgather"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, tt.cfg.Validate(), tt.want)
		})
	}
	require.NoError(t, Config{Sizes: sizes, Algorithms: []string{"auto", "all", "ring"}, Codecs: []string{"none"}, Objects: true}.Validate())
	require.NoError(t, Config{Sizes: sizes, Codecs: []string{"none", "bf16", "fp16", "zstd", "s2"}, Objects: true}.Validate())
	require.NoError(t, Config{Sizes: sizes, Codecs: []string{"bf16"}}.Validate(), "a sweep without objects needs no none")
}

// names writes points as collective/algo/bytes, or
// collective/algo/codec/bytes with a codec other than none.
func names(pts []point) []string {
	var s []string
	for _, p := range pts {
		if p.codec != codec.None {
			s = append(s, fmt.Sprintf("%s/%s/%s/%d", p.collective, p.algoName(), p.codec, p.bytes))
			continue
		}
		s = append(s, fmt.Sprintf("%s/%s/%d", p.collective, p.algoName(), p.bytes))
	}
	return s
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		topo topology
		want []string
	}{
		{"defaults", Config{Sizes: []int64{8, 12}}, topology{ranks: 2},
			[]string{"allreduce/auto/8", "allreduce/auto/12", "bcast/auto/8", "bcast/auto/12", "gather/auto/8"}},
		{"sizes that do not split are skipped", Config{Collectives: []string{"scatter", "alltoall", "reducescatter", "allgather"}, Sizes: []int64{6, 12, 16}},
			topology{ranks: 3}, []string{"scatter/auto/12", "alltoall/auto/12", "reducescatter/auto/12", "allgather/auto/12"}},
		{"named algorithms apply where they can", Config{Collectives: []string{"allreduce", "bcast", "allgather"}, Sizes: []int64{8},
			Algorithms: []string{"ring", "tree"}}, topology{ranks: 2},
			[]string{"allreduce/ring/8", "allreduce/tree/8", "bcast/tree/8", "allgather/ring/8"}},
		{"all without shared memory", Config{Collectives: []string{"allreduce", "bcast"}, Sizes: []int64{8}, Algorithms: []string{"all"}},
			topology{ranks: 2}, []string{"allreduce/recursive_doubling/8", "allreduce/ring/8", "allreduce/ring_chunked/8",
				"allreduce/rabenseifner/8", "allreduce/tree/8", "bcast/tree/8", "bcast/linear/8", "bcast/chain/8", "bcast/scatter_allgather/8"}},
		{"all with shared memory and auto", Config{Collectives: []string{"gather", "reduce"}, Sizes: []int64{8}, Algorithms: []string{"all", "auto"}},
			topology{ranks: 2, shared: true}, []string{"gather/auto/8", "gather/tree/8", "gather/linear/8", "gather/shm/8",
				"reduce/auto/8", "reduce/tree/8", "reduce/rabenseifner/8", "reduce/shm/8"}},
		{"hierarchical across hosts", Config{Collectives: []string{"allreduce"}, Sizes: []int64{8}, Algorithms: []string{"shm", "hierarchical"}},
			topology{ranks: 4, hierarchical: true}, []string{"allreduce/hierarchical/8"}},
		{"barrier once, whatever the sizes", Config{Collectives: []string{"barrier"}, Sizes: []int64{8, 16}, Algorithms: []string{"all"}},
			topology{ranks: 2}, []string{"barrier/auto/0"}},
		{"barrier has no named algorithm", Config{Collectives: []string{"barrier", "allreduce"}, Sizes: []int64{8}, Algorithms: []string{"ring"}},
			topology{ranks: 2}, []string{"allreduce/ring/8"}},
		{"objects after their typed collective", Config{Collectives: []string{"allgather", "allreduce"}, Sizes: []int64{8, 16}, Objects: true},
			topology{ranks: 4}, []string{"allgather/auto/16", "allgather_object/raw/16", "allreduce/auto/8", "allreduce/auto/16",
				"allreduce_object/raw/8", "allreduce_object/raw/16"}},
		{"each codec after the algorithm and chunk", Config{Collectives: []string{"bcast"}, Sizes: []int64{8, 16}, Algorithms: []string{"auto", "chain"},
			Chunks: []int{4}, Codecs: []string{"none", "bf16"}}, topology{ranks: 2},
			[]string{"bcast/auto/8", "bcast/auto/16", "bcast/auto/bf16/8", "bcast/auto/bf16/16",
				"bcast/chain/8", "bcast/chain/16", "bcast/chain/bf16/8", "bcast/chain/bf16/16"}},
		{"shared memory takes no codec", Config{Collectives: []string{"allreduce"}, Sizes: []int64{8}, Algorithms: []string{"shm", "hierarchical", "ring"},
			Codecs: []string{"none", "zstd", "fp16"}}, topology{ranks: 4, shared: true, hierarchical: true},
			[]string{"allreduce/ring/8", "allreduce/ring/zstd/8", "allreduce/ring/fp16/8", "allreduce/shm/8", "allreduce/hierarchical/8"}},
		{"barrier and objects once, uncompressed", Config{Collectives: []string{"barrier", "allgather"}, Sizes: []int64{8},
			Codecs: []string{"none", "s2"}, Objects: true}, topology{ranks: 2},
			[]string{"barrier/auto/0", "allgather/auto/8", "allgather/auto/s2/8", "allgather_object/raw/8"}},
		{"a codec alone", Config{Collectives: []string{"allreduce"}, Sizes: []int64{8}, Algorithms: []string{"all"}, Codecs: []string{"bf16"}},
			topology{ranks: 2, shared: true}, []string{"allreduce/recursive_doubling/bf16/8", "allreduce/ring/bf16/8",
				"allreduce/ring_chunked/bf16/8", "allreduce/rabenseifner/bf16/8", "allreduce/tree/bf16/8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, req, err := tt.cfg.withDefaults()
			require.NoError(t, err)
			require.Equal(t, tt.want, names(cfg.plan(req, tt.topo)))
		})
	}
}

// TestAlgorithmsMatchCollective: the algorithms bench forces on each
// collective, uncompressed and with a codec, are exactly those collective
// accepts, on a communicator of one rank (where shm needs no segment and
// hierarchical cannot run), and bench names every collective it
// measures.
func TestAlgorithmsMatchCollective(t *testing.T) {
	for name := range builders {
		if strings.HasSuffix(name, "_object") || name == "barrier" {
			continue
		}
		for a := collective.Algorithm(1); a.Valid(); a++ {
			for _, c := range []codec.ID{codec.None, codec.BF16} {
				t.Run(name+"/"+a.String()+"/"+c.String(), func(t *testing.T) {
					comms, err := comm.NewLocal(1)
					require.NoError(t, err)
					defer comms[0].Close()
					k, err := newKernel(t.Context(), comms[0], point{collective: name, algo: a, codec: c, bytes: 16}, false)
					require.NoError(t, err)
					err = k.call()
					want := slices.Contains(Algorithms(name), a) && (topology{ranks: 1}).runs(a) && (c == codec.None || a.Compresses())
					if want {
						require.NoError(t, err)
					} else {
						require.ErrorIs(t, err, comm.ErrInvalid)
					}
				})
			}
		}
	}
	for _, name := range Collectives {
		require.Contains(t, builders, name)
	}
	for _, name := range objectCollectives {
		require.Contains(t, builders, name)
	}
}

// runAll runs f on every rank of a job of n ranks in this process, over
// in-memory links unless opts say otherwise.
func runAll(t *testing.T, n int, f func(c *comm.Comm) error, opts ...comm.Option) []error {
	t.Helper()
	comms, err := comm.NewLocal(n, append([]comm.Option{comm.WithTimeout(30 * time.Second)}, opts...)...)
	require.NoError(t, err)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			defer c.Close()
			errs[r] = f(c)
		})
	}
	wg.Wait()
	return errs
}

func TestRun(t *testing.T) {
	cfg := Config{Collectives: Collectives, Sizes: []int64{8, 12, 48}, Algorithms: []string{"auto", "ring"},
		Iters: 3, Objects: true, Transport: "mem"}
	results := make([][]Result, 3)
	var progress [][2]int
	errs := runAll(t, 3, func(c *comm.Comm) error {
		var report func(done, total int)
		if c.Rank() == 0 {
			report = func(done, total int) { progress = append(progress, [2]int{done, total}) }
		}
		var err error
		results[c.Rank()], err = Run(t.Context(), c, cfg, report)
		return err
	})
	require.NoError(t, errors.Join(errs...))

	var got []string
	for _, r := range results[0] {
		got = append(got, fmt.Sprintf("%s/%s/%d", r.Collective, r.Asked(), r.Bytes))
		require.Equal(t, "gocoll", r.Impl)
		require.Equal(t, "mem", r.Transport)
		require.Equal(t, "mem", r.Link, "%+v", r)
		switch {
		case strings.HasSuffix(r.Collective, "_object"):
			require.Equal(t, "raw", r.Algo)
		case r.Auto:
			_, err := collective.ParseAlgorithm(r.Algo)
			require.NoError(t, err, "%+v: the selector's choice is recorded", r)
			require.NotEqual(t, "auto", r.Algo, "%+v: the selector's choice is recorded", r)
		default:
			require.Equal(t, "ring", r.Algo, "%+v", r)
		}
		require.Equal(t, 3, r.NP)
		require.Equal(t, "none", r.Codec)
		require.Positive(t, r.AvgUS, "%+v", r)
		require.LessOrEqual(t, r.MinUS, r.AvgUS, "%+v", r)
		require.GreaterOrEqual(t, r.MaxUS, r.AvgUS, "%+v", r)
		require.GreaterOrEqual(t, r.CPUUS, 0.0, "%+v", r)
		if r.Collective != "barrier" {
			require.InDelta(t, float64(r.Bytes)/(r.AvgUS*1e3), r.AlgBW, 1e-12)
			require.Positive(t, r.BusBW, "%+v", r)
		}
	}
	require.Equal(t, []string{
		"allreduce/auto/8", "allreduce/auto/12", "allreduce/auto/48",
		"allreduce/ring/8", "allreduce/ring/12", "allreduce/ring/48",
		"allreduce_object/raw/8", "allreduce_object/raw/12", "allreduce_object/raw/48",
		"reduce/auto/8", "reduce/auto/12", "reduce/auto/48",
		"bcast/auto/8", "bcast/auto/12", "bcast/auto/48", "bcast_object/raw/8", "bcast_object/raw/12", "bcast_object/raw/48",
		"gather/auto/12", "gather/auto/48",
		"scatter/auto/12", "scatter/auto/48",
		"gatherv/auto/12", "gatherv/auto/48", "scatterv/auto/12", "scatterv/auto/48",
		"allgather/auto/12", "allgather/auto/48", "allgather/ring/12", "allgather/ring/48",
		"allgather_object/raw/12", "allgather_object/raw/48",
		"allgatherv/auto/12", "allgatherv/auto/48", "allgatherv/ring/12", "allgatherv/ring/48",
		"reducescatter/auto/12", "reducescatter/auto/48", "reducescatter/ring/12", "reducescatter/ring/48",
		"alltoall/auto/12", "alltoall/auto/48",
		"scan/auto/8", "scan/auto/12", "scan/auto/48", "exscan/auto/8", "exscan/auto/12", "exscan/auto/48",
		"barrier/auto/0",
	}, got)
	require.Equal(t, results[0], results[1], "every rank returns the same results")
	require.Equal(t, results[0], results[2], "every rank returns the same results")
	require.Len(t, progress, len(got))
	require.Equal(t, [2]int{len(got), len(got)}, progress[len(progress)-1])
}

// TestRunTakesOffTheCPUReadings: the CPU time a point reports is its
// calls' own, without what reading the CPU time around each call costs.
// Here a clock that advances 1 µs a reading and with nothing else: the
// calls cost nothing, and cpu_us is 0, not the readings' 1 µs a call.
func TestRunTakesOffTheCPUReadings(t *testing.T) {
	var now time.Duration
	defer func(clock func() time.Duration) { cpuClock = clock }(cpuClock)
	cpuClock = func() time.Duration {
		now += time.Microsecond
		return now
	}
	cfg := Config{Collectives: []string{"allreduce", "bcast"}, Sizes: []int64{8, 4096}, Iters: 10, Transport: "mem"}
	var results []Result
	errs := runAll(t, 1, func(c *comm.Comm) error {
		var err error
		results, err = Run(t.Context(), c, cfg, nil)
		return err
	})
	require.NoError(t, errors.Join(errs...))
	require.Len(t, results, 4)
	for _, r := range results {
		require.Zero(t, r.CPUUS, "%+v", r)
	}
}

// TestRunRegistered: a sweep on registered buffers says so in its impl
// column. Where the ranks share a segment, every call of every point of a
// collective that has a direct path goes direct between the buffers, at a
// size past every threshold of collective/direct.go (the results do not
// say it; each rank's segment counts them); an ordinary sweep goes direct
// nowhere. Over tcp, which has no segment, a registered sweep does not
// fail: it measures its registered buffers through the links, and its
// link column says so.
func TestRunRegistered(t *testing.T) {
	const n, iters = 2, 2
	calls := Warmup(iters) + iters + CPUCalls(iters) // of each point: warm-up, timed, CPU-timed
	collectives := []string{"allreduce", "reducescatter", "bcast", "gather", "scatter", "allgather", "allgatherv", "alltoall"}
	tests := []struct {
		name, transport string
		registered      bool
		impl, link      string
		direct          int // calls of each point that go direct
	}{
		{"registered over the segment", "auto", true, "gocoll-registered", "segment", calls},
		{"ordinary over the segment", "auto", false, "gocoll", "segment", 0},
		{"registered over tcp", "tcp", true, "gocoll-registered", "tcp", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Collectives: collectives, Sizes: []int64{512 << 10}, Iters: iters, Registered: tt.registered, Transport: tt.transport}
			results := make([][]Result, n)
			ops := make([][]int, n) // of each rank, by point: those that went direct
			errs := runAll(t, n, func(c *comm.Comm) error {
				s := (*core.Comm)(c).Segment()
				if (s != nil) != (tt.link == "segment") {
					return fmt.Errorf("rank %d: segment %v over %s", c.Rank(), s != nil, tt.transport)
				}
				directOps := func() int {
					if s == nil {
						return 0
					}
					return int(s.DirectOps())
				}
				last := directOps()
				var err error
				results[c.Rank()], err = Run(t.Context(), c, cfg, func(done, total int) {
					ops[c.Rank()] = append(ops[c.Rank()], directOps()-last)
					last = directOps()
				})
				return err
			}, comm.WithTransport(tt.transport))
			require.NoError(t, errors.Join(errs...))
			require.Len(t, results[0], len(collectives))
			for i, r := range results[0] {
				require.Equal(t, collectives[i], r.Collective)
				require.Equal(t, tt.impl, r.Impl, "%+v", r)
				require.Equal(t, tt.transport, r.Transport, "%+v", r)
				require.Equal(t, tt.link, r.Link, "%+v", r)
				for rank := range n {
					require.Equal(t, tt.direct, ops[rank][i], "%s: rank %d's calls that went direct", r.Collective, rank)
				}
			}
		})
	}
}

// TestRunCodecs: a sweep over codecs measures each typed point once per
// codec, in the order plan gives, says so in the codec column, and checks
// every result exactly, lossy codecs included. Bytes and the bandwidths
// count the float32 data, whatever the codec.
func TestRunCodecs(t *testing.T) {
	codecs := []string{"none", "bf16", "fp16", "zstd", "s2", "auto"}
	cfg := Config{Collectives: Collectives, Sizes: []int64{12, 48, 96 << 10}, Algorithms: []string{"auto", "ring"},
		Chunks: []int{4 << 10}, Codecs: codecs, Iters: 3, Objects: true, Transport: "mem"}
	results := make([][]Result, 3)
	errs := runAll(t, 3, func(c *comm.Comm) error {
		var err error
		results[c.Rank()], err = Run(t.Context(), c, cfg, nil)
		return err
	})
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, results[0], results[1], "every rank returns the same results")

	count := map[string]int{}
	for _, r := range results[0] {
		count[r.Codec]++
		require.InDelta(t, float64(r.Bytes)/(r.AvgUS*1e3), r.AlgBW, 1e-12, "%+v", r)
		if r.Collective == "barrier" || strings.HasSuffix(r.Collective, "_object") {
			require.Equal(t, "none", r.Codec, "%+v takes no codec", r)
		}
	}
	typed := count["bf16"]
	require.Positive(t, typed)
	for _, c := range codecs[1:] {
		require.Equal(t, typed, count[c], "codec %s", c)
	}
	// none also has the barrier and the three object collectives at
	// their sizes (allgather's split 12 and 48 bytes; 96 KiB splits too).
	require.Equal(t, typed+1+3+3+3, count["none"])
}

// TestValues: the data of every point, for every codec and a range of
// rank counts, are whole numbers that the codec leaves unchanged, and so
// is every sum over the ranks where the collective sums; a missing rank's
// contribution changes every sum, the pattern being at least 1; and the
// stamps, and their sums, change from call to call.
func TestValues(t *testing.T) {
	for _, c := range codec.IDs() {
		limit := exactUpTo(c)
		if c.Lossy() {
			// exactUpTo is the codec's own bound: every whole number up to
			// it survives the rounding, and the next does not.
			for v := range limit + 1 {
				require.Equal(t, float32(v), round(c, float32(v)), "%s: %d", c, v)
			}
			require.NotEqual(t, float32(limit+1), round(c, float32(limit+1)), "%s: %d", c, limit+1)
		}
		for _, name := range []string{"allreduce", "reducescatter", "bcast", "alltoall"} {
			for _, n := range []int{1, 2, 3, 4, 7, 64, 100, 128, 200, 256, 2048} {
				p := point{collective: name, codec: c}
				if p.top(n) < 1 {
					require.True(t, sums(name) && n > limit, "%s on %d ranks with %s", name, n, c)
					require.ErrorContains(t, p.checkable(n), fmt.Sprintf("measure it on at most %d ranks", limit))
					continue
				}
				require.NoError(t, p.checkable(n))
				v := newValues(p.top(n))
				t.Run(fmt.Sprintf("%s/%s/%d", c, name, n), func(t *testing.T) {
					requireExact(t, c, limit, n, 300, sums(name), 1, v.pattern)
					requireExact(t, c, limit, n, 2100, sums(name), 0, v.stamp)
					var prev float32 = -1
					for it := range 2100 {
						var sum float32
						for r := range n {
							sum += v.stamp(r, it)
						}
						if sum == prev {
							t.Fatalf("the stamps of calls %d and %d both sum to %v", it-1, it, sum)
						}
						prev = sum
					}
				})
			}
		}
	}
}

// requireExact checks f(r, i) for n ranks and m elements: each value is a
// whole number from least to limit, and it, or with sum each running sum
// over the ranks, is at most limit and unchanged by codec c.
func requireExact(t *testing.T, c codec.ID, limit, n, m int, sum bool, least float32, f func(r, i int) float32) {
	t.Helper()
	for i := range m {
		var s float32
		for r := range n {
			x := f(r, i)
			if x != float32(math.Trunc(float64(x))) || x < least {
				t.Fatalf("rank %d, element %d: %v, want a whole number of at least %v", r, i, x, least)
			}
			if !sum {
				s = 0
			}
			s += x
			if s > float32(limit) || round(c, s) != s {
				t.Fatalf("rank %d, element %d: %v, which its %v makes, is not exact through %s", r, i, s, x, c)
			}
		}
	}
}

// round returns x after a trip through c.
func round(c codec.ID, x float32) float32 {
	b := []float32{x}
	kernels.Round(c, b)
	return b[0]
}

// TestVerifyCatchesAWrongValue: one wrong element on one rank, at the
// first element after a call or elsewhere after the last, fails that rank
// with an error that names the collective, size, rank and element, and
// the other ranks with the abort.
func TestVerifyCatchesAWrongValue(t *testing.T) {
	tests := []struct {
		collective string
		codec      codec.ID
		index      int
		iteration  int
	}{
		{"allreduce", codec.None, 0, 0},
		{"allreduce", codec.None, 5, -1},
		{"allreduce", codec.BF16, 0, 0},
		{"allreduce", codec.FP16, 6, -1},
		{"bcast", codec.None, 7, -1},
		{"bcast", codec.BF16, 7, -1},
		{"allgather", codec.None, 4, 0}, // block 1 starts at 4 with 2 ranks of 16 bytes
		{"alltoall", codec.Zstd, 3, -1},
		{"reducescatter", codec.None, 1, -1},
		{"reducescatter", codec.BF16, 0, 0},
		{"allreduce_object", codec.None, 2, -1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%d", tt.collective, tt.codec, tt.index), func(t *testing.T) {
			p := point{collective: tt.collective, codec: tt.codec, object: strings.HasSuffix(tt.collective, "_object"), bytes: 32}
			errs := runAll(t, 2, func(c *comm.Comm) error {
				k, err := newKernel(t.Context(), c, p, false)
				if err != nil {
					return err
				}
				if c.Rank() == 1 {
					call := k.call
					k.call = func() error {
						err := call()
						k.out[tt.index] += 100
						return err
					}
				}
				_, err = measure(t.Context(), c, k, 3)
				if err != nil {
					c.Abort(err)
				}
				return err
			})
			var ve *VerifyError
			require.ErrorAs(t, errs[1], &ve)
			require.Equal(t, tt.collective, ve.Collective)
			require.Equal(t, int64(32), ve.Bytes)
			require.Equal(t, 1, ve.Rank)
			require.Equal(t, tt.index, ve.Index)
			require.Equal(t, tt.iteration, ve.Iteration)
			require.Equal(t, ve.Want+100, ve.Got)
			require.Equal(t, tt.codec.String(), ve.Codec)
			require.ErrorContains(t, errs[1], fmt.Sprintf("wrong result of %s of 32 bytes", tt.collective))
			require.ErrorContains(t, errs[1], fmt.Sprintf("rank 1 holds %v at element %d", ve.Got, tt.index))
			require.ErrorIs(t, errs[0], comm.ErrAborted)
		})
	}
}

func TestRunAbortsTheOtherRanks(t *testing.T) {
	// Rank 1 asks for an algorithm the others do not: the collective
	// refuses the mismatch and every rank's Run fails instead of hanging.
	errs := runAll(t, 2, func(c *comm.Comm) error {
		algo := "ring"
		if c.Rank() == 1 {
			algo = "tree"
		}
		_, err := Run(context.Background(), c, Config{Collectives: []string{"allreduce"}, Sizes: []int64{1024},
			Algorithms: []string{algo}, Iters: 2}, nil)
		return err
	})
	require.Error(t, errs[0])
	require.Error(t, errs[1])
}

func TestRunWithNothingToMeasure(t *testing.T) {
	errs := runAll(t, 3, func(c *comm.Comm) error {
		_, err := Run(t.Context(), c, Config{Collectives: []string{"gather"}, Sizes: []int64{8, 16}}, nil)
		return err
	})
	for _, err := range errs {
		require.ErrorContains(t, err, "nothing to measure: no size of [8 16] bytes suits gather on 3 ranks with auto")
	}
}

func TestWriteTable(t *testing.T) {
	results := []Result{
		{Collective: "allreduce", Bytes: 8, Algo: "shm", Link: "segment", Auto: true, AvgUS: 12.345, MinUS: 10, P50US: 11, P99US: 19.5, MaxUS: 20, CPUUS: 24.5, AlgBW: 0.0006, BusBW: 0.0006},
		{Collective: "allreduce", Bytes: 8, Algo: "recursive_doubling", Link: "shm", AvgUS: 20, AlgBW: 0.0004, BusBW: 0.0004},
		{Collective: "allgather_object", Bytes: 64 << 20, Algo: "gob", Link: "segment+shm", AvgUS: 123456.7, MinUS: 1, MaxUS: 2, AlgBW: 5.4, BusBW: 2.7},
	}
	var b strings.Builder
	require.NoError(t, WriteTable(&b, results))
	require.Equal(t, ""+
		"collective        size    algo                link            avg µs  min µs  p50 µs  p99 µs  max µs  cpu µs  algbw GB/s  busbw GB/s\n"+
		"allreduce         8 B     shm (auto)          segment          12.35   10.00   11.00   19.50   20.00   24.50       0.001       0.001\n"+
		"allreduce         8 B     recursive_doubling  shm              20.00    0.00    0.00    0.00    0.00    0.00       0.000       0.000\n"+
		"allgather_object  64 MiB  gob                 segment+shm  123456.70    1.00    0.00    0.00    2.00    0.00       5.400       2.700\n", b.String(),
		"the algorithm that ran, marked where the selector chose it, and its link")

	results = []Result{
		{Collective: "allreduce", Bytes: 1 << 20, Algo: "ring_chunked", Chunk: 64 << 10, Codec: "none", AvgUS: 100, AlgBW: 10, BusBW: 15},
		{Collective: "allreduce", Bytes: 1 << 20, Algo: "auto", Codec: "bf16", AvgUS: 50, AlgBW: 20, BusBW: 30},
	}
	b.Reset()
	require.NoError(t, WriteTable(&b, results))
	require.Equal(t, ""+
		"collective  size   algo          chunk    codec  avg µs  min µs  p50 µs  p99 µs  max µs  cpu µs  algbw GB/s  busbw GB/s\n"+
		"allreduce   1 MiB  ring_chunked  64 KiB   none   100.00    0.00    0.00    0.00    0.00    0.00      10.000      15.000\n"+
		"allreduce   1 MiB  auto          default  bf16    50.00    0.00    0.00    0.00    0.00    0.00      20.000      30.000\n", b.String(),
		"the chunk and codec columns appear when a result needs them")
}

func TestProgressBar(t *testing.T) {
	var b strings.Builder
	p := NewProgressBar(&b)
	p.Clear() // nothing drawn, nothing to clear
	require.Empty(t, b.String())
	p.Update(1, 4)
	require.Equal(t, "\r["+strings.Repeat("#", 10)+strings.Repeat(" ", 30)+"] 1/4 points", b.String())
	b.Reset()
	p.Update(4, 4)
	require.Contains(t, b.String(), "["+strings.Repeat("#", 40)+"] 4/4 points")
	b.Reset()
	p.Clear()
	require.True(t, strings.HasPrefix(b.String(), "\r") && strings.HasSuffix(b.String(), "\r"))
	require.Empty(t, strings.Trim(b.String(), "\r "))
}
