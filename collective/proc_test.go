package collective

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/launch"
)

// The multi-process test runs this test binary as the ranks of a job
// started by gocoll run; the variable sends such a process to the worker,
// or with the value "pingpong" to the echoing rank of
// BenchmarkObjectPingPongProcesses.
const workerVar = "GOCOLL_COLLECTIVE_TEST_WORKER"

func TestMain(m *testing.M) {
	if w := os.Getenv(workerVar); w != "" {
		run := worker
		if w == "pingpong" {
			run = pingPongPeer
		}
		if err := run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// worker runs every collective once between real processes, with every
// algorithm of Allreduce, the shared-memory ones where its communicator
// has a segment or a hierarchy, and checks each result against the
// sequential reference.
func worker() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := comm.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	me, n := c.Rank(), c.Size()
	const count = 1001
	inputs := make([][]float32, n)
	for r := range n {
		inputs[r] = input[float32](r, count, 1)
	}
	sum := reference(codec.Sum, inputs)
	check := func(what string, err error, got, want []float32) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := equalBits(got, want); err != nil {
			return fmt.Errorf("%s on rank %d: %w", what, me, err)
		}
		return nil
	}

	algos, shared := allreduceAlgorithms, "links"
	switch {
	case (*core.Comm)(c).Segment() != nil:
		algos, shared = append(slices.Clone(algos), Shm), "a segment"
	case (*core.Comm)(c).Hierarchy() != nil:
		algos, shared = append(slices.Clone(algos), Hierarchical), "a hierarchy"
	}
	for _, algo := range algos {
		buf := append([]float32(nil), inputs[me]...)
		err := Allreduce(ctx, c, buf, codec.Sum, WithAlgorithm(algo))
		if err := check("Allreduce "+algo.String(), err, buf, sum); err != nil {
			return err
		}
	}
	root := n - 1
	buf := append([]float32(nil), inputs[me]...)
	err = Reduce(ctx, c, buf, codec.Sum, root)
	want := inputs[me]
	if me == root {
		want = sum
	}
	if err := check("Reduce", err, buf, want); err != nil {
		return err
	}
	buf = append([]float32(nil), inputs[me]...)
	err = Bcast(ctx, c, buf, root)
	if err := check("Bcast", err, buf, inputs[root]); err != nil {
		return err
	}
	all := make([]float32, 0, n*count)
	for r := range n {
		all = append(all, inputs[r]...)
	}
	recv := make([]float32, n*count)
	err = Allgather(ctx, c, inputs[me], recv)
	if err := check("Allgather", err, recv, all); err != nil {
		return err
	}
	var gathered []float32
	if me == root {
		gathered = make([]float32, n*count)
	}
	err = Gather(ctx, c, inputs[me], gathered, root)
	if me == root {
		if err := check("Gather", err, gathered, all); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("Gather: %w", err)
	}
	part := make([]float32, count)
	err = Scatter(ctx, c, all, part, root)
	if err := check("Scatter", err, part, inputs[me]); err != nil {
		return err
	}
	block := make([]float32, count/n)
	err = ReduceScatter(ctx, c, sum[:len(block)*n], block, codec.Max)
	if err := check("ReduceScatter", err, block, sum[me*len(block):(me+1)*len(block)]); err != nil {
		return err
	}
	// Values of one shape, larger than a fast line: through a segment,
	// each rank reads the others' where they lie in it.
	step, wantStep := stepOf(me, count, 0), stepOf(0, count, 0)
	for r := 1; r < n; r++ {
		x := stepOf(r, count, 0)
		if err := addSteps(&wantStep, &x); err != nil {
			return err
		}
	}
	if err := AllreduceObject(ctx, c, &step, addSteps); err != nil {
		return fmt.Errorf("AllreduceObject: %w", err)
	}
	if err := equalSteps(step, wantStep); err != nil {
		return fmt.Errorf("AllreduceObject on rank %d: %w", me, err)
	}
	steps, err := AllgatherObject(ctx, c, stepOf(me, count, 0))
	if err != nil {
		return fmt.Errorf("AllgatherObject: %w", err)
	}
	for r, got := range steps {
		if err := equalSteps(got, stepOf(r, count, 0)); err != nil {
			return fmt.Errorf("AllgatherObject on rank %d, rank %d's value: %w", me, r, err)
		}
	}
	if err := Barrier(ctx, c); err != nil {
		return fmt.Errorf("Barrier: %w", err)
	}
	fmt.Printf("rank %d of %d: collectives ok with %s\n", me, n, shared)
	return nil
}

