package compare

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/gocoll/gocoll/internal/bench"
)

// Options say how Write presents a comparison.
type Options struct {
	// Margin is the factor by which we must be slower for a row to be
	// marked BEHIND rather than behind: run-to-run noise on a shared
	// machine easily reaches 1.5x (see the anchors' NOTES.md).
	Margin float64
	// Unmatched lists the points that only one side measured, not just
	// their count.
	Unmatched bool
}

// Write prints c as an aligned table, one line per row, then a summary
// per pair of series, the total, and the unmatched points.
func Write(out io.Writer, c *Comparison, opt Options) error {
	// bufio keeps the first error of the writes below, for Flush to report.
	w := bufio.NewWriter(out)
	fmt.Fprintln(w, "lat× = their avg_us / our avg_us, bw× = our busbw / their busbw: above 1 ours (gocoll, normally) is faster, below 1 ours is behind")
	fmt.Fprintf(w, "behind: slower than the reference; BEHIND: slower by more than %gx\n\n", opt.Margin)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "transport\tnp\tcollective\tbytes\tours\ttheirs\tour_us\ttheir_us\tlat×\tour_busbw\ttheir_busbw\tbw×\t\t")
	for i := range c.Rows {
		r := &c.Rows[i]
		mark := ""
		switch {
		case r.Behind(opt.Margin):
			mark = "BEHIND"
		case r.Behind(1):
			mark = "behind"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%.3f\t%.3f\t%s\t%.4f\t%.4f\t%s\t%s\t\n",
			r.Key.Transport, r.Key.NP, r.Key.Collective, bench.FormatBytes(r.Key.Bytes), r.Ours, r.Theirs,
			r.OursUS, r.TheirsUS, ratio(r.LatencyRatio()), r.OursBusBW, r.TheirsBusBW, ratio(r.BusBWRatio()), mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, s := range c.Summaries(opt.Margin) {
		name := "all"
		if s.Ours != (Series{}) {
			name = s.Ours.String() + " vs " + s.Theirs.String()
		}
		fmt.Fprintf(w, "%s: %d points compared, %d behind (%d by more than %gx), geometric mean lat× %s, bw× %s\n",
			name, s.Points, s.Behind, s.FarBehind, opt.Margin, ratio(s.Latency), ratio(s.BusBW))
	}
	fmt.Fprintf(w, "unmatched: %d points of ours and %d of the references have no counterpart\n", len(c.OnlyOurs), len(c.OnlyTheirs))
	if opt.Unmatched {
		for _, list := range [][]Point{c.OnlyOurs, c.OnlyTheirs} {
			for _, p := range list {
				fmt.Fprintf(w, "\t%s %s np=%d %s %s\n", p.Series, p.Key.Transport, p.Key.NP, p.Key.Collective, bench.FormatBytes(p.Key.Bytes))
			}
		}
	}
	return w.Flush()
}

// ratio formats a ratio with two decimals, "-" where undefined.
func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
