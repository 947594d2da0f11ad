package comm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/cputime"
	"github.com/gocoll/gocoll/internal/testutil"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/launch"
)

// The multi-process tests start this test binary again as the ranks of a
// job; TestMain sends such a process to its worker instead of the tests.
const workerVar = "GOCOLL_TEST_WORKER"

func TestMain(m *testing.M) {
	if name := os.Getenv(workerVar); name != "" {
		os.Exit(runWorker(name))
	}
	os.Exit(m.Run())
}

var workers = map[string]func(ctx context.Context, c *comm.Comm) error{
	"exchange":  exchangeWorker,
	"survivor":  survivorWorker,
	"exiter":    exitingSurvivorWorker,
	"segment":   segmentSurvivorWorker,
	"unsettled": unsettledSurvivorWorker,
	"peer":      benchPeerWorker,
	"procs":     procsWorker,
	"step":      stepWorker,
	"busy":      busyWorker,
	"streamer":  streamerWorker,
	"direct":    directWorker,
	"single":    singleWorker,
}

func runWorker(name string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var opts []comm.Option
	// GOCOLL_TEST_SETTLE=r:d,... makes rank r gather news of losses for
	// d instead of LossSettle.
	for _, f := range strings.Split(os.Getenv("GOCOLL_TEST_SETTLE"), ",") {
		r, d, _ := strings.Cut(f, ":")
		if settle, err := time.ParseDuration(d); err == nil && r == os.Getenv("GOCOLL_RANK") {
			opts = append(opts, comm.WithLossSettle(settle))
		}
	}
	c, err := comm.Init(ctx, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 2
	}
	defer c.Close()
	if err := workers[name](ctx, c); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.Rank(), err)
		return 1
	}
	// Close releases what the job held without failing, also after a
	// failure the worker expected.
	if err := c.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: close: %v\n", c.Rank(), err)
		return 1
	}
	return 0
}

// exchangeWorker runs a ring of several sizes, every pair with tags out of
// order, and a split, between real processes.
func exchangeWorker(ctx context.Context, c *comm.Comm) error {
	me, size := c.Rank(), c.Size()
	next, prev := (me+1)%size, (me+size-1)%size
	for seq, sz := range []int{0, 8, 1 << 20} {
		buf := make([]byte, sz)
		req, err := c.Irecv(prev, seq, buf)
		if err != nil {
			return err
		}
		if err := c.Send(ctx, next, seq, payload(me, next, seq, sz)); err != nil {
			return err
		}
		if _, err := req.Wait(ctx); err != nil {
			return err
		}
		if err := checkPayload(buf, prev, me, seq); err != nil {
			return err
		}
	}
	for dst := range size {
		for tag := range 20 {
			if err := c.Send(ctx, dst, 100+tag, payload(me, dst, tag, 64)); err != nil {
				return err
			}
		}
	}
	for src := range size {
		for tag := 19; tag >= 0; tag-- {
			buf := make([]byte, 64)
			if _, err := c.Recv(ctx, src, 100+tag, buf); err != nil {
				return err
			}
			if err := checkPayload(buf, src, me, tag); err != nil {
				return err
			}
		}
	}
	sub, err := c.Split(ctx, me%2, me)
	if err != nil {
		return err
	}
	if err := crossTraffic(ctx, c, sub); err != nil {
		return err
	}
	fmt.Printf("rank %d of %d: exchange ok\n", me, size)
	return nil
}

func TestMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := launch.Run(ctx, launch.Job{
				Program: exe, Args: []string{"-test.run=^$"}, Ranks: n,
				Env:    []string{workerVar + "=exchange"},
				Stdout: &out, Stderr: &out,
			})
			require.NoError(t, err, "output:\n%s", out.String())
			for r := range n {
				require.Contains(t, out.String(), fmt.Sprintf("[%d] rank %d of %d: exchange ok", r, r, n))
			}
		})
	}
}

// startProcs is the GOMAXPROCS this process started with, before Init
// could change it.
var startProcs = runtime.GOMAXPROCS(0)