// buildGocoll builds the gocoll command into a temporary directory.
func buildGocoll(t *testing.T) string {
	t.Helper()
	gocoll := filepath.Join(t.TempDir(), "gocoll")
	out, err := exec.Command("go", "build", "-o", gocoll, "github.com/gocoll/gocoll/cmd/gocoll").CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	return gocoll
}

// TestCollectivesThroughGocollRun builds the gocoll command, starts four
// ranks of this test binary with gocoll run, and checks that every rank
// ran every collective correctly: through the shared segment, and over
// tcp links that the waiting ranks poll (four ranks on a machine with
// fewer CPUs yield them while they do).
func TestCollectivesThroughGocollRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gocoll command and starts processes")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	gocoll := buildGocoll(t)
	const n = 4
	for _, tt := range []struct{ transport, shared string }{{"auto", "a segment"}, {"tcp", "links"}} {
		t.Run(tt.transport, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			run := exec.CommandContext(ctx, gocoll, "run", "-n", fmt.Sprint(n), "--transport", tt.transport, "--timeout", "1m", exe, "-test.run=^$")
			run.Env = append(os.Environ(), workerVar+"=1")
			var output bytes.Buffer
			run.Stdout, run.Stderr = &output, &output
			require.NoError(t, run.Run(), "gocoll run:\n%s", output.String())
			for r := range n {
				require.Contains(t, output.String(), fmt.Sprintf("[%d] rank %d of %d: collectives ok with %s", r, r, n, tt.shared))
			}
		})
	}
}

// TestTwoNodesThroughGocollRun starts two gocoll run launchers, as two
// machines would (--nnodes 2, each its --node-rank, one --master and
// --secret), of two ranks each: together one job of four ranks, on two
// "hosts" (GOCOLL_HOST), so that Allreduce runs hierarchically.
func TestTwoNodesThroughGocollRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gocoll command and starts processes")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	gocoll := buildGocoll(t)
	port, err := launch.FreePort()
	require.NoError(t, err)
	master, secret := fmt.Sprint("127.0.0.1:", port), launch.NewSecret()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outputs := make([]bytes.Buffer, 2)
	errs := make(chan error, 2)
	for node := range 2 {
		run := exec.CommandContext(ctx, gocoll, "run", "-n", "2", "--nnodes", "2", "--node-rank", fmt.Sprint(node),
			"--master", master, "--secret", secret, "--timeout", "1m", exe, "-test.run=^$")
		// Each launcher's ranks claim a host of their own.
		run.Env = append(os.Environ(), workerVar+"=1", fmt.Sprint("GOCOLL_HOST=node", node))
		run.Stdout, run.Stderr = &outputs[node], &outputs[node]
		require.NoError(t, run.Start())
		go func() { errs <- run.Wait() }()
	}
	// Both launchers must have ended before their output is read.
	err1, err2 := <-errs, <-errs
	require.NoError(t, errors.Join(err1, err2), "node 0:\n%s\nnode 1:\n%s", outputs[0].String(), outputs[1].String())
	for r := range 4 {
		require.Contains(t, outputs[r/2].String(), fmt.Sprintf("[%d] rank %d of 4: collectives ok with a hierarchy", r, r))
	}
}
