package compare

import (
	"cmp"
	"math"
	"slices"

	"github.com/gocoll/gocoll/internal/bench"
)

// A Row is one point that one of our series and one reference series
// both measured.
type Row struct {
	Key          bench.Key
	Ours, Theirs Series

	// Medians over the series' points at Key, and how many there were.
	OursUS, TheirsUS       float64
	OursBusBW, TheirsBusBW float64
	OursRuns, TheirsRuns   int
}

// LatencyRatio is their time over ours: above 1 we are faster.
func (r *Row) LatencyRatio() float64 { return r.TheirsUS / r.OursUS }

// BusBWRatio is our bus bandwidth over theirs: above 1 we are faster. It
// is NaN where the collective has no bus bandwidth (barrier).
func (r *Row) BusBWRatio() float64 {
	if r.OursBusBW <= 0 || r.TheirsBusBW <= 0 {
		return math.NaN()
	}
	return r.OursBusBW / r.TheirsBusBW
}

// Behind reports whether our time exceeds theirs by more than the factor
// margin (1 flags any point where we are slower).
func (r *Row) Behind(margin float64) bool { return r.LatencyRatio()*margin < 1 }

// A Point is a series' measurement at one key.
type Point struct {
	Series Series
	Key    bench.Key
}

// A Comparison is the join of our results with the references'.
type Comparison struct {
	Rows       []Row
	OnlyOurs   []Point // our points that no reference measured
	OnlyTheirs []Point // reference points that none of ours measured
}

// median is the median time and bus bandwidth of a series at one key.
type median struct {
	us, busbw float64
	runs      int
}

// Join compares every series of ours with every reference series at each
// key both measured. Rows come in key order (transport, ranks,
// collective, bytes), then by our series and theirs.
func Join(ours, theirs []bench.Result) *Comparison {
	o, t := medians(ours), medians(theirs)
	c := &Comparison{}
	for _, key := range sortedKeys(o) {
		refs, ok := t[key]
		if !ok {
			for _, s := range sortedSeries(o[key]) {
				c.OnlyOurs = append(c.OnlyOurs, Point{s, key})
			}
			continue
		}
		for _, os := range sortedSeries(o[key]) {
			for _, ts := range sortedSeries(refs) {
				om, tm := o[key][os], refs[ts]
				c.Rows = append(c.Rows, Row{Key: key, Ours: os, Theirs: ts,
					OursUS: om.us, TheirsUS: tm.us, OursBusBW: om.busbw, TheirsBusBW: tm.busbw,
					OursRuns: om.runs, TheirsRuns: tm.runs})
			}
		}
	}
	for _, key := range sortedKeys(t) {
		if _, ok := o[key]; !ok {
			for _, s := range sortedSeries(t[key]) {
				c.OnlyTheirs = append(c.OnlyTheirs, Point{s, key})
			}
		}
	}
	return c
}

func medians(results []bench.Result) map[bench.Key]map[Series]median {
	times := map[bench.Key]map[Series][]float64{}
	bws := map[bench.Key]map[Series][]float64{}
	for i := range results {
		r := &results[i]
		k, s := r.Key(), SeriesOf(r)
		if times[k] == nil {
			times[k], bws[k] = map[Series][]float64{}, map[Series][]float64{}
		}
		times[k][s] = append(times[k][s], r.AvgUS)
		bws[k][s] = append(bws[k][s], r.BusBW)
	}
	m := map[bench.Key]map[Series]median{}
	for k, bySeries := range times {
		m[k] = map[Series]median{}
		for s, ts := range bySeries {
			m[k][s] = median{us: middle(ts), busbw: middle(bws[k][s]), runs: len(ts)}
		}
	}
	return m
}

// middle is the median of v, the mean of the middle two for an even
// count.
func middle(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func compareKeys(a, b bench.Key) int {
	return cmp.Or(cmp.Compare(a.Transport, b.Transport), cmp.Compare(a.NP, b.NP),
		cmp.Compare(a.Collective, b.Collective), cmp.Compare(a.Bytes, b.Bytes))
}

func sortedKeys[V any](m map[bench.Key]V) []bench.Key {
	keys := make([]bench.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	return keys
}

func sortedSeries(m map[Series]median) []Series {
	s := make([]Series, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	slices.SortFunc(s, Series.compare)
	return s
}
