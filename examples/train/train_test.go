package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/examples/internal/exampletest"
	"github.com/gocoll/gocoll/examples/internal/ranks"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

// testConfig is small enough for the race detector: 5 epochs of 32 steps
// of an 8-16-3 MLP, with a bucket limit that puts each layer's gradients
// in buckets of their own.
func testConfig() config {
	return config{
		Features: 8, Hidden: []int{16}, Classes: 3,
		Samples: 1024, Batch: 32, Epochs: 5, LR: 0.2, Seed: 7,
		BucketBytes: 256,
	}
}

// runTrain trains cfg on n ranks in this process and returns every rank's
// result.
func runTrain(t *testing.T, n int, cfg config) []result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res := make([]result, n)
	err := ranks.Run(ctx, n, nil, func(ctx context.Context, c *comm.Comm) error {
		var err error
		res[c.Rank()], err = train(ctx, c, cfg, io.Discard)
		return err
	})
	require.NoError(t, err)
	return res
}

// initialLoss is the mean loss of cfg's untrained model over its data set.
func initialLoss(cfg config) float64 {
	m := newMLP(cfg.Seed, cfg.sizes(), cfg.Samples)
	all := make([]int, cfg.Samples)
	for i := range all {
		all[i] = i
	}
	m.load(newDataset(cfg.Seed, cfg.Samples, cfg.Features, cfg.Classes), all)
	m.forward()
	return m.loss() / float64(cfg.Samples)
}

// TestTrain checks data parallelism against one rank on the same global
// batches: the loss of every epoch agrees within the bound of the case,
// the loss falls, and every rank ends with the same parameters, bit for
// bit, whatever the wire.
//
// The bound. One rank and n ranks compute the same per-sample values from
// the same parameters. They differ in how each gradient element, a sum
// of the B = 32 samples' terms, is grouped: one float32 sum of B terms,
// or n sums of B/n and then the allreduce's sum of n (the divisions by B/n
// and by n are by powers of two, exact). Each grouping is within
// (k−1)·u·Σ|terms| of the exact sum for k terms, u = 2^-24 (Higham,
// Accuracy and Stability of Numerical Algorithms, §4.2), so the two
// differ by at most δ = 2(B−1)·u = 3.7e-6 relative to Σ|terms|. With
// BF16, the allreduce rounds every value it leaves to 8 significant bits
// (7 stored and the implicit one): unit roundoff 2^-8, not 2^-9, and
// package codec bounds a compressed sum of n values by (n+1)·2^-8 relative
// to Σ|x_i|, so δ = (n+1)·2^-8 + 2(B−1)·u: 0.012 at n = 2, 0.020 at n = 4.
//
// Each step then moves the parameters by lr·g·(1+ε) with |ε| ≲ δ. To
// first order a step's decrease of the loss is scaled by 1+ε, so after
// any number of steps the loss differs by at most δ times the decrease so
// far, δ·(L0 − L_e), L0 the untrained model's loss: the worst case does
// not grow with the number of steps, because the errors scale the
// progress of each step and the progress sums to L0 − L_e. The test
// allows twice that, for the second-order terms and for cancellation
// among the terms, which makes an element's relative error larger than
// δ where Σ|terms| exceeds |Σ terms|. For this run (L0 ≈ 1.07, L_e from
// 0.74 down to 0.62) that is 3–5e-6 relative to the loss in float32,
// below the 1e-5 one would guess, and 1.0–1.7 % (n = 2) and 1.7–2.8 %
// (n = 4) with BF16. Roundings are unbiased, so over the S steps their
// effects mostly cancel instead of adding up: the differences measured
// are below 1e-8 (float32) and about 1e-5 (BF16) relative, far inside the
// bound. A Sum instead of an Avg, or BF16 on one side only, moves the
// loss by 5 % and more.
func TestTrain(t *testing.T) {
	const u32, ubf16 = 0x1p-24, 0x1p-8
	cfg := testConfig()
	l0 := initialLoss(cfg)
	ref := runTrain(t, 1, cfg)[0]
	require.Len(t, ref.Loss, cfg.Epochs)
	require.Less(t, ref.Loss[0], l0, "one rank: the first epoch must lower the loss")
	for e := 1; e < len(ref.Loss); e++ {
		require.Less(t, ref.Loss[e], ref.Loss[e-1], "one rank: the loss must fall every epoch: %v", ref.Loss)
	}

	// The plain runs, by rank count, for the BF16 cases to differ from.
	plain := map[int]result{}
	for _, tt := range []struct {
		ranks int
		bf16  bool
	}{
		{2, false},
		{4, false},
		{2, true},
		{4, true},
	} {
		t.Run(fmt.Sprintf("ranks=%d/bf16=%v", tt.ranks, tt.bf16), func(t *testing.T) {
			cfg := cfg
			cfg.BF16 = tt.bf16
			delta := 2 * float64(cfg.Batch-1) * u32
			if tt.bf16 {
				delta += float64(tt.ranks+1) * ubf16
			}
			res := runTrain(t, tt.ranks, cfg)
			for r, got := range res {
				require.Len(t, got.Loss, cfg.Epochs)
				// The loss is reduced once for all: every rank reports the same.
				require.Equal(t, res[0].Loss, got.Loss, "rank %d's losses", r)
				require.Equal(t, len(res[0].Params), len(got.Params))
				for i, p := range got.Params {
					if math.Float32bits(p) != math.Float32bits(res[0].Params[i]) {
						t.Fatalf("parameter %d of rank %d is %v (%#08x), rank 0's %v (%#08x)",
							i, r, p, math.Float32bits(p), res[0].Params[i], math.Float32bits(res[0].Params[i]))
					}
				}
				require.Equal(t, res[0].Hash, got.Hash)
			}
			for e, loss := range res[0].Loss {
				bound := 2 * delta * (l0 - ref.Loss[e])
				diff := math.Abs(loss - ref.Loss[e])
				t.Logf("epoch %d: loss %.7f, one rank's %.7f: relative difference %.2g, bound %.2g", e+1, loss, ref.Loss[e], diff/ref.Loss[e], bound/ref.Loss[e])
				require.LessOrEqual(t, diff, bound, "epoch %d: loss %v on %d ranks, %v on one", e+1, loss, tt.ranks, ref.Loss[e])
				if e > 0 {
					require.Less(t, loss, res[0].Loss[e-1], "the loss must fall every epoch: %v", res[0].Loss)
				}
			}
			if !tt.bf16 {
				plain[tt.ranks] = res[0]
			} else if p, ok := plain[tt.ranks]; ok {
				require.NotEqual(t, p.Hash, res[0].Hash, "BF16 must round the gradients, and so change the parameters")
			}
		})
	}
}

