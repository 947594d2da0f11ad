package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDispatch(t *testing.T) {
	var got []string
	p := &Program{Name: "prog", Summary: "prog does things.", Commands: []*Command{{
		Name: "echo", Short: "echo its arguments", Usage: "usage: prog echo [args]\n",
		Run: func(args []string, stdout, stderr io.Writer) int { got = args; return 3 },
	}}}
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
		ran    []string // the arguments echo got, if it ran
	}{
		{args: nil, code: 2, stderr: "prog <command> [arguments]"},
		{args: []string{"help"}, code: 0, stdout: "\techo     echo its arguments\n"},
		{args: []string{"help", "echo"}, code: 0, stdout: "usage: prog echo [args]\n"},
		{args: []string{"help", "nope"}, code: 2, stderr: "prog help nope: unknown command"},
		{args: []string{"nope"}, code: 2, stderr: "prog nope: unknown command\nRun 'prog help' for usage."},
		{args: []string{"echo", "-x", "a"}, code: 3, ran: []string{"-x", "a"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got = nil
			var stdout, stderr bytes.Buffer
			require.Equal(t, tt.code, p.Dispatch(tt.args, &stdout, &stderr))
			require.Contains(t, stdout.String(), tt.stdout)
			require.Contains(t, stderr.String(), tt.stderr)
			require.Equal(t, tt.ran, got)
		})
	}
}
