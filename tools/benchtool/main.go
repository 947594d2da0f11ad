// Command benchtool reads the CSV files that gocoll bench and the
// reference scripts of bench/reference write, and compares, plots or
// models them:
//
//	benchtool compare ours.csv openmpi.csv mpi4py.csv
//	benchtool plot -o sweep.png ours.csv openmpi.csv
//	benchtool model tcp-algos.csv
//
// It lives in a module of its own, beside the library's, so that a
// program that uses gocoll never downloads the plotting and linear
// algebra libraries it needs. Run it from the repository:
//
//	cd tools && go run ./benchtool help
package main

import (
	"maps"
	"os"
	"slices"

	"github.com/gocoll/gocoll/internal/cli"
)

func main() {
	program := &cli.Program{
		Name:    "benchtool",
		Summary: "benchtool compares, plots and models gocoll bench's results.",
	}
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		program.Commands = append(program.Commands, tools[name])
	}
	os.Exit(program.Dispatch(os.Args[1:], os.Stdout, os.Stderr))
}