// TestMainLocal runs the command itself, this test binary in main, with
// -local 2 -bf16, and checks the shape of what it prints.
func TestMainLocal(t *testing.T) {
	out, err := exampletest.Run(t, "-local", "2", "-bf16", "-epochs", "3", "-samples", "256", "-batch", "32", "-hidden", "16", "-bucket", "1024")
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `^training a 32-16-8 MLP \(664 parameters\) on 2 ranks: 8 steps per epoch of 32 samples \(16 per rank\), gradients in buckets of up to 1024 bytes sent as bf16
epoch 1/3: loss [0-9]+\.[0-9]{6}
epoch 2/3: loss [0-9]+\.[0-9]{6}
epoch 3/3: loss [0-9]+\.[0-9]{6}
time per epoch: [0-9.]+[µm]?s \(mean of 3\)
parameters bitwise identical on 2 ranks \(FNV-1a [0-9a-f]{16}\)
$`, string(out))
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*config)
		want string
	}{
		{"batch does not split", func(c *config) { c.Batch = 30 }, "does not split evenly over 4 ranks"},
		{"too few samples", func(c *config) { c.Samples = 16 }, "do not fill one batch"},
		{"one class", func(c *config) { c.Classes = 1 }, "two classes or more"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.edit(&cfg)
			require.ErrorContains(t, cfg.check(4), tt.want)
		})
	}
}

func TestParseSizes(t *testing.T) {
	for s, want := range map[string][]int{"128,64": {128, 64}, " 7 ": {7}, "": nil} {
		got, err := parseSizes(s)
		require.NoError(t, err)
		require.Equal(t, want, got, "%q", s)
	}
	for _, s := range []string{"0", "8,", "x", "-3"} {
		_, err := parseSizes(s)
		require.Error(t, err, "%q", s)
	}
}
