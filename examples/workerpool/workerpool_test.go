package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/rpc"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/examples/internal/exampletest"
	"github.com/gocoll/gocoll/examples/internal/ranks"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

// testConfig is a job small enough for the race detector: 120 tasks of 16
// to 16 Ki elements, 1.6 MB in all.
func testConfig() config {
	return config{Tasks: 120, MinElems: 16, MaxElems: 16 << 10, Seed: 3, Baseline: true}
}

// onRanks runs rank on n ranks of a job in this process over transport,
// each in its own goroutine; a rank that fails aborts the others. It
// returns the ranks' errors, joined.
func onRanks(t *testing.T, n int, transport string, rank func(ctx context.Context, c *comm.Comm) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return ranks.Run(ctx, n, []comm.Option{comm.WithTransport(transport), comm.WithTimeout(20 * time.Second)}, rank)
}

// reference is task id's result computed apart from compute, summing in
// the reverse order: the values are chosen so that every order gives the
// same bits.
func reference(id int, data []float64) Result {
	r := Result{ID: id, Count: len(data), Min: data[0], Max: data[0]}
	for i := len(data) - 1; i >= 0; i-- {
		x := data[i]
		r.Sum += x
		r.SumSq += x * x
		if x < r.Min {
			r.Min = x
		}
		if x > r.Max {
			r.Max = x
		}
	}
	return r
}

// TestWorkerPool runs the job with gocoll and then over net/rpc on 2 and
// 4 ranks over each transport. Each pass must return every task's
// result exactly once, right (against reference) and the same for both;
// the coordinator's count of each worker's tasks must match the worker's
// own, and with 40 tasks or more per worker every worker must have had
// one.
func TestWorkerPool(t *testing.T) {
	cfg := testConfig()
	j := newJob(cfg)
	for _, transport := range []string{"mem", "tcp", "shm"} {
		for _, n := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/n=%d", transport, n), func(t *testing.T) {
				var passes [2]*pass
				did := make([][2]int, n) // rank → tasks it did with gocoll, net/rpc
				err := onRanks(t, n, transport, func(ctx context.Context, c *comm.Comm) error {
					var err error
					if c.Rank() == 0 {
						if passes[0], err = coordinate(ctx, c, j); err != nil {
							return err
						}
						passes[1], err = rpcBaseline(ctx, c, j)
						return err
					}
					if did[c.Rank()][0], err = work(ctx, c); err != nil {
						return err
					}
					did[c.Rank()][1], err = rpcServe(ctx, c)
					return err
				})
				require.NoError(t, err)
				for i, p := range passes {
					require.Len(t, p.Results, cfg.Tasks, p.Method)
					for id, got := range p.Results {
						require.Equal(t, reference(id, j.data(id)), got, "%s: task %d", p.Method, id)
					}
					require.Equal(t, j.bytes+int64(resultSize*cfg.Tasks), p.Bytes, p.Method)
					require.Positive(t, p.Elapsed, p.Method)
					require.Len(t, p.PerWorker, n, p.Method)
					require.Zero(t, p.PerWorker[0], "%s: the coordinator does no task", p.Method)
					total := 0
					for r := 1; r < n; r++ {
						require.Positive(t, p.PerWorker[r], "%s: rank %d had no task of %d", p.Method, r, cfg.Tasks)
						require.Equal(t, did[r][i], p.PerWorker[r], "%s: tasks rank %d says it did", p.Method, r)
						total += p.PerWorker[r]
					}
					require.Equal(t, cfg.Tasks, total, "%s: tasks done", p.Method)
				}
				require.Equal(t, passes[0].Results, passes[1].Results, "gocoll and net/rpc")
			})
		}
	}
}

// rogue is a worker that follows the protocol but answers task bad with
// what spoil makes of its result (nil: an empty message).
func rogue(bad int, spoil func(Result) []byte) func(ctx context.Context, c *comm.Comm) error {
	return func(ctx context.Context, c *comm.Comm) error {
		var ready []byte
		var data []float64
		for {
			if err := c.Send(ctx, 0, tagReady, ready); err != nil {
				return err
			}
			st, err := c.Probe(ctx, 0, comm.AnyTag)
			if err != nil {
				return err
			}
			if st.Tag == tagStop {
				return errors.New("stopped without failing")
			}
			data = make([]float64, st.Bytes/8)
			if _, err := comm.Recv(ctx, c, 0, st.Tag, data); err != nil {
				return err
			}
			id := st.Tag - tagTask
			r := compute(id, data)
			ready = r.encode(nil)
			if id == bad {
				ready = spoil(r)
			}
		}
	}
}

