// Package launch starts the ranks of a job as local processes: the engine
// behind gocoll run, and the way tests start real multi-process jobs.
package launch

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gocoll/gocoll/internal/failreport"
)

// Job describes the processes to start on this machine.
type Job struct {
	Program string
	Args    []string
	// Ranks is the number of ranks to start here.
	Ranks int
	// Nodes and NodeRank place this machine's ranks in a job spread over
	// several machines: rank = NodeRank*Ranks + local index. Zero Nodes
	// means one machine.
	Nodes, NodeRank int
	// Master is the rendezvous address (host:port). Empty means a free
	// port on 127.0.0.1, which only works with one machine.
	Master string
	// Secret is the job secret handed to every rank. Empty means a fresh
	// random one; a multi-machine job must pass the same secret everywhere.
	Secret string
	// Env is added to every rank's environment (after os.Environ).
	// Unless it or the environment sets GOMAXPROCS, every rank gets
	// GOMAXPROCS=ProcsPerRank(Ranks).
	Env []string
	// Stdout and Stderr receive every rank's output, each line prefixed
	// with "[rank] ". Nil means os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// KillGrace is how long ranks get between SIGTERM and SIGKILL when the
	// job is torn down. Zero means DefaultKillGrace.
	KillGrace time.Duration
	// Settle is how long the other ranks get to end by themselves after
	// one failed, before the teardown. Zero means DefaultSettle.
	Settle time.Duration
	// Signals, when not nil, delivers the signals to pass on to the
	// ranks (see Run).
	Signals <-chan os.Signal
	// NoBind leaves the ranks wherever the kernel puts them. Otherwise,
	// when there are no more ranks than CPUs, each rank is bound to CPUs
	// of its own, ProcsPerRank of them, as mpirun binds ranks to cores by
	// default: two ranks that each wait by polling must not share a CPU
	// while another stands idle, and a rank moved between CPUs leaves its
	// cache behind.
	NoBind bool
}

// DefaultKillGrace is the time between SIGTERM and SIGKILL at teardown.
const DefaultKillGrace = 3 * time.Second

// DefaultSettle is how long the other ranks get, after one failed, to end
// by themselves before they are stopped. Ranks that wait for the failed
// one learn of it within moments and exit with their own account of it;
// ranks that compute are stopped after it.
const DefaultSettle = time.Second

// RankError reports the first rank that failed.
type RankError struct {
	Rank int
	Err  error // the *exec.ExitError or start error
	// Cause is the first failure a rank reported (see package
	// failreport): whom the ranks blame, which is often not Rank, a
	// survivor that exited because of it. Nil when no rank reported one.
	Cause *failreport.Report
}

func (e *RankError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%v; rank %d: %v", e.Cause, e.Rank, e.Err)
	}
	return fmt.Sprintf("rank %d: %v", e.Rank, e.Err)
}

func (e *RankError) Unwrap() error { return e.Err }