// procsWorker says what GOMAXPROCS the process started with and what
// Init left it.
func procsWorker(ctx context.Context, c *comm.Comm) error {
	fmt.Printf("rank %d GOMAXPROCS %d then %d\n", c.Rank(), startProcs, runtime.GOMAXPROCS(0))
	return nil
}

// TestInitSharesCPUs starts two ranks as a launcher that neither binds
// them nor sets GOMAXPROCS would, and sees Init lower each one's
// GOMAXPROCS from the runtime's default to its share of the CPUs, as
// gocoll run sets it; and leave a GOMAXPROCS the environment sets.
func TestInitSharesCPUs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("two ranks have a share of more than one CPU to lose only on two CPUs or more")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") {
			env = append(env, kv)
		}
	}
	for _, tc := range []struct {
		name, procs string
	}{{"unset", ""}, {"set", "GOMAXPROCS=2"}} {
		t.Run(tc.name, func(t *testing.T) {
			port, err := launch.FreePort()
			require.NoError(t, err)
			secret := launch.NewSecret()
			outs := make([]bytes.Buffer, 2)
			cmds := make([]*exec.Cmd, 2)
			for r := range cmds {
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(slices.Clone(env), workerVar+"=procs", "GOCOLL_RANK="+strconv.Itoa(r), "GOCOLL_SIZE=2",
					"GOCOLL_ADDR=127.0.0.1:"+strconv.Itoa(port), "GOCOLL_SECRET="+secret, "GOCOLL_TIMEOUT=30s")
				if tc.procs != "" {
					cmd.Env = append(cmd.Env, tc.procs)
				}
				cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
				require.NoError(t, cmd.Start())
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				cmds[r] = cmd
			}
			for r, cmd := range cmds {
				require.NoError(t, cmd.Wait(), "rank %d:\n%s", r, outs[r].String())
				out := outs[r].String()
				var rank, start, after int
				_, err := fmt.Sscanf(lastLine(out, fmt.Sprintf("rank %d GOMAXPROCS ", r)), "rank %d GOMAXPROCS %d then %d", &rank, &start, &after)
				require.NoError(t, err, "rank %d:\n%s", r, out)
				want := start
				if tc.procs == "" && start == runtime.NumCPU() {
					want = runtime.NumCPU() / 2
				}
				require.Equal(t, want, after, "rank %d's GOMAXPROCS, which started at %d", r, start)
				// Init says so, at Info on the machine's first rank only.
				require.Equal(t, after != start && r == 0, strings.Contains(out, "GOMAXPROCS lowered"), "rank %d's log:\n%s", r, out)
			}
		})
	}
}

// lastLine is the last line of out that contains s, "" where none does.
func lastLine(out, s string) string {
	var last string
	for line := range strings.Lines(out) {
		if strings.Contains(line, s) {
			last = strings.TrimSpace(line)
		}
	}
	return last
}

// victims are the ranks that a survivor test kills or stops, from
// GOCOLL_TEST_VICTIMS ("2,3"); the last rank when it is unset.
func victims(size int) []int {
	v := os.Getenv("GOCOLL_TEST_VICTIMS")
	if v == "" {
		return []int{size - 1}
	}
	var ranks []int
	for _, f := range strings.Split(v, ",") {
		r, _ := strconv.Atoi(f)
		ranks = append(ranks, r)
	}
	return ranks
}

// checkLoss succeeds when err is a *PeerError naming exactly the victims.
func checkLoss(err error, victims []int, start time.Time) error {
	var pe *comm.PeerError
	if !errors.As(err, &pe) || !slices.Equal(pe.Ranks, victims) {
		return fmt.Errorf("want an error naming ranks %v as lost, got %v", victims, err)
	}
	fmt.Printf("lost ranks %v after %v: %v\n", pe.Ranks, time.Since(start).Round(time.Millisecond), err)
	return nil
}

