package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gocoll/gocoll/internal/bench"
	"github.com/gocoll/gocoll/internal/cli"
	"github.com/gocoll/gocoll/tools/plot"
)

func init() {
	tools["plot"] = &cli.Command{
		Name:  "plot",
		Short: "draw bus bandwidth and latency against message size",
		Run:   plotMain,
		Usage: plotUsage,
	}
}

const plotUsage = `usage: benchtool plot -o out.png|out.svg [--collective c,...] [--np n,...] [--transport t,...] [--impl i,...] [--title text] result.csv [more.csv ...]

Plot draws the results in the CSV files (gocoll bench --csv's, or the
reference results of bench/reference) as one image. Each collective in them
gets a row of two panels: bus bandwidth (GB/s, linear) and the average
time per call (log) against the message size (log2, in B, KiB, MiB).
Each combination of implementation, algorithm, codec, transport and
rank count is one line, styled the same in every panel and named in a
legend on the right: colour tells implementations, algorithms and
codecs apart, dashes transports and point shapes rank counts.

Both panels of every collective go in one image, so that they share the
legend; to draw fewer lines or rows, keep only some of the results with
the filters, which take comma-separated lists. Results with no size or
time (a barrier's) are left out, as log axes cannot show them.

The flags are:

	-o file
		the image to write; its extension, png or svg, sets the format
	--collective c,...
		only these collectives (allreduce, bcast, gather, ...)
	--np n,...
		only these rank counts
	--transport t,...
		only these transports (tcp, shm, auto, mem)
	--impl i,...
		only these implementations (gocoll, openmpi, mpi4py-buffer, ...)
	--title text
		the image's title (default: the files' names)
`

func plotMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "")
	var f resultFilter
	fs.Func("collective", "", listFlag(&f.collectives))
	fs.Func("transport", "", listFlag(&f.transports))
	fs.Func("impl", "", listFlag(&f.impls))
	fs.Func("np", "", func(v string) error {
		for s := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				return fmt.Errorf("%q is not a rank count", s)
			}
			f.nps = append(f.nps, n)
		}
		return nil
	})
	title := fs.String("title", "", "")
	// Flags may come after the files too, as in "plot r.csv -o r.png".
	files, code, done := toolFiles("plot", plotUsage, fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(files) == 0 || *out == "" {
		fmt.Fprintf(stderr, "benchtool plot: want -o and at least one result file\n%s", plotUsage)
		return 2
	}

	var results []bench.Result
	names := make([]string, len(files))
	for i, path := range files {
		rs, err := readResults(path)
		if err != nil {
			fmt.Fprintf(stderr, "benchtool plot: %v\n", err)
			return 1
		}
		results = append(results, rs...)
		names[i] = filepath.Base(path)
	}
	kept := f.apply(results)
	if len(kept) == 0 && len(results) > 0 {
		fmt.Fprintf(stderr, "benchtool plot: no results pass the filters; the files have %s\n", describe(results))
		return 1
	}
	if *title == "" {
		*title = strings.Join(names, ", ")
	}
	if err := plot.Save(*out, kept, plot.Options{Title: *title}); err != nil {
		fmt.Fprintf(stderr, "benchtool plot: %v\n", err)
		return 1
	}
	return 0
}

// listFlag returns a flag.Func setter that appends the comma-separated
// values of each use of the flag to *list.
func listFlag(list *[]string) func(string) error {
	return func(v string) error {
		for s := range strings.SplitSeq(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*list = append(*list, s)
			}
		}
		return nil
	}
}

// A resultFilter keeps the results that match each of its non-empty lists.
type resultFilter struct {
	collectives, transports, impls []string
	nps                            []int
}

func (f *resultFilter) apply(results []bench.Result) []bench.Result {
	var kept []bench.Result
	for _, r := range results {
		if matches(f.collectives, r.Collective) && matches(f.transports, r.Transport) &&
			matches(f.impls, r.Impl) && matches(f.nps, r.NP) {
			kept = append(kept, r)
		}
	}
	return kept
}

func matches[T comparable](list []T, v T) bool { return len(list) == 0 || slices.Contains(list, v) }

// describe lists what the filters can choose among in results.
func describe(results []bench.Result) string {
	var collectives, transports, impls, nps []string
	for _, r := range results {
		collectives = appendMissing(collectives, r.Collective)
		transports = appendMissing(transports, r.Transport)
		impls = appendMissing(impls, r.Impl)
		nps = appendMissing(nps, strconv.Itoa(r.NP))
	}
	return fmt.Sprintf("collectives %s; np %s; transports %s; impls %s",
		strings.Join(collectives, ","), strings.Join(nps, ","), strings.Join(transports, ","), strings.Join(impls, ","))
}

func appendMissing(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}
