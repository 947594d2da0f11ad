// Command gocoll runs and measures gocoll jobs.
//
// Usage:
//
//	gocoll <command> [arguments]
//
// The commands are:
//
//	run     start the ranks of a job on this machine
//	bench   measure collectives over message sizes
//	tune    measure this machine and write a tuning table
//	trace   merge the timeline files of a job's ranks
//	diagnose  say who waits for whom from the ranks' flight-recorder dumps
//
// Use "gocoll help <command>" for more information about a command.
package main

import (
	"io"
	"os"

	"github.com/gocoll/gocoll/internal/cli"
)

var program = &cli.Program{
	Name:     "gocoll",
	Summary:  "gocoll runs and measures gocoll jobs.",
	Commands: []*cli.Command{runCmd, benchCmd, tuneCmd, traceCmd, diagnoseCmd},
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the command args name and returns the exit status.
func dispatch(args []string, stdout, stderr io.Writer) int {
	return program.Dispatch(args, stdout, stderr)
}