// survivorWorker: every rank talks to its ring neighbours, says "ready",
// and then waits for a message that will never come: the victims are
// killed or stopped. A survivor reports the error it got and succeeds only
// if it names every victim as lost.
func survivorWorker(ctx context.Context, c *comm.Comm) error {
	me, size := c.Rank(), c.Size()
	lost := victims(size)
	next, prev := (me+1)%size, (me+size-1)%size
	if err := c.Send(ctx, next, 0, []byte{byte(me)}); err != nil {
		return err
	}
	if _, err := c.Recv(ctx, prev, 0, make([]byte, 1)); err != nil {
		return err
	}
	fmt.Println("ready")
	if slices.Contains(lost, me) {
		time.Sleep(time.Hour)
	}
	// Rank 0 waits on a victim itself (its link breaks); the others wait
	// on rank 0 and can only learn of the loss through the rendezvous,
	// unless rank 0 is the victim.
	src := 0
	if me == 0 {
		src = lost[0]
	}
	start := time.Now()
	_, err := c.Recv(ctx, src, 1, make([]byte, 1))
	return checkLoss(err, lost, start)
}

// streamerWorker: the victims stream 16 MiB messages to rank 0, which
// receives them, polling its socket (the tests set GOCOLL_SPIN), until
// the victims are killed mid-stream; the other survivors wait on rank 0.
// Every survivor must name the victims.
func streamerWorker(ctx context.Context, c *comm.Comm) error {
	me := c.Rank()
	lost := victims(c.Size())
	if err := collective.Barrier(ctx, c); err != nil {
		return err
	}
	fmt.Println("ready")
	buf := make([]byte, 16<<20)
	switch {
	case slices.Contains(lost, me):
		for {
			if err := c.Send(ctx, 0, 1, buf); err != nil {
				return err
			}
		}
	case me == 0:
		start := time.Now()
		for {
			if _, err := c.Recv(ctx, lost[0], 1, buf); err != nil {
				return checkLoss(err, lost, start)
			}
		}
	}
	start := time.Now()
	_, err := c.Recv(ctx, 0, 1, buf)
	return checkLoss(err, lost, start)
}

// directWorker: every rank loops an Allreduce of 16 MiB of registered
// memory, which goes direct, between the ranks' buffers, until the
// victims are killed in the middle of one. Every survivor must name them
// (and not fault on the memory of a victim that is gone).
func directWorker(ctx context.Context, c *comm.Comm) error {
	s := engine(c).Segment()
	if s == nil {
		return errors.New("the ranks of one host have no shared segment")
	}
	buf, err := collective.Alloc[float32](4 << 20)
	if err != nil {
		return err
	}
	if err := collective.Barrier(ctx, c); err != nil {
		return err
	}
	fmt.Println("ready")
	start := time.Now()
	for {
		if err := collective.Allreduce(ctx, c, buf, codec.Sum); err != nil {
			if s.DirectOps() == 0 {
				return fmt.Errorf("no Allreduce went direct: %w", err)
			}
			return checkLoss(err, victims(c.Size()), start)
		}
	}
}

// singleWorker: every rank loops an Allgather of ordinary slices that
// copies once (GOCOLL_SINGLE_COPY=cma), each rank reading the others'
// buffers with process_vm_readv, until the victims are killed in the
// middle of one. Every survivor must name them: a read of a process
// that is gone fails, and so does a wait for its reads.
func singleWorker(ctx context.Context, c *comm.Comm) error {
	s := engine(c).Segment()
	if s == nil {
		return errors.New("the ranks of one host have no shared segment")
	}
	send := make([]float32, 256<<10)
	recv := make([]float32, len(send)*c.Size())
	if err := collective.Barrier(ctx, c); err != nil {
		return err
	}
	fmt.Println("ready")
	start := time.Now()
	// Bcasts, Allreduces and Reduces read the others' buffers and write
	// into them, Gathers and Allgathers write into them, ReduceScatters
	// read them.
	calls := []func(root int) error{
		func(int) error { return collective.Allgather(ctx, c, send, recv) },
		func(int) error { return collective.Allreduce(ctx, c, send, codec.Sum) },
		func(root int) error { return collective.Reduce(ctx, c, send, codec.Sum, root) },
		func(int) error { return collective.ReduceScatter(ctx, c, recv, send, codec.Sum) },
		func(root int) error { return collective.Bcast(ctx, c, send, root) },
		func(root int) error { return collective.Gather(ctx, c, send, recv, root) },
	}
	for i := 0; ; i++ {
		if err := calls[i%len(calls)](i / len(calls) % c.Size()); err != nil {
			if s.SingleOps() == 0 {
				return fmt.Errorf("no call copied once: %w", err)
			}
			return checkLoss(err, victims(c.Size()), start)
		}
	}
}