// TestCoordinateRefuses: a worker that returns a wrong sum, the result
// of another task, a result of the wrong length or no result at all
// fails the run, with an error that names the worker and the task.
func TestCoordinateRefuses(t *testing.T) {
	cfg := testConfig()
	cfg.Tasks = 10
	j := newJob(cfg)
	for _, tt := range []struct {
		name  string
		spoil func(Result) []byte
		want  string
	}{
		{"wrong sum", func(r Result) []byte { r.Sum += 1.0 / 1024; return r.encode(nil) }, "rank 1: wrong result of task 4: got"},
		{"another task", func(r Result) []byte { r.ID = 5; return r.encode(nil) }, "rank 1: wrong result of task 4: got {ID:5"},
		{"short", func(r Result) []byte { return r.encode(nil)[:40] }, "rank 1 sent 40 bytes for task 4, want a 48-byte result"},
		{"none", func(Result) []byte { return nil }, "rank 1 sent 0 bytes for task 4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var coordErr error
			err := onRanks(t, 2, "mem", func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 0 {
					_, coordErr = coordinate(ctx, c, j)
					return coordErr
				}
				return rogue(4, tt.spoil)(ctx, c)
			})
			require.Error(t, err)
			require.ErrorContains(t, coordErr, tt.want)
		})
	}
}

// badWorker is a net/rpc worker whose sums are off by one.
type badWorker struct{}

func (badWorker) Do(t *Task, r *Result) error {
	*r = compute(t.ID, t.Data)
	r.Sum++
	return nil
}

// TestRPCBaselineRefuses: the baseline checks its results as coordinate
// does, and fails on a worker that computes wrongly.
func TestRPCBaselineRefuses(t *testing.T) {
	cfg := testConfig()
	cfg.Tasks = 10
	j := newJob(cfg)
	var coordErr error
	err := onRanks(t, 2, "mem", func(ctx context.Context, c *comm.Comm) error {
		if c.Rank() == 0 {
			_, coordErr = rpcBaseline(ctx, c, j)
			return coordErr
		}
		return serveRPC(ctx, c, badWorker{})
	})
	require.Error(t, err)
	require.ErrorContains(t, coordErr, "rank 1: wrong result of task 0: got")
}

// TestRPCBaselineLoopbackOnly: rank 0 dials no address but a loopback
// one, whatever a worker sends.
func TestRPCBaselineLoopbackOnly(t *testing.T) {
	j := newJob(testConfig())
	var coordErr error
	err := onRanks(t, 2, "mem", func(ctx context.Context, c *comm.Comm) error {
		if c.Rank() == 0 {
			_, coordErr = rpcBaseline(ctx, c, j)
			return coordErr
		}
		if err := c.Send(ctx, 0, tagAddr, []byte("192.0.2.1:80")); err != nil {
			return err
		}
		_, err := c.Recv(ctx, 0, tagDone, nil)
		return err
	})
	require.Error(t, err)
	require.ErrorContains(t, coordErr, `rank 1 serves net/rpc at "192.0.2.1:80", not a loopback address`)
}

// TestRPCServeCleansUp: a worker's server closes its listener and its
// connections when the job fails under it, also while a client still
// holds one open, so that nothing listens and none of its goroutines is
// left after it returns.
func TestRPCServeCleansUp(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	var cl *rpc.Client
	var addr string
	var serveErr error
	errAbort := errors.New("coordinator gives up")
	err := onRanks(t, 2, "mem", func(ctx context.Context, c *comm.Comm) error {
		if c.Rank() == 0 {
			conn, err := dialWorker(ctx, c, 1)
			if err != nil {
				return err
			}
			addr = conn.RemoteAddr().String()
			cl = rpc.NewClient(conn) // left open
			var r Result
			if err := cl.Call("Worker.Do", &Task{ID: 7, Data: []float64{1, 2}}, &r); err != nil {
				return err
			}
			return errAbort
		}
		_, serveErr = rpcServe(ctx, c)
		return serveErr
	})
	require.ErrorIs(t, err, errAbort)
	require.Error(t, serveErr, "the worker's server must fail with the job")
	require.NotNil(t, cl)
	defer cl.Close()
	// The server closed the client's connection: the client's reader
	// ends, and so do the server's goroutines.
	goleak.VerifyNone(t, ignore)
	var r Result
	require.ErrorIs(t, cl.Call("Worker.Do", &Task{ID: 8}, &r), rpc.ErrShutdown)
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
	}
	require.Error(t, err, "%s still accepts connections", addr)
}

// TestNewJob: the same seed draws the same tasks and another seed others;
// lengths stay within bounds and cover the range; values are multiples
// of 1/1024 in [-32, 32), and want is each task's result.
func TestNewJob(t *testing.T) {
	cfg := config{Tasks: 500, MinElems: 10, MaxElems: 1000, Seed: 9}
	a, b := newJob(cfg), newJob(cfg)
	require.Equal(t, a.spans, b.spans)
	require.Equal(t, a.pool, b.pool)
	cfg.Seed++
	require.NotEqual(t, a.spans, newJob(cfg).spans)

	require.Len(t, a.pool, 4000)
	var bytes int64
	shortest, longest := math.MaxInt, 0
	for id, s := range a.spans {
		require.True(t, s.n >= 10 && s.n <= 1000 && s.off >= 0 && s.off+s.n <= len(a.pool), "task %d: %+v", id, s)
		shortest, longest = min(shortest, s.n), max(longest, s.n)
		bytes += 8 * int64(s.n)
		require.Equal(t, reference(id, a.data(id)), a.want[id], "task %d", id)
	}
	require.Equal(t, bytes, a.bytes)
	require.Less(t, shortest, 15)
	require.Greater(t, longest, 700)
	for _, x := range a.pool {
		require.True(t, x >= -32 && x < 32 && x*1024 == math.Trunc(x*1024), "%v", x)
	}
}

