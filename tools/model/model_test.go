package model

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/bench"
)

// truth are the parameters the synthetic points are made with: 5 µs per
// message, 4 GB/s links, reduction at 10 GB/s.
var truth = Params{Alpha: 5, Beta: 2.5e-4, Gamma: 1e-4, GammaFitted: true}

// synthetic makes points of the given collective/algorithm pairs for np
// ranks at sizes 8 B to 64 MiB, timed by params, each time scaled by a
// random factor within 1 ± noise.
func synthetic(t *testing.T, params Params, noise float64, algos [][2]string, nps ...int) []bench.Result {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var points []bench.Result
	for _, ca := range algos {
		for _, np := range nps {
			for n := int64(8); n <= 64<<20; n *= 4 {
				r := bench.Result{Impl: "gocoll", Transport: "tcp", NP: np, Collective: ca[0], Algo: ca[1], Bytes: n, Codec: "none"}
				terms, err := TermsOf(&r)
				require.NoError(t, err)
				r.SetTime(terms.Time(params) * (1 + noise*(2*rng.Float64()-1)))
				points = append(points, r)
			}
		}
	}
	return points
}

var allreduceAlgos = [][2]string{
	{"allreduce", "recursive_doubling"}, {"allreduce", "ring"}, {"allreduce", "rabenseifner"}, {"allreduce", "tree"},
}

func TestFitRecovers(t *testing.T) {
	tests := []struct {
		name  string
		noise float64
		tol   float64 // relative
		algos [][2]string
	}{
		{"exact allreduce", 0, 1e-9, allreduceAlgos},
		{"exact bcast and gather", 0, 1e-9, [][2]string{{"bcast", "tree"}, {"gather", "linear"}, {"reduce", "tree"}}},
		{"exact every formula", 0, 1e-9, [][2]string{
			{"allreduce", "ring_chunked"}, {"bcast", "chain"}, {"bcast", "scatter_allgather"}, {"scatter", "tree"},
			{"allgather", "ring"}, {"allgather", "bruck"}, {"reducescatter", "ring"}, {"reducescatter", "recursive_halving"},
		}},
		{"1% noise", 0.01, 0.02, allreduceAlgos},
		{"5% noise", 0.05, 0.1, allreduceAlgos},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Fit(synthetic(t, truth, tt.noise, tt.algos, 2, 3, 4, 8))
			require.NoError(t, err)
			require.True(t, got.GammaFitted)
			require.InEpsilon(t, truth.Alpha, got.Alpha, tt.tol)
			require.InEpsilon(t, truth.Beta, got.Beta, tt.tol)
			require.InEpsilon(t, truth.Gamma, got.Gamma, tt.tol)
		})
	}
}

// TestFitGammaHidden fits points that all reduce half of what they send
// (ring and tree): γ cannot be told from β and goes into it.
func TestFitGammaHidden(t *testing.T) {
	got, err := Fit(synthetic(t, truth, 0, [][2]string{{"allreduce", "ring"}, {"allreduce", "tree"}}, 2, 4, 8))
	require.NoError(t, err)
	require.False(t, got.GammaFitted)
	require.Zero(t, got.Gamma)
	require.InEpsilon(t, truth.Alpha, got.Alpha, 1e-9)
	require.InEpsilon(t, truth.Beta+truth.Gamma/2, got.Beta, 1e-9)
}

// TestFitNonNegative fits points that a negative γ would explain best.
func TestFitNonNegative(t *testing.T) {
	odd := Params{Alpha: 5, Beta: 2.5e-4, Gamma: -1e-4}
	got, err := Fit(synthetic(t, odd, 0, allreduceAlgos, 2, 4, 8))
	require.NoError(t, err)
	require.Zero(t, got.Gamma)
	require.Greater(t, got.Alpha, 0.0)
	require.Greater(t, got.Beta, 0.0)
}