// exitingSurvivorWorker is survivorWorker for programs that exit on the
// error without closing the communicator, as log.Fatal does: the ranks
// still waiting must not take such a survivor for lost.
func exitingSurvivorWorker(ctx context.Context, c *comm.Comm) error {
	if err := survivorWorker(ctx, c); err != nil {
		return err
	}
	os.Exit(0)
	return nil
}

// segmentSurvivorWorker is survivorWorker for ranks that wait in shared
// memory: after a first barrier the survivors enter a second one, in the
// communicator's segment, which the victims never reach. They must learn
// of the loss from the processes being gone (or the rendezvous) and name
// them.
func segmentSurvivorWorker(ctx context.Context, c *comm.Comm) error {
	return awaitVictimsInSegment(ctx, c, collective.Barrier)
}

// unsettledSurvivorWorker is segmentSurvivorWorker after a small Bcast
// without receipts, which the victims never call: its root returns at
// once, and the survivors' next call waits in the segment for the
// victims to have begun the Bcast (core's settle), which they never do.
func unsettledSurvivorWorker(ctx context.Context, c *comm.Comm) error {
	return awaitVictimsInSegment(ctx, c, func(ctx context.Context, c *comm.Comm) error {
		if err := collective.Bcast(ctx, c, make([]float32, 4), 0, collective.WithReceipts(false)); err != nil {
			return err
		}
		return collective.Barrier(ctx, c)
	})
}

// awaitVictimsInSegment is what the segment's survivor workers share:
// after a first barrier the victims sleep, and the survivors make the
// calls of wait, which must fail naming the victims.
func awaitVictimsInSegment(ctx context.Context, c *comm.Comm, wait func(ctx context.Context, c *comm.Comm) error) error {
	if engine(c).Segment() == nil {
		return errors.New("the ranks of one host have no shared segment")
	}
	if err := collective.Barrier(ctx, c); err != nil {
		return err
	}
	fmt.Println("ready")
	lost := victims(c.Size())
	if slices.Contains(lost, c.Rank()) {
		time.Sleep(time.Hour)
	}
	start := time.Now()
	return checkLoss(wait(ctx, c), lost, start)
}

// TestKilledRankIsNamed kills (SIGKILL) or freezes (SIGSTOP) ranks of four
// while the others wait for them, on links and in shared memory (also
// for a call they never began, which the survivors' next call waits for
// when it ran without receipts): every survivor must fail with a
// *PeerError naming every victim, killed ones in moments, frozen ones
// within the heartbeat period, and nothing may be left in /dev/shm.
func TestKilledRankIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	before := shmFiles(t)
	tests := []struct {
		name    string
		sig     syscall.Signal
		victims []int
	}{
		{"kill one", syscall.SIGKILL, []int{3}},
		{"kill a host's two", syscall.SIGKILL, []int{2, 3}},
		{"stop one", syscall.SIGSTOP, []int{3}},
		{"stop a host's two", syscall.SIGSTOP, []int{2, 3}},
		{"stop rank 0", syscall.SIGSTOP, []int{0}},
	}
	// The jobs run two at a time (t.Parallel, at -test.parallel's
	// default on two CPUs): a stopped rank is found only after its
	// heartbeats stop, a second and more, which the jobs wait out
	// together.
	t.Run("jobs", func(t *testing.T) {
		for _, tt := range tests {
			for _, worker := range []string{"survivor", "exiter", "segment", "unsettled"} {
				t.Run(tt.name+"/"+worker, func(t *testing.T) {
					t.Parallel()
					killRanks(t, worker, tt.sig, tt.victims)
				})
			}
		}
	})
	require.Equal(t, before, shmFiles(t), "files in /dev/shm")
}

