package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/gocoll/gocoll/internal/bench"
	"github.com/gocoll/gocoll/internal/cli"
	"github.com/gocoll/gocoll/tools/model"
)

func init() {
	tools["model"] = &cli.Command{
		Name:  "model",
		Short: "fit the alpha-beta-gamma cost model and project allreduce to many ranks",
		Run:   modelMain,
		Usage: modelUsage,
	}
}

const modelUsage = `usage: benchtool model [-holdout k|largest|0] [-assume algo] result.csv [more.csv...]

Model fits the Hockney cost model, time = α·messages + β·bytes sent +
γ·bytes reduced, to the measured points of each implementation and
transport, using each point's algo column to pick its formula (the formulas
and the assumptions behind them are in the documentation of package
github.com/gocoll/gocoll/tools/model: no contention, full-duplex links, one
message at a time per rank, no overlap of computation and communication).
The fit minimises the squared relative errors with α, β, γ ≥ 0.

It prints the fitted α (µs per message), β (µs per byte and the link
bandwidth it means) and γ (the reduction's bandwidth), the relative error of
every fitted point, and the predicted against the measured time of the
points held out of the fit. Then it projects every allreduce algorithm
(recursive doubling, ring, Rabenseifner, binomial tree) to 8 … 4096 ranks and
1 KiB … 1 GiB, and prints which is fastest where, with the modelled times at
a few of those points.

The points of a gocoll sweep over transport auto count as the link they
used: shm for shared memory, tcp. Points the model has no formula for are
skipped, and counted: shm and hierarchical (they go through a shared
segment, not messages), gob (the object collectives), codecs other than
none, one rank, and auto or an empty algo (the algorithm is not recorded:
other implementations' files, and gocoll's from before it recorded what
ran). Files with nothing to fit but points of known algorithms, such as a
sweep that went through shared memory throughout, are no error: model
says so. It fails when nothing could be fitted otherwise.

The flags are:

	-holdout k|largest|0
		the points left out of the fit to check it: every k-th point
		(default 4), the largest size of each series (to check how the
		model extrapolates), or none
	-assume algo
		fit points whose algo is empty or auto as if they had run algo,
		for files of other implementations (Open MPI's default allreduce is
		ring-like at large sizes but not at small ones, so pick the size
		range with care)
`

func modelMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("model", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	holdout := fs.String("holdout", "4", "")
	assume := fs.String("assume", "", "")
	names, code, done := toolFiles("model", modelUsage, fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(names) == 0 {
		fmt.Fprintf(stderr, "benchtool model: no result file given\n%s", modelUsage)
		return 2
	}
	split, err := holdoutSplit(*holdout)
	if err != nil {
		fmt.Fprintf(stderr, "benchtool model: %v\n", err)
		return 2
	}
	var results []bench.Result
	for _, name := range names {
		rs, err := readResults(name)
		if err != nil {
			fmt.Fprintf(stderr, "benchtool model: %v\n", err)
			return 1
		}
		results = append(results, rs...)
	}
	fitted, failed, unknown := 0, 0, 0
	for _, g := range groupByImplTransport(results) {
		usable, u := modelPoints(stdout, g, *assume)
		unknown += u
		if len(usable) == 0 {
			continue // its skipped lines said why
		}
		fit, held, err := split(usable)
		if err == nil {
			var a *model.Analysis
			if a, err = model.Analyze(g.name, fit, held); err == nil {
				err = writeModel(stdout, a)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "benchtool model: %v\n", err)
			failed++
			continue
		}
		fitted++
	}
	switch {
	case fitted > 0:
	case unknown > 0:
		fmt.Fprintf(stderr, "benchtool model: no group of points could be fitted; %d points record no algorithm, which -assume can name\n", unknown)
		return 1
	case failed > 0:
		fmt.Fprintln(stderr, "benchtool model: no group of points could be fitted")
		return 1
	default:
		fmt.Fprintln(stdout, "nothing to fit: every point ran an algorithm the model has no formula for")
	}
	return 0
}

func writeModel(w io.Writer, a *model.Analysis) error {
	if err := a.Write(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := model.WriteProjection(w, a.Params, model.ProjectedRanks, model.ProjectedSizes); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// holdoutSplit parses -holdout into the function that divides points into
// those to fit and those to check the fit against.
func holdoutSplit(v string) (func([]bench.Result) (fit, held []bench.Result, err error), error) {
	switch v {
	case "largest":
		return func(ps []bench.Result) ([]bench.Result, []bench.Result, error) {
			fit, held := model.HoldLargest(ps)
			return fit, held, nil
		}, nil
	case "0":
		return func(ps []bench.Result) ([]bench.Result, []bench.Result, error) { return ps, nil, nil }, nil
	}
	k, err := strconv.Atoi(v)
	if err != nil || k < 2 {
		return nil, fmt.Errorf("-holdout %q: want a number k ≥ 2 (every k-th point), largest, or 0", v)
	}
	return func(ps []bench.Result) ([]bench.Result, []bench.Result, error) { return model.HoldEvery(ps, k) }, nil
}

// A resultGroup is the results of one implementation on one transport,
// which the model fits together: the transport as Result.Over says, so
// that the points of an auto sweep go by the link they used.
type resultGroup struct {
	name    string
	results []bench.Result
}

func groupByImplTransport(results []bench.Result) []resultGroup {
	var groups []resultGroup
	index := map[[2]string]int{}
	for _, r := range results {
		k := [2]string{r.Impl, r.Over()}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, resultGroup{name: k[0] + " " + k[1]})
		}
		groups[i].results = append(groups[i].results, r)
	}
	slices.SortFunc(groups, func(a, b resultGroup) int { return cmp.Compare(a.name, b.name) })
	return groups
}

// modelPoints returns the points of g that the model has a formula for,
// with auto and empty algorithms relabelled assume if it is set, and how
// many it skipped for recording no algorithm; it prints how many it
// skipped and why.
func modelPoints(w io.Writer, g resultGroup, assume string) (usable []bench.Result, unknown int) {
	var reasons []string
	skipped := map[string]int{}
	for _, r := range g.results {
		if r.Algo == "" || r.Algo == "auto" {
			if assume == "" {
				unknown++
			}
			r.Algo = cmp.Or(assume, r.Algo)
		}
		if _, err := model.TermsOf(&r); err != nil {
			if skipped[err.Error()] == 0 {
				reasons = append(reasons, err.Error())
			}
			skipped[err.Error()]++
			continue
		}
		usable = append(usable, r)
	}
	for _, why := range reasons {
		fmt.Fprintf(w, "%s: skipped %d points: %s\n", g.name, skipped[why], why)
	}
	return usable, unknown
}
