package bench

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gocoll/gocoll/internal/tuning"
)

// DefaultNoise is the share by which a candidate must beat the default
// selection before Tune prefers it: below it, the difference is within
// this machine's run-to-run spread and the default stays.
const DefaultNoise = 0.05

// A Decision is what Tune chose for one collective at one size, and why.
type Decision struct {
	Chosen  Result // the fastest candidate, or the default when it was kept
	Default Result // the selector's own choice (asked for auto, default chunk, codec none)
	Kept    bool   // the default stays: fastest, or within noise of it
}

// Speedup is the default's time over the chosen one's.
func (d Decision) Speedup() float64 {
	if d.Chosen.AvgUS <= 0 {
		return 1
	}
	return d.Default.AvgUS / d.Chosen.AvgUS
}

// Tune picks, per collective and size of results, the fastest candidate,
// keeping the default selection (the selector's choice, Chunk 0, Codec "none")
// unless a candidate beats it by more than noise (a share, DefaultNoise
// when 0), so a tuned choice is never slower than the default where it
// was measured. A candidate is a named algorithm with any chunk size and
// codec: a table entry names its algorithm, so the selector's choice
// under a codec (auto with a codec) is no candidate. A lossy codec
// (bf16, fp16) is a candidate like the others: the table rounds the
// results of the calls it gives one to. Tune returns the decisions and a
// table of the sizes where the default was not kept: a size covers the
// bytes from it to just below the next measured size (only itself for
// the largest), and adjacent sizes with the same choice become one range.
// Sizes without a default measurement are an error: without one nothing
// can be shown to be faster.
func Tune(results []Result, noise float64) ([]Decision, *tuning.Table, error) {
	if noise == 0 {
		noise = DefaultNoise
	}
	type key struct {
		transport, collective string
		np                    int
	}
	groups := map[key]map[int64][]Result{}
	for _, r := range results {
		k := key{r.Transport, r.Collective, r.NP}
		if groups[k] == nil {
			groups[k] = map[int64][]Result{}
		}
		groups[k][r.Bytes] = append(groups[k][r.Bytes], r)
	}
	keys := slices.SortedFunc(func(yield func(key) bool) {
		for k := range groups {
			if !yield(k) {
				return
			}
		}
	}, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.transport, b.transport), cmp.Compare(a.collective, b.collective), cmp.Compare(a.np, b.np))
	})

	var decisions []Decision
	var entries []tuning.Entry
	for _, k := range keys {
		sizes := slices.Sorted(func(yield func(int64) bool) {
			for b := range groups[k] {
				if !yield(b) {
					return
				}
			}
		})
		for i, b := range sizes {
			d, err := decide(groups[k][b], noise)
			if err != nil {
				return nil, nil, fmt.Errorf("%s of %d bytes on %d ranks over %s: %w", k.collective, b, k.np, k.transport, err)
			}
			decisions = append(decisions, d)
			if d.Kept {
				continue
			}
			hi := b
			if i+1 < len(sizes) {
				hi = sizes[i+1] - 1
			}
			if n := len(entries); n > 0 {
				last := &entries[n-1]
				if last.Collective == k.collective && last.Ranks == k.np && last.Transport == k.transport &&
					last.MaxBytes+1 == b && last.Algorithm == d.Chosen.Algo && last.Chunk == d.Chosen.Chunk && last.Codec == d.Chosen.Codec {
					last.MaxBytes = hi
					continue
				}
			}
			entries = append(entries, tuning.Entry{Collective: k.collective, Ranks: k.np, Transport: k.transport,
				MinBytes: b, MaxBytes: hi, Algorithm: d.Chosen.Algo, Chunk: d.Chosen.Chunk, Codec: d.Chosen.Codec})
		}
	}
	table, err := tuning.New(entries)
	if err != nil {
		return nil, nil, fmt.Errorf("the tuned table: %w", err)
	}
	return decisions, table, nil
}

// decide picks among the candidates of one size.
func decide(candidates []Result, noise float64) (Decision, error) {
	i := slices.IndexFunc(candidates, func(r Result) bool { return r.Asked() == "auto" && r.Chunk == 0 && r.Codec == "none" })
	if i < 0 {
		return Decision{}, fmt.Errorf("no measurement of the default selection (algo auto, default chunk, codec none) to compare with")
	}
	d := Decision{Default: candidates[i], Chosen: candidates[i], Kept: true}
	for _, r := range candidates {
		if r.Asked() != "auto" && r.AvgUS < d.Chosen.AvgUS && r.AvgUS < d.Default.AvgUS*(1-noise) {
			d.Chosen, d.Kept = r, false
		}
	}
	return d, nil
}
