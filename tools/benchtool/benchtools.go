package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gocoll/gocoll/internal/bench"
	"github.com/gocoll/gocoll/internal/cli"
)

// tools are benchtool's subcommands ("compare", "plot", "model"). Each
// registers itself from its own file; main lists them by name.
var tools = map[string]*cli.Command{}

// toolFiles parses the flags of the tool called name, wherever they
// stand among the file names in args (as in "compare ours.csv ref.csv
// -v"), and returns the file names. When it is done instead, having
// printed usage for -h or the error for a bad flag, it returns done and
// the exit code.
func toolFiles(name, usage string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (files []string, code int, done bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, usage)
				return nil, 0, true
			}
			fmt.Fprintf(stderr, "benchtool %s: %v\n%s", name, err, usage)
			return nil, 2, true
		}
		if fs.NArg() == 0 {
			return files, 0, false
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// readResults reads the results in the CSV file at path.
func readResults(path string) ([]bench.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	results, err := bench.ReadCSV(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return results, nil
}
