// Command gocoll runs and measures gocoll jobs.
//
// Usage:
//
//	gocoll <command> [arguments]
//
// The commands are:
//
//	run     start the ranks of a job on this machine
//	bench   measure collectives; compare, plot and model the results
//	tune    measure this machine and write a tuning table
//
// Use "gocoll help <command>" for more information about a command.
package main

import (
	"fmt"
	"io"
	"os"
)

type command struct {
	name  string
	short string
	run   func(args []string, stdout, stderr io.Writer) int
	usage string
}

var commands = []*command{runCmd, benchCmd, tuneCmd}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" || name == "-help" {
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				fmt.Fprint(stdout, c.usage)
				return 0
			}
			fmt.Fprintf(stderr, "gocoll help %s: unknown command\n", args[1])
			return 2
		}
		usage(stdout)
		return 0
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "gocoll %s: unknown command\nRun 'gocoll help' for usage.\n", name)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprint(w, "gocoll runs and measures gocoll jobs.\n\nUsage:\n\n\tgocoll <command> [arguments]\n\nThe commands are:\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "\t%-7s %s\n", c.name, c.short)
	}
	fmt.Fprint(w, "\nUse \"gocoll help <command>\" for more information about a command.\n")
}
