package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// A toolCase runs a benchtool subcommand with args and expects its exit
// code, lines in its output and a part of its error output.
type toolCase struct {
	name       string
	args       []string
	code       int
	wantStdout []string
	wantStderr string
}

func runToolCases(t *testing.T, tool string, tests []toolCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := tools[tool].Run(tt.args, &stdout, &stderr)
			require.Equal(t, tt.code, code, "stderr: %s", stderr.String())
			for _, want := range tt.wantStdout {
				require.Contains(t, stdout.String(), want)
			}
			require.Contains(t, stderr.String(), tt.wantStderr)
		})
	}
}