// ExitCode is the status a launcher exits with for this failure, as
// mpirun does: the rank's own exit status, or 128 plus the signal that
// killed it.
func (e *RankError) ExitCode() int {
	var ee *exec.ExitError
	if !errors.As(e.Err, &ee) {
		return 1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := ee.ExitCode(); code > 0 {
		return code
	}
	return 1
}

// SignalError reports that a signal from Job.Signals interrupted the job.
type SignalError struct {
	Signal syscall.Signal
}

func (e *SignalError) Error() string { return fmt.Sprintf("interrupted by %v", e.Signal) }

// ExitCode is 128 plus the signal, as a shell reports a job a signal
// ended.
func (e *SignalError) ExitCode() int { return 128 + int(e.Signal) }

// Run starts the job's ranks and waits for them. When one rank fails, the
// others get the settle time to end by themselves; then, or at once when
// ctx ends, they are terminated (SIGTERM, then SIGKILL after the grace
// period), and Run returns the first failure; no process is left behind. Each signal from job.Signals is passed on to every rank as it
// is; SIGINT, SIGTERM, SIGHUP and SIGQUIT then end the job like a failure
// and Run returns a *SignalError. Ranks are killed when the launcher dies,
// even by SIGKILL, on Linux (the parent-death signal).
func Run(ctx context.Context, job Job) error {
	if job.Ranks < 1 {
		return fmt.Errorf("launch: need at least one rank, got %d", job.Ranks)
	}
	nodes := max(job.Nodes, 1)
	if job.NodeRank < 0 || job.NodeRank >= nodes {
		return fmt.Errorf("launch: node rank %d is outside [0, %d)", job.NodeRank, nodes)
	}
	if job.Master == "" {
		if nodes > 1 {
			return errors.New("launch: a job over several machines needs a master address (host:port)")
		}
		port, err := FreePort()
		if err != nil {
			return err
		}
		job.Master = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	if job.Secret == "" {
		if nodes > 1 {
			return errors.New("launch: a job over several machines needs the same secret on every machine")
		}
		job.Secret = NewSecret()
	}
	stdout, stderr := orDefault(job.Stdout, os.Stdout), orDefault(job.Stderr, os.Stderr)
	grace := job.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	size := nodes * job.Ranks

	// The parent-death signal fires when the thread that started a child
	// exits, not the process: the ranks are started from this goroutine,
	// locked to its thread until they are all reaped. (A child also
	// inherits the CPUs of the thread that started it: startOn.)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	var outMu sync.Mutex // lines from different ranks never interleave
	cmds := make([]*exec.Cmd, job.Ranks)
	done := make(chan rankExit, job.Ranks)
	reports := make(chan failreport.Report, job.Ranks)
	var readers sync.WaitGroup
	started := 0
	var startErr error
	var sets []cpuSet
	if !job.NoBind {
		sets = cpuSets(job.Ranks)
	}
	for i := range job.Ranks {
		rank := job.NodeRank*job.Ranks + i
		cmd := exec.Command(job.Program, job.Args...)
		cmd.Env = append(os.Environ(), job.Env...)
		if !hasVar(cmd.Env, "GOMAXPROCS") {
			cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(ProcsPerRank(job.Ranks)))
		}
		cmd.Env = append(cmd.Env,
			"GOCOLL_RANK="+strconv.Itoa(rank),
			"GOCOLL_SIZE="+strconv.Itoa(size),
			"GOCOLL_LOCAL_RANK="+strconv.Itoa(i),
			"GOCOLL_LOCAL_SIZE="+strconv.Itoa(job.Ranks),
			"GOCOLL_ADDR="+job.Master,
			"GOCOLL_SECRET="+job.Secret,
			failreport.EnvFD+"=3",
		)
		// Each rank leads its own process group, so teardown and
		// forwarded signals reach the processes a rank started too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		dieWithParent(cmd.SysProcAttr)
		// Plain pipes rather than StdoutPipe: the rank's exit and the end of
		// its output are separate events, and Wait must not wait for output
		// that a leftover child keeps open.
		outR, outW, err1 := os.Pipe()
		errR, errW, err2 := os.Pipe()
		repR, repW, err3 := os.Pipe()
		if err := errors.Join(err1, err2, err3); err != nil {
			closeAll(outR, outW, errR, errW, repR, repW)
			startErr = &RankError{Rank: rank, Err: err}
			break
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		cmd.ExtraFiles = []*os.File{repW} // descriptor 3
		var set *cpuSet
		if sets != nil {
			set = &sets[i]
		}
		err := startOn(set, cmd.Start)
		closeAll(outW, errW, repW)
		if err != nil {
			closeAll(outR, errR, repR)
			startErr = &RankError{Rank: rank, Err: err}
			break
		}
		cmds[i] = cmd
		started++
		prefix := "[" + strconv.Itoa(rank) + "] "
		readers.Add(3)
		go copyLines(&readers, &outMu, stdout, outR, prefix)
		go copyLines(&readers, &outMu, stderr, errR, prefix)
		go readReports(&readers, repR, reports)
		go func() { done <- rankExit{rank: rank, err: cmd.Wait()} }()
	}

	signalAll := func(sig syscall.Signal) {
		for _, cmd := range cmds {
			if cmd != nil && cmd.Process != nil {
				syscall.Kill(-cmd.Process.Pid, sig)
			}
		}
	}
	var first error = startErr
	var cause *failreport.Report
	var killTimer, settleTimer <-chan time.Time
	settle := job.Settle
	if settle <= 0 {
		settle = DefaultSettle
	}
	stop := func() {
		if killTimer == nil {
			signalAll(syscall.SIGTERM)
			killTimer = time.After(grace)
		}
	}
	if first != nil {
		stop()
	}
	ctxDone := ctx.Done()
	for remaining := started; remaining > 0; {
		select {
		case ex := <-done:
			remaining--
			if ex.err != nil && first == nil {
				first = &RankError{Rank: ex.rank, Err: ex.err}
				// The others usually learn of the failure themselves
				// within moments; let them end on their own and say
				// what they saw before they are stopped.
				settleTimer = time.After(settle)
			}
		case <-settleTimer:
			settleTimer = nil
			stop()
		case r := <-reports:
			if cause == nil {
				cause = &r
			}
		case sig := <-job.Signals:
			s, ok := sig.(syscall.Signal)
			if !ok {
				continue
			}
			signalAll(s)
			switch s {
			case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
				if _, interrupted := first.(*SignalError); !interrupted {
					first = &SignalError{Signal: s}
				}
				if killTimer == nil {
					killTimer = time.After(grace)
				}
			}
		case <-ctxDone:
			ctxDone = nil
			if first == nil {
				first = context.Cause(ctx)
			}
			stop()
		case <-killTimer:
			signalAll(syscall.SIGKILL)
		}
	}
	// Reap any process a rank left in its group.
	signalAll(syscall.SIGKILL)
	readers.Wait()
	close(reports)
	for r := range reports {
		if cause == nil {
			cause = &r
		}
	}
	if re, ok := first.(*RankError); ok {
		re.Cause = cause
	}
	return first
}

type rankExit struct {
	rank int
	err  error
}

// ProcsPerRank is the GOMAXPROCS each of ranks processes gets on this
// machine: its share of the CPUs this process may use, at least 1. It is
// what mpirun's binding of each rank to its own cores and torchrun's
// OMP_NUM_THREADS=1 achieve: ranks that each run as many threads as the
// machine has CPUs take turns on them, and a rank whose message has
// arrived waits for a CPU the other ranks' idle threads hold. On the
// project's 2-core machine, two ranks with one P each were 1.4 to 1.8
// times as fast as with two each for 8 B allreduces and 64 KiB
// allreduces and gathers over tcp (docs/performance.md).
func ProcsPerRank(ranks int) int {
	return max(1, runtime.NumCPU()/max(ranks, 1))
}

// hasVar reports whether env sets the variable name.
func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k == name {
			return true
		}
	}
	return false
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// readReports passes on the failure reports of one rank (see package
// failreport); lines that are not reports are ignored.
func readReports(wg *sync.WaitGroup, r io.ReadCloser, reports chan<- failreport.Report) {
	defer wg.Done()
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, failreport.MaxLine), failreport.MaxLine)
	sent := false
	for sc.Scan() {
		if rep, err := failreport.Parse(sc.Text()); err == nil && !sent {
			reports <- rep // room for one per rank
			sent = true
		}
	}
	io.Copy(io.Discard, r)
}

