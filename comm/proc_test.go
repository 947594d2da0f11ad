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
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/testutil"

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
	"exchange": exchangeWorker,
	"survivor": survivorWorker,
	"segment":  segmentSurvivorWorker,
	"peer":     benchPeerWorker,
}

func runWorker(name string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := comm.Init(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 2
	}
	defer c.Close()
	if err := workers[name](ctx, c); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.Rank(), err)
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

// survivorWorker: every rank talks to its ring neighbours, says "ready",
// and then waits for a message that will never come: the last rank is
// killed. A survivor reports the error it got and succeeds only if it
// names the killed rank as lost.
func survivorWorker(ctx context.Context, c *comm.Comm) error {
	me, size := c.Rank(), c.Size()
	victim := size - 1
	next, prev := (me+1)%size, (me+size-1)%size
	if err := c.Send(ctx, next, 0, []byte{byte(me)}); err != nil {
		return err
	}
	if _, err := c.Recv(ctx, prev, 0, make([]byte, 1)); err != nil {
		return err
	}
	fmt.Println("ready")
	if me == victim {
		time.Sleep(time.Hour)
	}
	// Rank 0 waits on the victim itself (its link breaks); the others wait
	// on rank 0 and can only learn of the death through the rendezvous.
	src := 0
	if me == 0 {
		src = victim
	}
	start := time.Now()
	_, err := c.Recv(ctx, src, 1, make([]byte, 1))
	var pe *comm.PeerError
	if !errors.As(err, &pe) || pe.Rank != victim {
		return fmt.Errorf("want an error naming rank %d as lost, got %v", victim, err)
	}
	fmt.Printf("lost rank %d after %v: %v\n", pe.Rank, time.Since(start).Round(time.Millisecond), err)
	return nil
}

// segmentSurvivorWorker is survivorWorker for ranks that wait in shared
// memory: after a first barrier the survivors enter a second one, in the
// communicator's segment, which the killed rank never reaches. They must
// learn of the death from its process being gone (or the rendezvous) and
// name it.
func segmentSurvivorWorker(ctx context.Context, c *comm.Comm) error {
	if c.Segment() == nil {
		return errors.New("the ranks of one host have no shared segment")
	}
	if err := collective.Barrier(ctx, c); err != nil {
		return err
	}
	fmt.Println("ready")
	victim := c.Size() - 1
	if c.Rank() == victim {
		time.Sleep(time.Hour)
	}
	start := time.Now()
	err := collective.Barrier(ctx, c)
	var pe *comm.PeerError
	if !errors.As(err, &pe) || pe.Rank != victim {
		return fmt.Errorf("want an error naming rank %d as lost, got %v", victim, err)
	}
	fmt.Printf("lost rank %d after %v: %v\n", pe.Rank, time.Since(start).Round(time.Millisecond), err)
	return nil
}

// TestKilledRankIsNamed kills one rank of four with SIGKILL while the
// others wait for it, on links and in shared memory: every survivor must
// fail soon with a *PeerError naming it, and nothing may be left in
// /dev/shm.
func TestKilledRankIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	before := shmFiles(t)
	for _, worker := range []string{"survivor", "segment"} {
		t.Run(worker, func(t *testing.T) { killRank(t, worker) })
	}
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

func killRank(t *testing.T, worker string) {
	exe, err := os.Executable()
	require.NoError(t, err)
	const n = 4
	port, err := launch.FreePort()
	require.NoError(t, err)
	secret := launch.NewSecret()

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
			"GOCOLL_TIMEOUT=2m")
		p.cmd.Stderr = &p.stderr
		stdout, err := p.cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, p.cmd.Start())
		t.Cleanup(func() { p.cmd.Process.Kill() })
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
	victim := procs[n-1]
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	<-victim.eof
	victim.cmd.Wait()

	// Each survivor must fail fast: well inside the two-minute timeout.
	for r, p := range procs[:n-1] {
		select {
		case <-p.eof:
		case <-time.After(30 * time.Second):
			t.Fatalf("rank %d still waiting 30s after rank %d was killed:\n%s", r, n-1, output(p))
		}
		require.NoError(t, p.cmd.Wait(), "rank %d output:\n%s", r, output(p))
		require.Contains(t, p.stdout.String(), fmt.Sprintf("lost rank %d", n-1))
	}
	t.Logf("all survivors reported the loss within %v", time.Since(killed).Round(time.Millisecond))
}

// benchPeerWorker is rank 1 of the two-process benchmarks: it answers
// whatever rank 0 asks for, until rank 0 sends a zero-size request.
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
		if err := benchPeer(ctx, c, size, iters, stream); err != nil {
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

// BenchmarkTCPTwoProcess measures point-to-point traffic between this
// process (rank 0) and a second process (rank 1) over TCP on loopback.
// pingpong: ns/op is one round trip (one-way latency is half of it).
// stream: rank 0 sends b.N messages back to back and waits for one
// acknowledgement, like OSU's bandwidth test; MB/s is the bandwidth.
func BenchmarkTCPTwoProcess(b *testing.B) {
	exe, err := os.Executable()
	require.NoError(b, err)
	port, err := launch.FreePort()
	require.NoError(b, err)
	secret := launch.NewSecret()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	peer := exec.Command(exe, "-test.run=^$")
	peer.Env = append(os.Environ(), workerVar+"=peer", "GOCOLL_RANK=1", "GOCOLL_SIZE=2",
		"GOCOLL_ADDR="+addr, "GOCOLL_SECRET="+secret)
	peer.Stderr = os.Stderr
	require.NoError(b, peer.Start())
	defer func() {
		if err := peer.Wait(); err != nil {
			b.Errorf("peer: %v", err)
		}
	}()
	for k, v := range map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "2", "GOCOLL_ADDR": addr, "GOCOLL_SECRET": secret} {
		b.Setenv(k, v)
	}
	ctx := context.Background()
	c, err := comm.Init(ctx)
	if err != nil {
		peer.Process.Kill()
		b.Fatal(err)
	}
	defer c.Close()
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

	cases := []struct {
		size   int
		stream bool
	}{{8, false}, {1 << 20, false}, {16 << 20, false}, {1 << 20, true}, {16 << 20, true}}
	for _, tc := range cases {
		mode := "pingpong"
		if tc.stream {
			mode = "stream"
		}
		b.Run(mode+"/"+sizeName(tc.size), func(b *testing.B) {
			buf := make([]byte, tc.size)
			ack := make([]byte, 8)
			// One untimed exchange warms up links and pools.
			ask(tc.size, 1, false)
			require.NoError(b, c.Send(ctx, 1, 0, buf))
			_, err := c.Recv(ctx, 1, 0, buf)
			require.NoError(b, err)

			ask(tc.size, b.N, tc.stream)
			b.SetBytes(int64(tc.size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
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
			}
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
