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
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
)

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the tool that args[0] names and returns the exit code:
// 2 for a usage error, as flag does.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		w, code := stdout, 0
		if len(args) == 0 {
			w, code = stderr, 2
		}
		if len(args) > 1 {
			if t, ok := tools[args[1]]; ok {
				fmt.Fprint(stdout, t.usage)
				return 0
			}
		}
		fmt.Fprintln(w, "usage: benchtool <tool> [arguments]\n\nThe tools:")
		for _, name := range slices.Sorted(maps.Keys(tools)) {
			fmt.Fprintf(w, "\t%-8s %s\n", name, tools[name].short)
		}
		fmt.Fprintln(w, "\nRun 'benchtool help <tool>' for a tool's flags.")
		return code
	}
	t, ok := tools[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "benchtool %s: unknown tool\nRun 'benchtool help' for the list.\n", args[0])
		return 2
	}
	return t.run(args[1:], stdout, stderr)
}