func TestResultEncoding(t *testing.T) {
	r := Result{ID: 12345, Count: 1 << 20, Sum: -3.25, SumSq: 1e9, Min: -32, Max: 31.999}
	b := r.encode([]byte{0xff})
	require.Len(t, b, 1+resultSize)
	require.Equal(t, r, decodeResult(b[1:]))
}

func TestCount(t *testing.T) {
	require.Equal(t, "1 worker", count(1, "worker", "workers"))
	require.Equal(t, "0 untimed passes", count(0, "untimed pass", "untimed passes"))
	require.Equal(t, "3 workers", count(3, "worker", "workers"))
}

func TestConfigCheck(t *testing.T) {
	require.NoError(t, defaultConfig().check())
	for _, tt := range []struct {
		edit func(*config)
		want string
	}{
		{func(c *config) { c.Tasks = 0 }, "-tasks 0"},
		{func(c *config) { c.MinElems = 0 }, "want 1 ≤ min ≤ max"},
		{func(c *config) { c.MinElems, c.MaxElems = 10, 9 }, "want 1 ≤ min ≤ max"},
		{func(c *config) { c.MaxElems = maxElems + 1 }, "for the sums to stay exact"},
		{func(c *config) { c.Warmup = -1 }, "-warmup -1"},
	} {
		cfg := defaultConfig()
		tt.edit(&cfg)
		require.ErrorContains(t, cfg.check(), tt.want)
	}
}

// TestMainLocal runs the command with -local 3 -tasks 50 (of up to 32 Ki
// elements, which keeps gob fast enough under the race detector) and checks
// what it prints: the job, each method's timed pass (its throughput and
// tasks per worker, which add up to the tasks; after a warm-up pass, so
// that coordinate runs twice in a row) and the ratio.
func TestMainLocal(t *testing.T) {
	out, err := exampletest.Run(t, "-local", "3", "-tasks", "50", "-max", "32768")
	require.NoError(t, err, "%s", out)
	j := newJob(config{Tasks: 50, MinElems: 1 << 10, MaxElems: 32 << 10, Seed: 1})
	mb := fmt.Sprintf("%.1f", float64(j.bytes)/1e6)
	mbMoved := fmt.Sprintf("%.1f", float64(j.bytes+50*resultSize)/1e6)
	re := `^workerpool: 50 tasks of 1024 to 32768 float64 \(` + mb + ` MB, seed 1\); rank 0 hands them to 2 workers over tcp, after 1 untimed pass of each method
gocoll:  50 tasks, ` + mbMoved + ` MB in [0-9.]+[µm]?s: [0-9]+ tasks/s, [0-9]+\.[0-9] MB/s
         tasks per worker: rank 1 ([0-9]+), rank 2 ([0-9]+)
net/rpc: 50 tasks, ` + mbMoved + ` MB in [0-9.]+[µm]?s: [0-9]+ tasks/s, [0-9]+\.[0-9] MB/s
         tasks per worker: rank 1 ([0-9]+), rank 2 ([0-9]+)
gocoll / net/rpc: [0-9]+\.[0-9]{2}× the tasks/s \(and MB/s\) on the same tasks
$`
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	require.NotNil(t, m, "output does not match %s:\n%s", re, out)
	for _, pair := range [][2]string{{m[1], m[2]}, {m[3], m[4]}} {
		var a, b int
		fmt.Sscan(pair[0], &a)
		fmt.Sscan(pair[1], &b)
		require.Equal(t, 50, a+b, "tasks per worker: %v", pair)
	}
}

// TestMainErrors: the command refuses a job of one rank and bad flags.
func TestMainErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-local", "1", "-transport", "mem"}, "workerpool needs 2 ranks or more"},
		{[]string{"-local", "2", "-transport", "udp"}, `-transport "udp": want mem, tcp or shm`},
		{[]string{"-local", "2", "-max", "2000000"}, "for the sums to stay exact"},
	} {
		out, err := exampletest.Run(t, tt.args...)
		require.Error(t, err, "%v: %s", tt.args, out)
		require.Contains(t, out, tt.want, "%v", tt.args)
	}
}

// TestMainNoBaseline: -baseline=false runs gocoll only; -warmup 3 runs
// four passes of it in a row.
func TestMainNoBaseline(t *testing.T) {
	out, err := exampletest.Run(t, "-local", "4", "-transport", "mem", "-tasks", "30", "-max", "4096", "-warmup", "3", "-baseline=false")
	require.NoError(t, err, "%s", out)
	require.Contains(t, out, "over mem, after 3 untimed passes of each method\ngocoll:  30 tasks")
	require.NotContains(t, out, "net/rpc")
}