func shmFiles(t *testing.T) []string {
	entries, err := os.ReadDir("/dev/shm")
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestKilledStreamerIsNamed: a rank killed while it streams large
// messages to a rank that polls its socket for them (spinning, then
// parked mid-message) is named by every survivor.
func TestKilledStreamerIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, victims := range [][]int{{3}, {2, 3}} {
		t.Run(fmt.Sprint(victims), func(t *testing.T) {
			killRanks(t, "streamer", syscall.SIGKILL, victims, "GOCOLL_SPIN=10ms", "GOCOLL_TRANSPORT=tcp")
		})
	}
}

// TestKilledDirectRankIsNamed: a rank killed while the ranks reduce
// directly between their registered buffers, or read and write each
// other's ordinary ones (single copies), is named by every survivor, and
// nothing is left in /dev/shm.
func TestKilledDirectRankIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	before := shmFiles(t)
	for _, worker := range []string{"direct", "single"} {
		for _, victims := range [][]int{{3}, {2, 3}} {
			t.Run(fmt.Sprint(worker, victims), func(t *testing.T) {
				killRanks(t, worker, syscall.SIGKILL, victims, "GOCOLL_SINGLE_COPY=cma")
			})
		}
	}
	require.Equal(t, before, shmFiles(t), "files in /dev/shm")
}

// heartbeat is the heartbeat period of the survivor tests' jobs.
const heartbeat = time.Second

// TestExitedSurvivorIsNotNamed: survivors that fail on a loss and exit,
// without Close, are not named lost by survivors still gathering news of
// the loss, which are made slow here (GOCOLL_TEST_SETTLE): neither when
// the exiting ones learnt of the loss from the rendezvous store (they
// leave it before their error returns), nor when a peer's failure frame
// told them (they pass it on along their links first), nor when the one
// exiting serves the store (it closes the store first).
func TestExitedSurvivorIsNotNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	tests := []struct {
		name   string
		victim int
		settle string
	}{
		// Ranks 1 and 2 hear of rank 3 from the store and exit while rank
		// 0, which has no link from them, still gathers news.
		{"told by the store", 3, "0:2s"},
		// Rank 2's link to rank 3 breaks and rank 2 fails on it before
		// the store's news arrives; rank 0 still gathers news.
		{"found by its link", 3, "0:2s,2:1ms"},
		// Ring 0→1→2→3: rank 0, which serves the rendezvous store,
		// hears of rank 1's loss from it, fails and exits while ranks 2
		// and 3, which have no link from it, still gather news: their
		// connections to the store end.
		{"the store's host exits", 1, "2:3s,3:2s"},
		// Ring 0→1→2→3: rank 1 tells rank 2 of rank 0's loss, rank 2 exits
		// on it while rank 3, linked from rank 2, still gathers news.
		{"told by a peer", 0, "2:1s,3:2s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			killRanks(t, "exiter", syscall.SIGKILL, []int{tt.victim}, "GOCOLL_TEST_SETTLE="+tt.settle)
		})
	}
}

