package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The tests run this test binary as the ranks of a job; the variable says
// what a rank does.
const roleVar = "GOCOLL_CMD_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleVar) {
	case "":
		os.Exit(m.Run())
	case "hello":
		fmt.Printf("hello from %s of %s\n", os.Getenv("GOCOLL_RANK"), os.Getenv("GOCOLL_SIZE"))
		os.Exit(0)
	case "rank-1-fails":
		fmt.Printf("pid %d\n", os.Getpid())
		if os.Getenv("GOCOLL_RANK") == "1" {
			time.Sleep(100 * time.Millisecond)
			fmt.Fprintln(os.Stderr, "rank 1 gives up")
			os.Exit(1)
		}
		time.Sleep(time.Hour)
	}
}

func runGocoll(t *testing.T, role string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv(roleVar, role)
	var stdout, stderr bytes.Buffer
	code := dispatch(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestRunPrefixesEachRank(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	code, out, errOut := runGocoll(t, "hello", "run", "-n", "3", exe)
	require.Zero(t, code, errOut)
	for r := range 3 {
		require.Contains(t, out, fmt.Sprintf("[%d] hello from %d of 3\n", r, r))
	}
}

// TestRunStopsTheJobWhenARankFails: rank 1 exits 1; gocoll run exits 1
// with a one-line reason and no rank is left running.
func TestRunStopsTheJobWhenARankFails(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	start := time.Now()
	code, out, errOut := runGocoll(t, "rank-1-fails", "run", "-n", "4", exe)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "[1] rank 1 gives up")
	require.Contains(t, errOut, "gocoll run: rank 1 failed (exit status 1)")
	require.Less(t, time.Since(start), 30*time.Second)
	pids := 0
	for _, line := range strings.Split(out, "\n") {
		_, p, ok := strings.Cut(line, "pid ")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(p)
		require.NoError(t, err)
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "rank process %d is still running", pid)
		pids++
	}
	require.Equal(t, 4, pids, "every rank reported its pid:\n%s", out)
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage:"},
		{[]string{"frobnicate"}, 2, "gocoll frobnicate: unknown command"},
		{[]string{"run"}, 2, "gocoll run: no program given"},
		{[]string{"run", "-n", "2", "--transport", "carrier-pigeon", "true"}, 2, `unknown transport "carrier-pigeon"`},
		{[]string{"run", "/nonexistent/program"}, 2, "gocoll run:"},
		{[]string{"help", "run"}, 0, "usage: gocoll run"},
		{[]string{"help"}, 0, "The commands are:"},
		{[]string{"run", "--help"}, 0, "usage: gocoll run"},
		{[]string{"run", "-n", "x", "prog"}, 2, `invalid value "x" for flag -n`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch(tt.args, &stdout, &stderr)
			require.Equal(t, tt.code, code)
			require.Contains(t, stdout.String()+stderr.String(), tt.want)
		})
	}
}
