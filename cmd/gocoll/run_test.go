package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/flight"
	"github.com/gocoll/gocoll/internal/launch"
	"github.com/gocoll/gocoll/internal/testutil"
)

// The tests run this test binary as the ranks of a job; the variable says
// what a rank does.
const roleVar = "GOCOLL_CMD_TEST_ROLE"

// asLauncher as the first argument makes the test binary gocoll itself,
// for the tests that signal or kill the launcher process.
const asLauncher = "as-gocoll"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == asLauncher {
		os.Exit(dispatch(os.Args[2:], os.Stdout, os.Stderr))
	}
	switch os.Getenv(roleVar) {
	case "":
		os.Exit(m.Run())
	case "sleep":
		fmt.Printf("pid %d\n", os.Getpid())
		time.Sleep(time.Hour)
	case "signals":
		got := make(chan os.Signal, 8)
		signal.Notify(got, forwarded...)
		fmt.Println("ready")
		for sig := range got {
			fmt.Printf("got %v\n", unix.SignalName(sig.(syscall.Signal)))
			os.Exit(0)
		}
	case "exit-7":
		if os.Getenv("GOCOLL_RANK") == "1" {
			os.Exit(7)
		}
		time.Sleep(time.Hour)
	case "killed":
		if os.Getenv("GOCOLL_RANK") == "1" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		time.Sleep(time.Hour)
	case "long-line":
		fmt.Println(strings.Repeat("x", longLine))
		fmt.Println("after the long line")
		fmt.Print("no newline at the end")
	case "secret":
		fmt.Printf("secret=%s\n", os.Getenv("GOCOLL_SECRET"))
	case "abort", "lost-host":
		os.Exit(commJob(os.Getenv(roleVar)))
	case "init-close":
		c, err := comm.Init(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "init:", err)
			os.Exit(2)
		}
		c.Close()
	case "trace":
		os.Exit(traceRank())
	case "hang", "skip":
		os.Exit(hangRank(os.Getenv(roleVar)))
	case "hello":
		fmt.Printf("hello from %s of %s\n", os.Getenv("GOCOLL_RANK"), os.Getenv("GOCOLL_SIZE"))
		os.Exit(0)
	case "rank-1-fails":
		// Every rank leaves its pid in the directory; rank 1 gives up
		// once all have, so that the test knows every process to check.
		dir := os.Getenv("GOCOLL_CMD_TEST_DIR")
		pid := strconv.Itoa(os.Getpid())
		os.WriteFile(filepath.Join(dir, pid), nil, 0o600)
		fmt.Printf("pid %s\n", pid)
		if os.Getenv("GOCOLL_RANK") == "1" {
			for range 6000 {
				if entries, _ := os.ReadDir(dir); len(entries) == 4 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
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

// TestBoundRanksSpinOnTheirCores: ranks that gocoll run binds to a core
// each keep their core while they spin. Each rank's process may run on one
// CPU then, which counted as the host's CPUs made every bound job of two
// ranks or more look oversubscribed, and its spinning waits hand the CPU
// over between looks. Without binding, as many ranks as CPUs are not
// crowded either, and one more are.
func TestBoundRanksSpinOnTheirCores(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cpus := runtime.NumCPU()
	if cpus < 2 {
		t.Skip("one CPU: two ranks cannot each have a core of their own")
	}
	t.Setenv("GOCOLL_DEBUG", "1")
	for _, tc := range []struct {
		name    string
		args    []string
		crowded bool
	}{
		{"bound", []string{"-n", "2", "--bind-to", "core"}, false},
		{"unbound", []string{"-n", "2", "--bind-to", "none"}, false},
		{"oversubscribed", []string{"-n", strconv.Itoa(cpus + 1)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runGocoll(t, "init-close", append(append([]string{"run"}, tc.args...), exe)...)
			require.Zero(t, code, errOut)
			want := fmt.Sprintf(`"spinning hands the CPU over"=%v`, tc.crowded)
			require.Equal(t, tc.args[1], strconv.Itoa(strings.Count(errOut, want)), "ranks that logged %s in:\n%s", want, errOut)
		})
	}
}

// TestRunStopsTheJobWhenARankFails: rank 1 exits 1; gocoll run exits 1
// with a one-line reason and no rank is left running.
func TestRunStopsTheJobWhenARankFails(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	t.Setenv("GOCOLL_CMD_TEST_DIR", t.TempDir())
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
		{[]string{"run", "-n", "0", "true"}, 2, "-n 0: a job needs at least one rank"},
		{[]string{"run", "--nnodes", "0", "true"}, 2, "--nnodes 0: a job needs at least one machine"},
		{[]string{"run", "--nnodes", "2", "--node-rank", "2", "true"}, 2, "--node-rank 2 is outside 0 .. 1"},
		{[]string{"run", "--nnodes", "2", "--master", "127.0.0.1:1", "true"}, 2, "needs --master and the same secret"},
		{[]string{"run", "--secret-file", "/nonexistent/secret", "true"}, 2, "--secret-file: open /nonexistent/secret"},
		{[]string{"run", "--timeout", "-1s", "true"}, 2, "--timeout -1s is negative"},
		{[]string{"run", "--bind-to", "socket", "true"}, 2, `--bind-to "socket": want core or none`},
		{[]string{"run", "--trace", "/nonexistent/dir/t.json", "true"}, 2, "--trace /nonexistent/dir/t.json: no directory /nonexistent/dir"},
		{[]string{"run", "--bind-to", "none", "true"}, 0, ""},
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

// commJob is a rank of a real job: "abort" has rank 1 abort while the
// others wait for a message; "lost-host" has every rank wait for one
// after saying it is ready, until the test kills one node's launcher.
func commJob(role string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := comm.Init(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 2
	}
	defer c.Close()
	if err := collective.Barrier(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if role == "abort" && c.Rank() == 1 {
		c.Abort(errors.New("loss is NaN"))
		return 1
	}
	fmt.Println("ready")
	// Nobody sends: the receive ends only when the job fails.
	_, err = c.Recv(ctx, (c.Rank()+c.Size()/2)%c.Size(), 0, make([]byte, 1))
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// hangRank makes one Allreduce, says it is ready, and makes another,
// except rank 2, which instead stays in its own code (hang) or goes on
// to the Barrier that follows (skip).
func hangRank(role string) int {
	ctx := context.Background()
	c, err := comm.Init(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 2
	}
	defer c.Close()
	for i := range 2 {
		if i == 1 {
			fmt.Println("ready")
			if c.Rank() == 2 && role == "hang" {
				time.Sleep(time.Hour)
			}
			if c.Rank() == 2 && role == "skip" {
				continue
			}
		}
		if err := collective.Allreduce(ctx, c, make([]float32, 4), codec.Sum); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := collective.Barrier(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestRunDiagnosesAHang: rank 2 stays in its own code while the others
// wait for it in an Allreduce; when their timeout fails the job, run
// prints the flight recorder's diagnosis, which names rank 2 and the
// call.
func TestRunDiagnosesAHang(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	code, _, errOut := runGocoll(t, "hang", "run", "-n", "3", "--transport", "tcp", "--timeout", "2s", exe)
	require.Equal(t, 1, code, errOut)
	for _, want := range []string{"flight recorder, when the job failed", "Allreduce #2", "rank 2 has not called #2: it is in its own code"} {
		require.Contains(t, errOut, want)
	}
}

// TestRunDiagnosesAMismatch: rank 2 skips an Allreduce and calls the
// Barrier that follows; the ranks fail with the mismatch, as before,
// and run prints the flight recorder's account too. What it says of the
// waits depends on how far each rank got before the mismatch stopped
// it, so only the mismatch's own words are checked, as whichever rank
// found it words them.
func TestRunDiagnosesAMismatch(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	code, _, errOut := runGocoll(t, "skip", "run", "-n", "3", "--transport", "tcp", "--timeout", "20s", exe)
	require.Equal(t, 1, code, errOut)
	// Whichever rank finds the mismatch says it, from its side.
	require.Contains(t, errOut, "collective mismatch: rank ")
	require.Contains(t, errOut, "rank 2 called Barrier(0 × uint8) with dissemination")
	require.Contains(t, errOut, "gocoll run: flight recorder, when the job failed (")
}

// TestRunDumpsOnSIGUSR1: a SIGUSR1 to gocoll run has the ranks of a
// stuck job dump what they do, and run prints the diagnosis while the
// job goes on. A rank notes its wait once it turns slow, so the test
// asks again until the diagnosis shows it, a bounded number of times.
func TestRunDumpsOnSIGUSR1(t *testing.T) {
	l := startLauncher(t, "hang", 3, "-n", "3", "--transport", "tcp")
	l.waitReady(t)
	const want = "rank 2 has not called #2: it is in its own code"
	for i := 0; i < 40 && !strings.Contains(l.stderr.String(), want); i++ {
		require.NoError(t, l.cmd.Process.Signal(syscall.SIGUSR1))
		time.Sleep(2 * dumpWait)
	}
	require.Contains(t, l.stderr.String(), "flight recorder, on SIGUSR1 (3 of 3 ranks dumped)")
	require.Contains(t, l.stderr.String(), want)
	require.NoError(t, l.cmd.Process.Signal(syscall.SIGTERM))
	l.wait(t)
}

// launcher is gocoll run as a process of its own: the test binary with
// asLauncher, its ranks the test binary in role.
type launcher struct {
	cmd    *exec.Cmd
	stdout testutil.SyncBuffer
	stderr testutil.SyncBuffer
	ready  chan struct{} // closed when `want` ranks printed "ready" or a pid
	exited chan struct{}
}

func startLauncher(t *testing.T, role string, want int, args ...string) *launcher {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	l := &launcher{ready: make(chan struct{}), exited: make(chan struct{})}
	l.cmd = exec.Command(exe, append(append([]string{asLauncher, "run"}, args...), exe)...)
	// A launcher that a test kills (SIGKILL) cannot remove the directory
	// it made for its ranks' dumps: made in the test's own, it goes
	// with the test.
	l.cmd.Env = append(os.Environ(), roleVar+"="+role, "TMPDIR="+t.TempDir())
	l.cmd.Stderr = &l.stderr
	out, err := l.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, l.cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			l.stdout.Write([]byte(sc.Text() + "\n"))
			if strings.HasSuffix(sc.Text(), "] ready") || strings.Contains(sc.Text(), "] pid ") {
				if n++; n == want {
					close(l.ready)
				}
			}
		}
		l.cmd.Wait()
		close(l.exited)
	}()
	t.Cleanup(func() {
		l.cmd.Process.Kill()
		<-l.exited
		// The ranks die with their launcher; wait for them to be gone.
		for _, pid := range l.pids() {
			waitGone(t, pid)
		}
	})
	return l
}

func (l *launcher) waitReady(t *testing.T) {
	t.Helper()
	select {
	case <-l.ready:
	case <-l.exited:
		t.Fatalf("launcher exited before its ranks were ready:\n%s%s", l.stdout.String(), l.stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("ranks not ready:\n%s%s", l.stdout.String(), l.stderr.String())
	}
}

func (l *launcher) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-l.exited:
	case <-time.After(time.Minute):
		t.Fatalf("launcher still running:\n%s%s", l.stdout.String(), l.stderr.String())
	}
	return l.cmd.ProcessState.ExitCode()
}

// pids are the rank processes that printed their pid.
func (l *launcher) pids() []int {
	var pids []int
	for _, line := range strings.Split(l.stdout.String(), "\n") {
		if _, p, ok := strings.Cut(line, "] pid "); ok {
			if pid, err := strconv.Atoi(p); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// waitGone waits until process pid no longer exists (nor is a zombie
// of ours: the ranks are the launcher's children, reaped by init once it
// is gone).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 1000 {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("rank process %d outlived its launcher by 10s", pid)
}

// TestRanksDieWithTheLauncher: gocoll run killed with SIGKILL cannot tear
// its job down; the kernel kills the ranks (parent-death signal).
func TestRanksDieWithTheLauncher(t *testing.T) {
	l := startLauncher(t, "sleep", 3, "-n", "3")
	l.waitReady(t)
	pids := l.pids()
	require.Len(t, pids, 3)
	require.NoError(t, l.cmd.Process.Signal(syscall.SIGKILL))
	l.wait(t)
	for _, pid := range pids {
		waitGone(t, pid)
	}
}

// TestRunForwardsSignals: each signal reaches every rank as it was sent;
// the ones that end a job make run exit 128+signal, as a shell reports.
func TestRunForwardsSignals(t *testing.T) {
	tests := []struct {
		sig  syscall.Signal
		code int
	}{
		{syscall.SIGINT, 130},
		{syscall.SIGTERM, 143},
		{syscall.SIGHUP, 129},
		{syscall.SIGQUIT, 131},
		{syscall.SIGUSR1, 0}, // passed on; the ranks then exit 0 by themselves
	}
	for _, tt := range tests {
		t.Run(unix.SignalName(tt.sig), func(t *testing.T) {
			l := startLauncher(t, "signals", 2, "-n", "2")
			l.waitReady(t)
			require.NoError(t, l.cmd.Process.Signal(tt.sig))
			require.Equal(t, tt.code, l.wait(t), "stderr:\n%s", l.stderr.String())
			for r := range 2 {
				require.Contains(t, l.stdout.String(), fmt.Sprintf("[%d] got %s\n", r, unix.SignalName(tt.sig)))
			}
			if tt.code != 0 {
				require.Contains(t, l.stderr.String(), "gocoll run: interrupted by "+unix.SignalName(tt.sig))
			}
		})
	}
}

// TestRunExitsWithTheRanksStatus: run exits with the failing rank's own
// status, or 128 plus the signal that killed it, as mpirun does.
func TestRunExitsWithTheRanksStatus(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	tests := []struct {
		role string
		code int
		want string
	}{
		{"exit-7", 7, "rank 1 failed (exit status 7)"},
		{"killed", 137, "rank 1 failed (signal: killed)"},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			code, _, errOut := runGocoll(t, tt.role, "run", "-n", "3", exe)
			require.Equal(t, tt.code, code, errOut)
			require.Contains(t, errOut, tt.want)
		})
	}
}

// longLine is longer than any buffer of run's: the line must still come
// through whole, and so must everything after it.
const longLine = 3<<20 + 17

func TestRunWritesLongLines(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	code, out, errOut := runGocoll(t, "long-line", "run", "-n", "2", exe)
	require.Zero(t, code, errOut)
	for r := range 2 {
		prefix := fmt.Sprintf("[%d] ", r)
		require.Contains(t, out, prefix+"after the long line\n")
		require.Contains(t, out, prefix+"no newline at the end\n")
	}
	// With two ranks writing long lines at once, their pieces may come
	// between each other's; every byte arrives.
	require.Equal(t, 2*longLine, strings.Count(out, "x"))
}

// TestRunSecretSources: the job secret comes from --secret-file, else
// GOCOLL_SECRET, else --secret (with a warning that ps shows it), else
// it is made fresh.
func TestRunSecretSources(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(file, []byte("from-file\n"), 0o600))
	tests := []struct {
		name    string
		env     string
		args    []string
		want    string
		warning bool
	}{
		{name: "file", env: "from-env", args: []string{"--secret-file", file, "--secret", "from-flag"}, want: "from-file"},
		{name: "environment", env: "from-env", args: []string{"--secret", "from-flag"}, want: "from-env"},
		{name: "flag", args: []string{"--secret", "from-flag"}, want: "from-flag", warning: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOCOLL_SECRET", tt.env)
			code, out, errOut := runGocoll(t, "secret", append(append([]string{"run", "-n", "2"}, tt.args...), exe)...)
			require.Zero(t, code, errOut)
			require.Contains(t, out, "[0] secret="+tt.want+"\n")
			require.Contains(t, out, "[1] secret="+tt.want+"\n")
			if tt.warning {
				require.Contains(t, errOut, "--secret is visible to every user")
			} else {
				require.NotContains(t, errOut, "warning")
			}
		})
	}
	t.Run("fresh", func(t *testing.T) {
		t.Setenv("GOCOLL_SECRET", "")
		code, out, errOut := runGocoll(t, "secret", "run", "-n", "2", exe)
		require.Zero(t, code, errOut)
		require.Regexp(t, `\[0\] secret=[0-9a-f]{64}\n`, out)
	})
}

// TestRunNamesTheCause: the one-line reason names the rank that aborted,
// or the ranks of the node that was lost, not the survivor that happened
// to exit first.
func TestRunNamesTheCause(t *testing.T) {
	t.Run("abort", func(t *testing.T) {
		exe, err := os.Executable()
		require.NoError(t, err)
		code, _, errOut := runGocoll(t, "abort", "run", "-n", "3", "--transport", "tcp", exe)
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, "gocoll run: rank 1 aborted the job: loss is NaN (as the ranks reported it)")
	})
	t.Run("lost node", func(t *testing.T) {
		port, err := launch.FreePort()
		require.NoError(t, err)
		t.Setenv("GOCOLL_SECRET", launch.NewSecret())
		args := func(node int) []string {
			return []string{"-n", "2", "--nnodes", "2", "--node-rank", strconv.Itoa(node),
				"--master", "127.0.0.1:" + strconv.Itoa(port), "--transport", "tcp"}
		}
		node0 := startLauncher(t, "lost-host", 2, args(0)...)
		node1 := startLauncher(t, "lost-host", 2, args(1)...)
		node0.waitReady(t)
		node1.waitReady(t)
		require.NoError(t, node1.cmd.Process.Signal(syscall.SIGKILL))
		require.Equal(t, 1, node0.wait(t), "stderr:\n%s", node0.stderr.String())
		require.Contains(t, node0.stderr.String(), "gocoll run: ranks 2 and 3 lost: ")
	})
}

// TestDiagnose: gocoll diagnose reads dump files as gocoll run reads
// them, and refuses a file that is not a dump, naming it.
func TestDiagnose(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	dumps := []*flight.Dump{
		{Rank: 0, Size: 2, Time: now, Reason: "SIGUSR1", Comms: []flight.Comm{{ID: 1, Rank: 0, Group: []int{0, 1}, LastSeq: 4,
			Ops: []flight.Op{{Seq: 4, Kind: "Allreduce", Call: "Allreduce(4 × float32, sum) with ring", Running: true, WaitFor: 1, Step: 0, Since: now.Add(-time.Second)}}}}},
		{Rank: 1, Size: 2, Time: now, Reason: "SIGUSR1", Comms: []flight.Comm{{ID: 1, Rank: 1, Group: []int{0, 1}, LastSeq: 3,
			Ops: []flight.Op{{Seq: 3, Kind: "Allreduce", Call: "Allreduce(4 × float32, sum) with ring", WaitFor: -1, Step: -1}}}}},
	}
	var files []string
	for _, d := range dumps {
		path := flight.RankPath(filepath.Join(dir, "dump.json"), d.Rank)
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, d.WriteJSON(f))
		require.NoError(t, f.Close())
		files = append(files, path)
	}
	code, out, errOut := runGocoll(t, "", append([]string{"diagnose"}, files...)...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "rank 0 waits in Allreduce #4")
	require.Contains(t, out, "rank 1 has not called #4: it is in its own code")

	garbage := filepath.Join(dir, "garbage.json")
	require.NoError(t, os.WriteFile(garbage, []byte("{nope"), 0o600))
	code, _, errOut = runGocoll(t, "", "diagnose", files[0], garbage)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, garbage)
	code, _, _ = runGocoll(t, "", "diagnose")
	require.Equal(t, 2, code)
}