func TestFitErrors(t *testing.T) {
	point := func(algo string, np int, n int64, us float64) bench.Result {
		r := bench.Result{Collective: "allreduce", Algo: algo, NP: np, Bytes: n}
		r.SetTime(us)
		return r
	}
	good := []bench.Result{point("ring", 4, 8, 30), point("ring", 4, 1<<20, 900)}
	tests := []struct {
		name   string
		points []bench.Result
		want   string
	}{
		{"none", nil, "0 points: need at least 3"},
		{"two", good, "2 points: need at least 3"},
		{"one size", []bench.Result{point("ring", 4, 64, 30), point("ring", 4, 64, 31), point("ring", 4, 64, 29)}, "do not tell α from β"},
		{"auto", append(good, point("auto", 4, 64, 30)), "allreduce auto np=4 64 B: no cost formula"},
		{"no algo", append(good, point("", 4, 64, 30)), "no cost formula"},
		{"shm", append(good, point("shm", 4, 64, 30)), "no cost formula"},
		{"one rank", append(good, point("ring", 1, 64, 1)), "1 rank(s), which move nothing"},
		{"codec", append(good, bench.Result{Collective: "allreduce", Algo: "ring", NP: 4, Bytes: 64, AvgUS: 3, Codec: "bf16"}), "no cost formula for codec bf16"},
		{"zero time", append(good, point("ring", 4, 64, 0)), "time 0 µs: want a positive time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Fit(tt.points)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestCost(t *testing.T) {
	const n = 1 << 20
	tests := []struct {
		coll, algo string
		p, chunk   int
		want       Terms
	}{
		{"allreduce", "recursive_doubling", 8, 0, Terms{3, 3 * n, 3 * n}},
		{"allreduce", "recursive_doubling", 6, 0, Terms{4, 4 * n, 3 * n}}, // fold into 4 ranks
		{"allreduce", "ring", 4, 0, Terms{6, 1.5 * n, 0.75 * n}},
		{"allreduce", "ring_chunked", 4, 64 << 10, Terms{6 * 4, 1.5 * n, 0.75 * n}}, // 256 KiB blocks in 4 chunks
		{"allreduce", "ring_chunked", 4, 0, Terms{6, 1.5 * n, 0.75 * n}},            // the default chunk is a whole block
		{"allreduce", "rabenseifner", 8, 0, Terms{6, 1.75 * n, 0.875 * n}},
		{"allreduce", "rabenseifner", 5, 0, Terms{6, 1.5*n + 2*n, 0.75*n + n}},
		{"allreduce", "tree", 5, 0, Terms{6, 6 * n, 3 * n}},
		{"bcast", "tree", 8, 0, Terms{3, 3 * n, 0}},
		{"bcast", "chain", 4, 256 << 10, Terms{6, 6 * (256 << 10), 0}}, // 4 chunks: 3 hops, then 3 more
		{"bcast", "scatter_allgather", 4, 0, Terms{5, 1.5 * n, 0}},
		{"gather", "linear", 4, 0, Terms{3, 0.75 * n, 0}},
		{"scatter", "tree", 4, 0, Terms{2, 0.75 * n, 0}},
		{"allgather", "bruck", 5, 0, Terms{3, 0.8 * n, 0}},
		{"reducescatter", "ring", 4, 0, Terms{3, 0.75 * n, 0.75 * n}},
		{"reduce", "tree", 4, 0, Terms{2, 2 * n, 2 * n}},
		{"barrier", "dissemination", 5, 0, Terms{3, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.coll+"/"+tt.algo, func(t *testing.T) {
			got, err := Cost(tt.coll, tt.algo, tt.p, n, tt.chunk)
			require.NoError(t, err)
			require.InDelta(t, tt.want.Messages, got.Messages, 1e-9)
			require.InDelta(t, tt.want.Bytes, got.Bytes, 1e-6)
			require.InDelta(t, tt.want.Reduced, got.Reduced, 1e-6)
		})
	}
	_, err := Cost("alltoall", "pairwise", 4, n, 0)
	require.ErrorIs(t, err, ErrNoFormula)
}

func TestPredictAndWinner(t *testing.T) {
	// 10 µs per message, 10 GB/s links and reduction.
	params := Params{Alpha: 10, Beta: 1e-4, Gamma: 1e-4}
	const gib = 1 << 30
	tests := []struct {
		name   string
		params Params
		p      int
		n      float64
		winner string
		us     float64
	}{
		// 3 steps of α + 1 KiB·(β+γ): latency bound.
		{"small", params, 8, 1024, "recursive_doubling", 3*10 + 3*1024*2e-4},
		// 6 messages, 1.75 GiB sent, 0.875 GiB reduced: Rabenseifner sends
		// what the ring sends in fewer messages.
		{"large", params, 8, gib, "rabenseifner", 6*10 + 1.75*gib*1e-4 + 0.875*gib*1e-4},
		{"large, many ranks", params, 4096, gib, "rabenseifner", 24*10 + 2*4095.0/4096*gib*1e-4 + 4095.0/4096*gib*1e-4},
		// Without latency ring and Rabenseifner tie; ring is listed first.
		{"no latency", Params{Beta: 1e-4, Gamma: 1e-4}, 8, gib, "ring", 1.75*gib*1e-4 + 0.875*gib*1e-4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alg, us, err := Winner(tt.p, tt.n, tt.params)
			require.NoError(t, err)
			require.Equal(t, tt.winner, alg)
			require.InEpsilon(t, tt.us, us, 1e-12)
			pred, err := Predict(alg, tt.p, tt.n, tt.params)
			require.NoError(t, err)
			require.Equal(t, us, pred)
		})
	}
	ring, err := Predict("ring", 8, gib, params)
	require.NoError(t, err)
	require.InEpsilon(t, 14*10+1.75*gib*1e-4+0.875*gib*1e-4, ring, 1e-12)
	_, err = Predict("bruck", 8, 1024, params)
	require.ErrorIs(t, err, ErrNoFormula)
	_, _, err = Winner(1, 1024, params)
	require.Error(t, err)
}

func TestHoldout(t *testing.T) {
	points := synthetic(t, truth, 0, allreduceAlgos, 2, 4) // 4 algorithms × 2 np × 12 sizes
	t.Run("every 4th", func(t *testing.T) {
		fit, held, err := HoldEvery(points, 4)
		require.NoError(t, err)
		require.Len(t, held, len(points)/4)
		require.Len(t, fit, len(points)-len(points)/4)
		checkHeld(t, fit, held)
	})
	t.Run("largest", func(t *testing.T) {
		fit, held := HoldLargest(points)
		require.Len(t, held, 8, "one per series")
		for _, r := range held {
			require.Equal(t, int64(32<<20), r.Bytes)
		}
		checkHeld(t, fit, held)
	})
	t.Run("single-point series are kept", func(t *testing.T) {
		fit, held := HoldLargest(points[:1])
		require.Len(t, fit, 1)
		require.Empty(t, held)
	})
	t.Run("k too small", func(t *testing.T) {
		_, _, err := HoldEvery(points, 1)
		require.ErrorContains(t, err, "want k ≥ 2")
	})
}

// checkHeld fits fit and requires that it predicts held exactly, as the
// points carry no noise.
func checkHeld(t *testing.T, fit, held []bench.Result) {
	t.Helper()
	a, err := Analyze("gocoll tcp", fit, held)
	require.NoError(t, err)
	require.Len(t, a.Held, len(held))
	for _, r := range a.Held {
		require.InDelta(t, 0, r.RelErr, 1e-9, Describe(&r.Point))
	}
}

func TestWrite(t *testing.T) {
	points := synthetic(t, truth, 0.01, allreduceAlgos, 2, 4)
	fit, held, err := HoldEvery(points, 5)
	require.NoError(t, err)
	a, err := Analyze("gocoll tcp", fit, held)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, a.Write(&out))
	require.NoError(t, WriteProjection(&out, a.Params, ProjectedRanks, ProjectedSizes))
	text := out.String()
	for _, want := range []string{
		"gocoll tcp: fitted on", "α = 5.0", "GB/s)",
		"held out (not used to fit):", "median |error|",
		"rd = recursive_doubling", "4096", "1 GiB", "rab", "* marks the fastest",
	} {
		require.Contains(t, text, want)
	}
	require.False(t, math.IsNaN(a.Params.Alpha))
}