// lineChunk is the most of a line that copyLines holds: a longer line is
// passed on in pieces of this size.
const lineChunk = 64 << 10

// copyLines copies a rank's output to w, prefixing each line. A line is
// written with one Write under mu, so lines from different ranks never
// mix; a line longer than lineChunk is written in pieces as it comes
// (the prefix only before the first), and another rank's line may come
// between them, but nothing is lost.
func copyLines(wg *sync.WaitGroup, mu *sync.Mutex, w io.Writer, r io.ReadCloser, prefix string) {
	defer wg.Done()
	defer r.Close()
	br := bufio.NewReaderSize(r, lineChunk)
	out := make([]byte, 0, len(prefix)+lineChunk+1)
	midLine := false
	for {
		piece, err := br.ReadSlice('\n')
		if len(piece) == 0 && err != nil {
			break
		}
		out = out[:0]
		if !midLine {
			out = append(out, prefix...)
		}
		out = append(out, piece...)
		midLine = piece[len(piece)-1] != '\n'
		if midLine && err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			out = append(out, '\n') // the rank ended without a newline
		}
		mu.Lock()
		w.Write(out)
		mu.Unlock()
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
}

func orDefault(w, def io.Writer) io.Writer {
	if w == nil {
		return def
	}
	return w
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago:
// where the kernel says which ports it hands to outgoing connections
// (ephemeralFrom), one below them, since a port it hands out between
// this look and the port's use is taken. A test's four ranks once found
// their rendezvous port so taken while other tests' processes connected
// over loopback (2026-11-30); below that range only another such look
// can take it.
func FreePort() (int, error) {
	if lo, ok := ephemeralFrom(); ok && lo-portsFrom >= portTries {
		for range portTries {
			p := portsFrom + mathrand.IntN(lo-portsFrom)
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				l.Close()
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("launch: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreePort picks among the ports from portsFrom up to the kernel's
// ephemeral range, above those that services commonly take, and tries
// portTries of them before it asks the kernel for one of its own.
const (
	portsFrom = 10000
	portTries = 32
)

// NewSecret returns a fresh random job secret.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}
