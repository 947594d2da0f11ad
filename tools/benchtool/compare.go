package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/gocoll/gocoll/internal/bench"
	"github.com/gocoll/gocoll/internal/cli"
	"github.com/gocoll/gocoll/tools/compare"
)

func init() {
	tools["compare"] = &cli.Command{
		Name:  "compare",
		Short: "set result files side by side and flag where gocoll is behind",
		Run:   compareMain,
		Usage: compareUsage,
	}
}

const compareUsage = `usage: benchtool compare [-margin f] [-v] ours.csv ref.csv [more.csv...]

Compare joins gocoll's benchmark results with those of other
implementations (the anchors' openmpi.csv and mpi4py.csv, or another gocoll
run) on transport, rank count, collective and message size, and prints one
line per point that both measured:

	lat×  their avg_us / our avg_us
	bw×   our busbw / their busbw

Above 1 gocoll is faster; below 1 the line is marked behind, or BEHIND when
gocoll is slower by more than the margin. A summary per pair of series
gives the points compared, how many are behind and the geometric means of
both ratios; points that only one side measured are counted as unmatched.
A point of a gocoll sweep over transport auto joins by the link its calls
used: shm for shared memory (shm links or the host's segment), tcp for tcp
links.

Ours are the results whose impl is "gocoll", in whichever file; if no file
has any, ours are the first file, so that two other implementations can be
compared too. Each algorithm, codec and chunk size of ours, and each impl of
theirs (mpi4py-buffer, mpi4py-pickle, ...) is a series of its own, never
mixed with another; the selector's choices are one series, auto, whatever
algorithm each ran. Repeated points of one series (several runs appended
to a file) count as their median.

The flags are:

	-margin f
		how much slower gocoll must be for BEHIND (default 1.5: a single
		run on a shared machine varies that much, see the anchors' notes)
	-v
		list the unmatched points, not only their count
`

func compareMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	margin := fs.Float64("margin", 1.5, "")
	verbose := fs.Bool("v", false, "")
	names, code, done := toolFiles("compare", compareUsage, fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(names) < 2 {
		fmt.Fprintf(stderr, "benchtool compare: want our file and at least one reference file\n%s", compareUsage)
		return 2
	}
	if *margin < 1 {
		fmt.Fprintf(stderr, "benchtool compare: -margin %g: want a factor of at least 1\n", *margin)
		return 2
	}
	files := make([][]bench.Result, len(names))
	for i, name := range names {
		rs, err := readResults(name)
		if err != nil {
			fmt.Fprintf(stderr, "benchtool compare: %v\n", err)
			return 1
		}
		files[i] = rs
	}
	ours, theirs := compare.Split(files)
	c := compare.Join(ours, theirs)
	if err := compare.Write(stdout, c, compare.Options{Margin: *margin, Unmatched: *verbose}); err != nil {
		fmt.Fprintf(stderr, "benchtool compare: %v\n", err)
		return 1
	}
	return 0
}