func killRanks(t *testing.T, worker string, sig syscall.Signal, lost []int, env ...string) {
	exe, err := os.Executable()
	require.NoError(t, err)
	const n = 4
	port, err := launch.FreePort()
	require.NoError(t, err)
	secret := launch.NewSecret()
	var victimList []string
	for _, v := range lost {
		victimList = append(victimList, strconv.Itoa(v))
	}

	type proc struct {
		cmd    *exec.Cmd
		stderr testutil.SyncBuffer
		stdout testutil.SyncBuffer
		ready  chan struct{}
		eof    chan struct{} // stdout ended: the process exited
	}
	procs := make([]*proc, n)
	for r := range n {
		p := &proc{ready: make(chan struct{}), eof: make(chan struct{})}
		p.cmd = exec.Command(exe, "-test.run=^$")
		p.cmd.Env = append(os.Environ(), workerVar+"="+worker,
			"GOCOLL_RANK="+strconv.Itoa(r), "GOCOLL_SIZE="+strconv.Itoa(n),
			"GOCOLL_ADDR=127.0.0.1:"+strconv.Itoa(port), "GOCOLL_SECRET="+secret,
			"GOCOLL_TIMEOUT=2m", "GOCOLL_HEARTBEAT="+heartbeat.String(),
			"GOCOLL_TEST_VICTIMS="+strings.Join(victimList, ","))
		p.cmd.Env = append(p.cmd.Env, env...)
		p.cmd.Stderr = &p.stderr
		stdout, err := p.cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, p.cmd.Start())
		t.Cleanup(func() {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
		})
		go func() {
			defer close(p.eof)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				p.stdout.Write([]byte(sc.Text() + "\n"))
				if sc.Text() == "ready" {
					close(p.ready)
				}
			}
		}()
		procs[r] = p
	}
	output := func(p *proc) string { return p.stdout.String() + p.stderr.String() }
	for r, p := range procs {
		select {
		case <-p.ready:
		case <-time.After(time.Minute):
			t.Fatalf("rank %d never got ready:\n%s", r, output(p))
		}
	}
	// Give the survivors a moment to post the receives that must fail.
	time.Sleep(100 * time.Millisecond)
	for _, v := range lost {
		require.NoError(t, procs[v].cmd.Process.Signal(sig))
	}
	hit := time.Now()

	// Each survivor must fail well inside the two-minute timeout.
	for r, p := range procs {
		if slices.Contains(lost, r) {
			continue
		}
		select {
		case <-p.eof:
		case <-time.After(30 * time.Second):
			t.Fatalf("rank %d still waiting 30s after ranks %v got %v:\n%s", r, lost, sig, output(p))
		}
		require.NoError(t, p.cmd.Wait(), "rank %d output:\n%s", r, output(p))
		require.Contains(t, p.stdout.String(), fmt.Sprintf("lost ranks %v", lost))
	}
	t.Logf("all survivors reported the loss within %v", time.Since(hit).Round(time.Millisecond))
	for _, v := range lost {
		procs[v].cmd.Process.Signal(syscall.SIGCONT)
		procs[v].cmd.Process.Kill()
		<-procs[v].eof
		procs[v].cmd.Wait()
	}
}

// busyFor is how long busyWorker's rank 1 computes: ten heartbeat
// periods of TestBusyRankIsNotLost.
const busyFor = 4 * time.Second

// spin keeps the result of busyWorker's loop, so the loop is not removed.
var spin uint64

// busyWorker: rank 1 computes in a tight loop, calling nothing, for many
// heartbeat periods while the others wait for it in a barrier; nobody may
// be reported lost.
func busyWorker(ctx context.Context, c *comm.Comm) error {
	if err := collective.Barrier(ctx, c); err != nil {
		return err
	}
	if c.Rank() == 1 {
		x := uint64(1)
		for start := time.Now(); time.Since(start) < busyFor; {
			for range 1 << 20 {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}
		spin = x
	}
	if err := collective.Barrier(ctx, c); err != nil {
		return err
	}
	fmt.Printf("rank %d: not lost\n", c.Rank())
	return nil
}

// TestBusyRankIsNotLost: heartbeats run beside user code, so a rank that
// computes for ten heartbeat periods on a single OS thread (GOMAXPROCS=1)
// is not reported lost.
func TestBusyRankIsNotLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, tr := range []string{"tcp", "auto"} {
		t.Run(tr, func(t *testing.T) {
			var out testutil.SyncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := launch.Run(ctx, launch.Job{
				Program: exe, Args: []string{"-test.run=^$"}, Ranks: 3,
				Env: []string{workerVar + "=busy", "GOCOLL_TRANSPORT=" + tr,
					"GOCOLL_HEARTBEAT=" + (busyFor / 10).String(), "GOMAXPROCS=1"},
				Stdout: &out, Stderr: &out,
			})
			require.NoError(t, err, "output:\n%s", out.String())
			for r := range 3 {
				require.Contains(t, out.String(), fmt.Sprintf("rank %d: not lost", r))
			}
		})
	}
}

