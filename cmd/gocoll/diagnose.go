package main

import (
	"fmt"
	"io"
	"os"

	"github.com/gocoll/gocoll/internal/cli"
	"github.com/gocoll/gocoll/internal/flight"
)

var diagnoseCmd = &cli.Command{
	Name:  "diagnose",
	Short: "say who waits for whom from the ranks' flight-recorder dumps",
	Run:   diagnoseMain,
	Usage: diagnoseUsage,
}

const diagnoseUsage = `usage: gocoll diagnose dumpfile...

Diagnose reads the flight-recorder dumps that the ranks of a job wrote
and prints what gocoll run prints when a job fails: which rank waits for
which, in what call, and what the awaited rank does. A rank writes its
dump when its job fails and on SIGUSR1, to the path GOCOLL_DUMP names,
with ".rankN" before the extension. gocoll run does this itself; under
mpirun, srun, torchrun or Kubernetes, give every rank GOCOLL_DUMP on a
file system you can read, send the ranks SIGUSR1 (or wait for the job to
fail) and run

	gocoll diagnose dump.rank*.json

A rank whose dump is missing is named as such.

Diagnose exits with status 2 for bad arguments and 1 when a file is not
a rank's dump.
`

func diagnoseMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, diagnoseUsage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, diagnoseUsage)
		return 0
	}
	dumps := make([]*flight.Dump, 0, len(args))
	size := 0
	for _, path := range args {
		d, err := readDump(path)
		if err != nil {
			fmt.Fprintf(stderr, "gocoll diagnose: %v\n", err)
			return 1
		}
		size = max(size, d.Size)
		dumps = append(dumps, d)
	}
	for _, line := range flight.Diagnose(size, dumps) {
		fmt.Fprintln(stdout, line)
	}
	return 0
}

// readDump reads the dump in the file at path.
func readDump(path string) (*flight.Dump, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := flight.ReadDump(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}
