package model

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gocoll/gocoll/internal/bench"
)

// An Analysis is the fit of one group of points (one implementation on
// one transport) and its check against points left out of the fit.
type Analysis struct {
	Name   string
	Params Params
	Fitted []Residual // the points fitted
	Held   []Residual // the points held out
}

// Analyze fits the points of fit and predicts those of held with the
// parameters found.
func Analyze(name string, fit, held []bench.Result) (*Analysis, error) {
	params, err := Fit(fit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	a := &Analysis{Name: name, Params: params}
	if a.Fitted, err = Residuals(fit, params); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if a.Held, err = Residuals(held, params); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return a, nil
}

// Write prints the fitted parameters and the relative error of every
// point, fitted and held out.
func (a *Analysis) Write(out io.Writer) error {
	// bufio keeps the first error of the writes below, for Flush to report.
	w := bufio.NewWriter(out)
	p := a.Params
	fmt.Fprintf(w, "%s: fitted on %d points, checked on %d held out\n", a.Name, len(a.Fitted), len(a.Held))
	fmt.Fprintf(w, "\tα = %.3f µs per message\n", p.Alpha)
	fmt.Fprintf(w, "\tβ = %.3g µs/byte (%s)\n", p.Beta, bandwidth(p.BandwidthGBps()))
	if p.GammaFitted {
		fmt.Fprintf(w, "\tγ = %.3g µs/byte (%s)\n", p.Gamma, bandwidth(p.ReduceGBps()))
	} else {
		fmt.Fprintln(w, "\tγ = 0: the points do not tell it from β (every one reduces the same share of what it sends); β includes the reduction")
	}
	for _, part := range []struct {
		title string
		res   []Residual
	}{{"fitted", a.Fitted}, {"held out (not used to fit)", a.Held}} {
		if len(part.res) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %s\n", part.title, errorSummary(part.res))
		writeResiduals(w, part.res)
	}
	return w.Flush()
}

func bandwidth(gbps float64) string {
	if gbps == 0 {
		return "no limit"
	}
	return fmt.Sprintf("%.3g GB/s", gbps)
}

// errorSummary gives the median and largest relative error of res.
func errorSummary(res []Residual) string {
	errs := make([]float64, len(res))
	for i, r := range res {
		errs[i] = math.Abs(r.RelErr)
	}
	slices.Sort(errs)
	med := errs[len(errs)/2]
	if len(errs)%2 == 0 {
		med = (errs[len(errs)/2-1] + med) / 2
	}
	return fmt.Sprintf("%d points, median |error| %.1f%%, largest %.1f%%", len(res), 100*med, 100*errs[len(errs)-1])
}

func writeResiduals(w io.Writer, res []Residual) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tcollective\talgo\tnp\tbytes\tmeasured_us\tpredicted_us\terror\t")
	for _, r := range res {
		p := &r.Point
		fmt.Fprintf(tw, "\t%s\t%s\t%d\t%s\t%.3f\t%.3f\t%+.1f%%\t\n", p.Collective, p.Algo, p.NP, formatSize(float64(p.Bytes)),
			p.AvgUS, r.Predicted, 100*r.RelErr)
	}
	tw.Flush()
}

// ProjectedRanks and ProjectedSizes are where WriteProjection projects:
// 8 to 4096 ranks, 1 KiB to 1 GiB in steps of four.
var (
	ProjectedRanks = []int{8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
	ProjectedSizes = []float64{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30}
)

// short names the algorithms in the winners' table.
var short = map[string]string{"recursive_doubling": "rd", "ring": "ring", "rabenseifner": "rab", "tree": "tree"}

// WriteProjection prints which allreduce algorithm the model makes
// fastest for each rank count and size, then every algorithm's modelled
// time at the corners and the middle of that table.
func WriteProjection(out io.Writer, params Params, ranks []int, sizes []float64) error {
	// bufio keeps the first error of the writes below, for Flush to report.
	w := bufio.NewWriter(out)
	var legend []string
	for _, alg := range AllreduceAlgorithms {
		legend = append(legend, short[alg]+" = "+alg)
	}
	fmt.Fprintf(w, "fastest allreduce algorithm by ranks (rows) and bytes (columns); %s\n", strings.Join(legend, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "ranks\t")
	for _, n := range sizes {
		fmt.Fprintf(tw, "%s\t", formatSize(n))
	}
	fmt.Fprintln(tw)
	for _, p := range ranks {
		fmt.Fprintf(tw, "%d\t", p)
		for _, n := range sizes {
			alg, _, err := Winner(p, n, params)
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "%s\t", short[alg])
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nmodelled allreduce time; * marks the fastest")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "ranks\tbytes\t%s\t\n", strings.Join(AllreduceAlgorithms, "\t"))
	for _, p := range corners(ranks) {
		for _, n := range corners(sizes) {
			best, _, err := Winner(p, n, params)
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "%d\t%s\t", p, formatSize(n))
			for _, alg := range AllreduceAlgorithms {
				us, err := Predict(alg, p, n, params)
				if err != nil {
					return err
				}
				mark := ""
				if alg == best {
					mark = "*"
				}
				fmt.Fprintf(tw, "%s%s\t", formatTime(us), mark)
			}
			fmt.Fprintln(tw)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return w.Flush()
}

// corners are the first, middle and last of v.
func corners[T any](v []T) []T {
	if len(v) <= 3 {
		return v
	}
	return []T{v[0], v[len(v)/2], v[len(v)-1]}
}

// formatTime writes a time given in µs in the unit that suits it.
func formatTime(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.3g s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.3g ms", us/1e3)
	}
	return fmt.Sprintf("%.3g µs", us)
}

// formatSize writes a size in bytes.
func formatSize(n float64) string { return bench.FormatBytes(int64(n)) }
