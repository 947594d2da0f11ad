// Package exampletest lets an example's tests run its command as its
// users do: the test binary, started again with a variable set, runs the
// example's main instead of its tests.
package exampletest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// env sends a run of an example's test binary to its main.
const env = "GOCOLL_EXAMPLE_MAIN"

// Main is an example's TestMain: it runs main in a binary that Run
// started, and the tests otherwise.
func Main(m *testing.M, main func()) {
	if os.Getenv(env) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Run runs the example's command (its test binary, in main) with args,
// for a minute at most, and returns what it printed, stdout and stderr
// together, and how it ended.
func Run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}
