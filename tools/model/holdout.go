package model

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gocoll/gocoll/internal/bench"
)

// HoldEvery splits points into those to fit and every k-th (k ≥ 2) to
// check the fit against, in the order of series (collective, algorithm,
// ranks, chunk, codec) and size, so that the held-out points spread over
// every series and size instead of falling on one.
func HoldEvery(points []bench.Result, k int) (fit, held []bench.Result, err error) {
	if k < 2 {
		return nil, nil, fmt.Errorf("holding out every %d-th point: want k ≥ 2, or nothing would be left to fit", k)
	}
	for i, r := range sorted(points) {
		if i%k == k-1 {
			held = append(held, r)
		} else {
			fit = append(fit, r)
		}
	}
	return fit, held, nil
}

// HoldLargest splits points into those to fit and the largest size of
// each series (collective, algorithm, ranks, chunk, codec) to check the
// fit against: a check of how well the model extrapolates. A series of
// one point is kept for fitting.
func HoldLargest(points []bench.Result) (fit, held []bench.Result) {
	s := sorted(points)
	for i, r := range s {
		last := i+1 == len(s) || compareSeries(&r, &s[i+1]) != 0
		first := i == 0 || compareSeries(&r, &s[i-1]) != 0
		if last && !first {
			held = append(held, r)
		} else {
			fit = append(fit, r)
		}
	}
	return fit, held
}

func sorted(points []bench.Result) []bench.Result {
	s := slices.Clone(points)
	slices.SortStableFunc(s, func(a, b bench.Result) int {
		return cmp.Or(compareSeries(&a, &b), cmp.Compare(a.Bytes, b.Bytes))
	})
	return s
}

func compareSeries(a, b *bench.Result) int {
	return cmp.Or(cmp.Compare(a.Collective, b.Collective), cmp.Compare(a.Algo, b.Algo),
		cmp.Compare(a.NP, b.NP), cmp.Compare(a.Chunk, b.Chunk), cmp.Compare(a.Codec, b.Codec))
}
