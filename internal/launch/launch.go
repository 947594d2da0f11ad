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
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
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
	Env []string
	// Stdout and Stderr receive every rank's output, each line prefixed
	// with "[rank] ". Nil means os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// KillGrace is how long ranks get between SIGTERM and SIGKILL when the
	// job is torn down. Zero means DefaultKillGrace.
	KillGrace time.Duration
}

// DefaultKillGrace is the time between SIGTERM and SIGKILL at teardown.
const DefaultKillGrace = 3 * time.Second

// RankError reports the first rank that failed.
type RankError struct {
	Rank int
	Err  error // the *exec.ExitError or start error
}

func (e *RankError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }
func (e *RankError) Unwrap() error { return e.Err }

// Run starts the job's ranks and waits for them. When one rank fails, or
// ctx ends, the others are terminated (SIGTERM, then SIGKILL after the
// grace period) and Run returns the first failure; no process is left
// behind.
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

	var outMu sync.Mutex // whole lines from different ranks never interleave
	cmds := make([]*exec.Cmd, job.Ranks)
	done := make(chan rankExit, job.Ranks)
	var copiers sync.WaitGroup
	started := 0
	var startErr error
	for i := range job.Ranks {
		rank := job.NodeRank*job.Ranks + i
		cmd := exec.Command(job.Program, job.Args...)
		cmd.Env = append(os.Environ(), job.Env...)
		cmd.Env = append(cmd.Env,
			"GOCOLL_RANK="+strconv.Itoa(rank),
			"GOCOLL_SIZE="+strconv.Itoa(size),
			"GOCOLL_LOCAL_RANK="+strconv.Itoa(i),
			"GOCOLL_LOCAL_SIZE="+strconv.Itoa(job.Ranks),
			"GOCOLL_ADDR="+job.Master,
			"GOCOLL_SECRET="+job.Secret,
		)
		// Each rank leads its own process group, so teardown reaches the
		// processes a rank started too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// Plain pipes rather than StdoutPipe: the rank's exit and the end of
		// its output are separate events, and Wait must not wait for output
		// that a leftover child keeps open.
		outR, outW, err1 := os.Pipe()
		errR, errW, err2 := os.Pipe()
		if err := errors.Join(err1, err2); err != nil {
			startErr = &RankError{Rank: rank, Err: err}
			break
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		err := cmd.Start()
		outW.Close()
		errW.Close()
		if err != nil {
			outR.Close()
			errR.Close()
			startErr = &RankError{Rank: rank, Err: err}
			break
		}
		cmds[i] = cmd
		started++
		prefix := "[" + strconv.Itoa(rank) + "] "
		copiers.Add(2)
		go copyLines(&copiers, &outMu, stdout, outR, prefix)
		go copyLines(&copiers, &outMu, stderr, errR, prefix)
		go func() { done <- rankExit{rank: rank, err: cmd.Wait()} }()
	}

	var first error = startErr
	terminate := func() {
		for _, cmd := range cmds {
			if cmd != nil && cmd.Process != nil {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			}
		}
	}
	var killTimer <-chan time.Time
	if first != nil {
		terminate()
		killTimer = time.After(grace)
	}
	ctxDone := ctx.Done()
	for remaining := started; remaining > 0; {
		select {
		case ex := <-done:
			remaining--
			if ex.err != nil && first == nil {
				first = &RankError{Rank: ex.rank, Err: ex.err}
				terminate()
				killTimer = time.After(grace)
			}
		case <-ctxDone:
			ctxDone = nil
			if first == nil {
				first = context.Cause(ctx)
			}
			terminate()
			killTimer = time.After(grace)
		case <-killTimer:
			for _, cmd := range cmds {
				if cmd != nil && cmd.Process != nil {
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				}
			}
		}
	}
	// Reap any process a rank left in its group.
	for _, cmd := range cmds {
		if cmd != nil && cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	copiers.Wait()
	return first
}

type rankExit struct {
	rank int
	err  error
}

func copyLines(wg *sync.WaitGroup, mu *sync.Mutex, w io.Writer, r io.ReadCloser, prefix string) {
	defer wg.Done()
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		mu.Lock()
		io.WriteString(w, prefix+sc.Text()+"\n")
		mu.Unlock()
	}
	io.Copy(io.Discard, r) // a line over 1 MiB ends the scan; keep the pipe drained
}

func orDefault(w, def io.Writer) io.Writer {
	if w == nil {
		return def
	}
	return w
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("launch: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// NewSecret returns a fresh random job secret.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}
