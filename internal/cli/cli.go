// Package cli is the frame of gocoll's commands (gocoll, benchtool): a
// program of subcommands, each with a one-line summary and a usage text,
// "help", and exit status 2 for a usage error, as the go command does.
package cli

import (
	"fmt"
	"io"
)

// A Command is one subcommand.
type Command struct {
	Name  string
	Short string // one line for the list of commands
	Run   func(args []string, stdout, stderr io.Writer) int
	Usage string // printed by "help name"
}

// A Program is a command made of subcommands.
type Program struct {
	Name     string     // as users type it: "gocoll"
	Summary  string     // the first line of its usage: what it does
	Commands []*Command // in the order the usage lists them
}

// Dispatch runs the subcommand that args[0] names with the rest of args,
// or "help", and returns the exit status.
func (p *Program) Dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		p.usage(stderr)
		return 2
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" || name == "-help" {
		if len(args) > 1 {
			if c := p.Lookup(args[1]); c != nil {
				fmt.Fprint(stdout, c.Usage)
				return 0
			}
			fmt.Fprintf(stderr, "%s help %s: unknown command\n", p.Name, args[1])
			return 2
		}
		p.usage(stdout)
		return 0
	}
	c := p.Lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "%s %s: unknown command\nRun '%s help' for usage.\n", p.Name, name, p.Name)
		return 2
	}
	return c.Run(args[1:], stdout, stderr)
}

// Lookup returns the subcommand called name, or nil.
func (p *Program) Lookup(name string) *Command {
	for _, c := range p.Commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func (p *Program) usage(w io.Writer) {
	fmt.Fprintf(w, "%s\n\nUsage:\n\n\t%s <command> [arguments]\n\nThe commands are:\n\n", p.Summary, p.Name)
	for _, c := range p.Commands {
		fmt.Fprintf(w, "\t%-8s %s\n", c.Name, c.Short)
	}
	fmt.Fprintf(w, "\nUse \"%s help <command>\" for more information about a command.\n", p.Name)
}