// benchPeerWorker is rank 1 of the two-process benchmarks: it answers
// whatever rank 0 asks for, until rank 0 sends a zero-size request, and
// after each answer tells rank 0 the CPU time it spent on it.
func benchPeerWorker(ctx context.Context, c *comm.Comm) error {
	req := make([]byte, 24)
	for {
		if _, err := c.Recv(ctx, 0, benchCtlTag, req); err != nil {
			return err
		}
		size, iters := int(binary.LittleEndian.Uint64(req)), int(binary.LittleEndian.Uint64(req[8:]))
		stream := binary.LittleEndian.Uint64(req[16:]) == 1
		if iters == 0 {
			return nil
		}
		start := cputime.Process()
		if err := benchPeer(ctx, c, size, iters, stream); err != nil {
			return err
		}
		spent := binary.LittleEndian.AppendUint64(nil, uint64(cputime.Process()-start))
		if err := c.Send(ctx, 0, benchCtlTag, spent); err != nil {
			return err
		}
	}
}

const benchCtlTag = 1 << 20

// benchPeer echoes iters messages (ping-pong) or receives iters messages
// and acknowledges the last one (stream). Streams keep two receives
// posted, as a receiver that wants zero copy does, so each message lands
// straight in a buffer instead of waiting in an early-message one.
func benchPeer(ctx context.Context, c *comm.Comm, size, iters int, stream bool) error {
	if !stream {
		buf := make([]byte, size)
		for range iters {
			if _, err := c.Recv(ctx, 0, 0, buf); err != nil {
				return err
			}
			if err := c.Send(ctx, 0, 0, buf); err != nil {
				return err
			}
		}
		return nil
	}
	bufs := [2][]byte{make([]byte, size), make([]byte, size)}
	var reqs [2]*comm.Request
	post := func(i int) (err error) {
		reqs[i%2], err = c.Irecv(0, 0, bufs[i%2])
		return err
	}
	for i := range min(2, iters) {
		if err := post(i); err != nil {
			return err
		}
	}
	for i := range iters {
		if _, err := reqs[i%2].Wait(ctx); err != nil {
			return err
		}
		if i+2 < iters {
			if err := post(i + 2); err != nil {
				return err
			}
		}
	}
	return c.Send(ctx, 0, 0, bufs[0][:min(size, 8)])
}

// BenchmarkTwoProcess measures point-to-point traffic between this
// process (rank 0) and a second process (rank 1) over each transport two
// processes of one host can use: TCP on loopback, and shared-memory links
// (what the default, auto, picks on one host).
// pingpong: ns/op is one round trip (one-way latency is half of it),
// the mean; p50-ns/op the median and p99-ns/op the 99th percentile, as
// limits.c reports its C ping-pongs (a VM's tails move the mean well
// above the median, in C too).
// stream: rank 0 sends b.N messages back to back and waits for one
// acknowledgement, like OSU's bandwidth test; MB/s is the bandwidth.
// Each runs twice: with the processes where the kernel puts them, at the
// GOMAXPROCS that Init leaves them (their share of the CPUs), and
// "bound", each process started on a CPU of its
// own at GOMAXPROCS=1, as gocoll run and mpirun start two ranks on a host
// of two CPUs, and as ../shared/anchors/limits.c runs its C ping-pongs
// (testutil.RunBound).
func BenchmarkTwoProcess(b *testing.B) {
	for _, tr := range []string{"tcp", "shm"} {
		b.Run(tr, func(b *testing.B) { benchTwoProcess(b, tr, false) })
		b.Run(tr+"/bound", func(b *testing.B) { benchTwoProcess(b, tr, true) })
	}
}

// A twoProcessCase is a message size of BenchmarkTwoProcess, bounced back
// (pingpong) or sent back to back (stream).
type twoProcessCase struct {
	size   int
	stream bool
}

var twoProcessCases = []twoProcessCase{{8, false}, {64 << 10, false}, {256 << 10, false}, {1 << 20, false},
	{16 << 20, false}, {1 << 20, true}, {16 << 20, true}}

