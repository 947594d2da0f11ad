package compare

import (
	"math"
	"slices"
)

// A Summary totals the rows of one pair of series, or of all rows.
type Summary struct {
	Ours, Theirs Series // both zero for the total over all rows
	Points       int
	Behind       int     // rows where we are slower
	FarBehind    int     // rows where we are slower by more than the margin
	Latency      float64 // geometric mean of LatencyRatio
	BusBW        float64 // geometric mean of BusBWRatio where it is defined; NaN if nowhere
}

// Summaries totals the rows per pair of series, ordered by our series
// and then theirs, followed by the total over all rows. margin is what
// counts as far behind (see Row.Behind).
func (c *Comparison) Summaries(margin float64) []Summary {
	type pair struct{ ours, theirs Series }
	var order []pair
	byPair := map[pair][]Row{}
	for _, r := range c.Rows {
		p := pair{r.Ours, r.Theirs}
		if _, ok := byPair[p]; !ok {
			order = append(order, p)
		}
		byPair[p] = append(byPair[p], r)
	}
	slices.SortFunc(order, func(a, b pair) int {
		if d := a.ours.compare(b.ours); d != 0 {
			return d
		}
		return a.theirs.compare(b.theirs)
	})
	sums := make([]Summary, 0, len(order)+1)
	for _, p := range order {
		s := summarize(byPair[p], margin)
		s.Ours, s.Theirs = p.ours, p.theirs
		sums = append(sums, s)
	}
	return append(sums, summarize(c.Rows, margin))
}

func summarize(rows []Row, margin float64) Summary {
	s := Summary{Points: len(rows)}
	var lat, bw float64
	bwPoints := 0
	for i := range rows {
		r := &rows[i]
		if r.Behind(1) {
			s.Behind++
		}
		if r.Behind(margin) {
			s.FarBehind++
		}
		lat += math.Log(r.LatencyRatio())
		if b := r.BusBWRatio(); !math.IsNaN(b) {
			bw += math.Log(b)
			bwPoints++
		}
	}
	s.Latency, s.BusBW = math.NaN(), math.NaN()
	if len(rows) > 0 {
		s.Latency = math.Exp(lat / float64(len(rows)))
	}
	if bwPoints > 0 {
		s.BusBW = math.Exp(bw / float64(bwPoints))
	}
	return s
}
