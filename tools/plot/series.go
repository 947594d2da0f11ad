package plot

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/gocoll/gocoll/internal/bench"
)

// A Series is the points of one line: the results that share an
// implementation, transport, rank count, collective, algorithm and codec.
type Series struct {
	Impl       string
	Transport  string
	NP         int
	Collective string
	Algo       string // as asked for: auto is one line, whatever each point ran
	Codec      string
	Points     []bench.Result // by increasing Bytes
}

// Label names s in a legend. It leaves out the collective, which titles
// the panels s is drawn in, so the same label names the same line style
// in every panel; the algorithm and codec appear only when set, as the
// anchors' files have neither.
func (s *Series) Label() string {
	parts := []string{s.Impl}
	if s.Algo != "" {
		parts = append(parts, s.Algo)
	}
	if s.Codec != "" {
		parts = append(parts, s.Codec)
	}
	parts = append(parts, s.Transport, "np="+strconv.Itoa(s.NP))
	return strings.Join(parts, " ")
}

// seriesKey is what a Series is, without its points.
type seriesKey struct {
	collective, impl, algo, codec, transport string
	np                                       int
}

func keyOf(r *bench.Result) seriesKey {
	return seriesKey{r.Collective, r.Impl, r.Asked(), r.Codec, r.Transport, r.NP}
}

func compareKeys(a, b seriesKey) int {
	return cmp.Or(cmp.Compare(a.collective, b.collective), cmp.Compare(a.impl, b.impl),
		cmp.Compare(a.algo, b.algo), cmp.Compare(a.codec, b.codec),
		cmp.Compare(a.transport, b.transport), cmp.Compare(a.np, b.np))
}

// Group splits results into series, ordered by collective, then
// implementation, algorithm, codec, transport and rank count, each with
// its points ordered by size.
func Group(results []bench.Result) []Series {
	index := map[seriesKey]int{}
	var series []Series
	for i := range results {
		r := &results[i]
		k := keyOf(r)
		j, ok := index[k]
		if !ok {
			j = len(series)
			index[k] = j
			series = append(series, Series{Impl: r.Impl, Transport: r.Transport, NP: r.NP,
				Collective: r.Collective, Algo: k.algo, Codec: r.Codec})
		}
		series[j].Points = append(series[j].Points, *r)
	}
	for i := range series {
		slices.SortStableFunc(series[i].Points, func(a, b bench.Result) int { return cmp.Compare(a.Bytes, b.Bytes) })
	}
	slices.SortFunc(series, func(a, b Series) int { return compareKeys(a.key(), b.key()) })
	return series
}

func (s *Series) key() seriesKey {
	return seriesKey{s.Collective, s.Impl, s.Algo, s.Codec, s.Transport, s.NP}
}