func (tc twoProcessCase) name() string {
	if tc.stream {
		return "stream/" + sizeName(tc.size)
	}
	return "pingpong/" + sizeName(tc.size)
}

func benchTwoProcess(b *testing.B, transport string, bound bool) {
	if !bound && testutil.InBoundRun() {
		return // a bound case's child: the pattern that picks it picks this level too
	}
	if bound && !testutil.InBoundRun() {
		// Each case runs in a child started bound, which starts rank 1.
		for _, tc := range twoProcessCases {
			b.Run(tc.name(), testutil.RunBound)
		}
		return
	}
	peer := testutil.StartPeer(b, workerVar+"=peer", transport, bound)
	defer func() {
		if err := peer.Wait(); err != nil {
			b.Errorf("peer: %v", err)
		}
	}()
	ctx := context.Background()
	c, err := comm.Init(ctx)
	if err != nil {
		peer.Process.Kill()
		b.Fatal(err)
	}
	defer c.Close()
	procs := runtime.GOMAXPROCS(0) // what Init left this rank
	ask := func(size, iters int, stream bool) {
		req := make([]byte, 24)
		binary.LittleEndian.PutUint64(req, uint64(size))
		binary.LittleEndian.PutUint64(req[8:], uint64(iters))
		if stream {
			binary.LittleEndian.PutUint64(req[16:], 1)
		}
		require.NoError(b, c.Send(ctx, 1, benchCtlTag, req))
	}
	defer ask(0, 0, false)
	// peerCPU is what rank 1 spent answering the last request.
	peerCPU := func() time.Duration {
		spent := make([]byte, 8)
		_, err := c.Recv(ctx, 1, benchCtlTag, spent)
		require.NoError(b, err)
		return time.Duration(binary.LittleEndian.Uint64(spent))
	}

	for _, tc := range twoProcessCases {
		b.Run(tc.name(), func(b *testing.B) {
			defer testutil.SetProcs(procs)()
			buf := make([]byte, tc.size)
			ack := make([]byte, 8)
			// Untimed round trips, a stream's case's too, warm up links
			// and pools and let the processes settle (testutil.SettleFor).
			require.NoError(b, testutil.Settle(testutil.SettleFor, func(n int) error {
				ask(tc.size, n, false)
				for range n {
					if err := c.Send(ctx, 1, 0, buf); err != nil {
						return err
					}
					if _, err := c.Recv(ctx, 1, 0, buf); err != nil {
						return err
					}
				}
				peerCPU()
				return nil
			}))

			ask(tc.size, b.N, tc.stream)
			b.SetBytes(int64(tc.size))
			b.ReportAllocs()
			// A ping-pong also reports its median round trip, as
			// limits.c reports its C ping-pongs': on a busy host a few
			// slow trips move the mean (ns/op) well above it.
			var trips []time.Duration
			if !tc.stream {
				trips = make([]time.Duration, 0, b.N)
			}
			start := cputime.Process()
			b.ResetTimer()
			for i := range b.N {
				var sent time.Time
				if !tc.stream {
					sent = time.Now()
				}
				if err := c.Send(ctx, 1, 0, buf); err != nil {
					b.Fatal(err)
				}
				if tc.stream && i < b.N-1 {
					continue
				}
				into := buf
				if tc.stream {
					into = ack
				}
				if _, err := c.Recv(ctx, 1, 0, into); err != nil {
					b.Fatal(err)
				}
				if !tc.stream {
					trips = append(trips, time.Since(sent))
				}
			}
			b.StopTimer()
			if len(trips) > 0 {
				slices.Sort(trips)
				b.ReportMetric(float64(trips[len(trips)/2].Nanoseconds()), "p50-ns/op")
				b.ReportMetric(float64(trips[len(trips)*99/100].Nanoseconds()), "p99-ns/op")
			}
			// CPU time of both processes per operation, beside the wall
			// time: what spinning waiters cost the host.
			spent := cputime.Process() - start + peerCPU()
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
