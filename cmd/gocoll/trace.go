package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gocoll/gocoll/internal/cli"
	"github.com/gocoll/gocoll/internal/ranklist"
	"github.com/gocoll/gocoll/internal/timeline"
)

var traceCmd = &cli.Command{
	Name:  "trace",
	Short: "merge the timeline files of a job's ranks",
	Run:   traceMain,
	Usage: traceUsage,
}

const traceUsage = `usage: gocoll trace merge [-o file] rankfile...

Trace merge merges the timeline files that the ranks of a job wrote into
one trace for ui.perfetto.dev or chrome://tracing, with a track for each
rank. A rank writes its file when GOCOLL_TRACE names a path: rank N
writes it with ".rankN" before the extension (GOCOLL_TRACE=trace.json:
trace.rank0.json, trace.rank1.json, ...). gocoll run --trace merges the
files of its ranks itself; under mpirun, srun, torchrun or Kubernetes,
give every rank GOCOLL_TRACE and merge their files with

	gocoll trace merge -o trace.json trace.rank*.json

The ranks' clocks are aligned by the wall-clock time at which each began
its timeline: exact to about a microsecond on one machine, and only as
close as the machines' clocks agree across machines. A file that ends
early (its rank died before it closed its timeline) is merged up to its
last whole event and marked on its rank's track.

The flags are:

	-o file
		the merged trace to write (default trace.json); it is replaced
		only when the merge succeeds

Trace exits with status 2 for bad arguments and 1 when a file is not a
rank's timeline or the trace cannot be written.
`

func traceMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, traceUsage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, traceUsage)
		return 0
	case "merge":
	default:
		fmt.Fprintf(stderr, "gocoll trace %s: unknown command\n%s", args[0], traceUsage)
		return 2
	}
	fs := flag.NewFlagSet("trace merge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "trace.json", "")
	err := fs.Parse(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, traceUsage)
		return 0
	}
	if err == nil && fs.NArg() == 0 {
		err = errors.New("no rank files given")
	}
	if err == nil {
		for _, f := range fs.Args() {
			if filepath.Clean(f) == filepath.Clean(*out) {
				err = fmt.Errorf("-o %s is one of the files to merge", *out)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "gocoll trace merge: %v\n%s", err, traceUsage)
		return 2
	}
	sum, err := mergeTrace(*out, fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "gocoll trace merge: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, describeTrace(sum, *out))
	return 0
}

// mergeTrace merges the rank files into a new file at path, which it
// replaces only when the merge succeeds.
func mergeTrace(path string, files []string) (timeline.Summary, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return timeline.Summary{}, err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	sum, err := timeline.MergeFiles(tmp, files)
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return sum, err
}

// describeTrace says where the trace is and what it holds: "timeline of
// ranks 0-2 written to trace.json", and what it lacks.
func describeTrace(sum timeline.Summary, path string) string {
	var notes []string
	if len(sum.Ranks) < sum.Size {
		var missing []int
		for rank, i := 0, 0; rank < sum.Size; rank++ {
			if i < len(sum.Ranks) && sum.Ranks[i] == rank {
				i++
				continue
			}
			missing = append(missing, rank)
		}
		notes = append(notes, "no file from "+ranklist.Ranks(missing))
	}
	if len(sum.CutShort) > 0 {
		notes = append(notes, "cut short: "+ranklist.Ranks(sum.CutShort))
	}
	if sum.Dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d spans dropped", sum.Dropped))
	}
	line := fmt.Sprintf("timeline of %s written to %s", ranklist.Ranks(sum.Ranks), path)
	if len(notes) > 0 {
		line += " (" + strings.Join(notes, "; ") + ")"
	}
	return line
}
