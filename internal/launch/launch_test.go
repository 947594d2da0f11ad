package launch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/launch"
)

// The tests launch this test binary as ranks; the variable picks what a
// rank does instead of running tests.
const roleVar = "LAUNCH_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleVar) {
	case "":
		os.Exit(m.Run())
	case "env":
		fmt.Printf("rank=%s size=%s addr=%s secret=%d local=%s/%s procs=%d\n", os.Getenv("GOCOLL_RANK"), os.Getenv("GOCOLL_SIZE"),
			os.Getenv("GOCOLL_ADDR"), len(os.Getenv("GOCOLL_SECRET")), os.Getenv("GOCOLL_LOCAL_RANK"), os.Getenv("GOCOLL_LOCAL_SIZE"),
			runtime.GOMAXPROCS(0))
		fmt.Fprintln(os.Stderr, "to stderr")
		os.Exit(0)
	case "fail-rank-1":
		// Every rank reports its pid; rank 1 fails, the others would run
		// for an hour.
		fmt.Printf("pid %d\n", os.Getpid())
		if os.Getenv("GOCOLL_RANK") == "1" {
			time.Sleep(200 * time.Millisecond)
			os.Exit(3)
		}
		time.Sleep(time.Hour)
	case "sleep":
		fmt.Printf("pid %d\n", os.Getpid())
		time.Sleep(time.Hour)
	case "cpus":
		fmt.Printf("rank=%s cpus=%s\n", os.Getenv("GOCOLL_RANK"), allowedCPUs())
		os.Exit(0)
	}
}

// allowedCPUs is the list of CPUs this process may run on, as Linux
// writes it in /proc/self/status ("0-3,6"), or "" elsewhere.
func allowedCPUs() string {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestRunPrefixesOutputAndSetsEnvironment(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	err = launch.Run(context.Background(), launch.Job{
		Program: exe, Ranks: 3, Env: []string{roleVar + "=env"}, Stdout: &out, Stderr: &errOut,
	})
	require.NoError(t, err)
	for r := range 3 {
		line := findLine(t, out.String(), fmt.Sprintf("[%d] rank=%d size=3 addr=127.0.0.1:", r, r))
		require.Contains(t, line, "secret=64")
		require.Contains(t, line, fmt.Sprintf("local=%d/3", r))
		require.Contains(t, errOut.String(), fmt.Sprintf("[%d] to stderr\n", r))
	}
}

// TestRunSharesTheCPUs: each rank runs with its share of the CPUs, unless
// the environment says otherwise.
func TestRunSharesTheCPUs(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	tests := []struct {
		name  string
		ranks int
		env   []string
		want  int
	}{
		{"one rank", 1, nil, launch.ProcsPerRank(1)},
		{"more ranks than CPUs", runtime.NumCPU() + 1, nil, 1},
		{"GOMAXPROCS given", 2, []string{"GOMAXPROCS=3"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := launch.Run(context.Background(), launch.Job{
				Program: exe, Ranks: tt.ranks, Env: append([]string{roleVar + "=env"}, tt.env...), Stdout: &out, Stderr: &out,
			})
			require.NoError(t, err)
			for r := range tt.ranks {
				line := findLine(t, out.String(), fmt.Sprintf("[%d] rank=%d ", r, r))
				require.Contains(t, line, fmt.Sprintf("procs=%d", tt.want))
			}
		})
	}
	require.Equal(t, runtime.NumCPU(), launch.ProcsPerRank(1))
}

func TestRunPlacesNodesRanks(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	var out bytes.Buffer
	err = launch.Run(context.Background(), launch.Job{
		Program: exe, Ranks: 2, Nodes: 3, NodeRank: 2, Master: "127.0.0.1:1", Secret: "s",
		Env: []string{roleVar + "=env"}, Stdout: &out, Stderr: &out,
	})
	require.NoError(t, err)
	findLine(t, out.String(), "[4] rank=4 size=6 addr=127.0.0.1:1 secret=1 local=0/2 ")
	findLine(t, out.String(), "[5] rank=5 size=6 addr=127.0.0.1:1 secret=1 local=1/2 ")
}

func TestRunRejectsBadJobs(t *testing.T) {
	tests := []struct {
		name string
		job  launch.Job
		want string
	}{
		{"no ranks", launch.Job{Program: "true"}, "at least one rank"},
		{"node rank outside", launch.Job{Program: "true", Ranks: 1, Nodes: 2, NodeRank: 2, Master: "h:1", Secret: "s"}, "node rank 2 is outside [0, 2)"},
		{"nodes without master", launch.Job{Program: "true", Ranks: 1, Nodes: 2, Secret: "s"}, "needs a master address"},
		{"nodes without secret", launch.Job{Program: "true", Ranks: 1, Nodes: 2, Master: "h:1"}, "same secret"},
		{"missing program", launch.Job{Program: "/nonexistent/prog", Ranks: 2}, "rank 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := launch.Run(context.Background(), tt.job)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestFailingRankStopsTheJob: rank 1 exits 3, Run reports it, and the
// other ranks (which would sleep for an hour) are gone.
func TestFailingRankStopsTheJob(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	var out bytes.Buffer
	start := time.Now()
	err = launch.Run(context.Background(), launch.Job{
		Program: exe, Ranks: 4, Env: []string{roleVar + "=fail-rank-1"}, Stdout: &out, Stderr: &out,
		KillGrace: time.Second,
	})
	var re *launch.RankError
	require.True(t, errors.As(err, &re), "got %v", err)
	require.Equal(t, 1, re.Rank)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit))
	require.Equal(t, 3, exit.ExitCode())
	require.Less(t, time.Since(start), time.Minute)
	assertGone(t, out.String())
}

func TestCancelStopsTheJob(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = launch.Run(ctx, launch.Job{
		Program: exe, Ranks: 2, Env: []string{roleVar + "=sleep"},
		Stdout: &out, Stderr: &out, KillGrace: time.Second,
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 2, strings.Count(out.String(), "pid "), "both ranks started:\n%s", out.String())
	assertGone(t, out.String())
}

// assertGone checks that no process whose pid a rank printed still runs.
func assertGone(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		_, pidText, ok := strings.Cut(line, "pid ")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(pidText))
		require.NoError(t, err)
		err = syscall.Kill(pid, 0)
		require.ErrorIs(t, err, syscall.ESRCH, "process %d is still there", pid)
	}
}

func findLine(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, out)
	return ""
}
