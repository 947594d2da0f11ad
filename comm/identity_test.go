package comm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
)

// stepWorker gathers every rank's SLURM step id: a rank that finds a rank
// of another step in its job fails.
func stepWorker(ctx context.Context, c *comm.Comm) error {
	step, err := strconv.ParseInt(os.Getenv("SLURM_STEP_ID"), 10, 64)
	if err != nil {
		return err
	}
	steps := make([]int64, c.Size())
	if err := collective.Allgather(ctx, c, []int64{step}, steps); err != nil {
		return err
	}
	for r, s := range steps {
		if s != step {
			return fmt.Errorf("rank %d of step %d found rank %d of step %d in its job", c.Rank(), step, r, s)
		}
	}
	fmt.Printf("step %d rank %d of %d ok\n", step, c.Rank(), c.Size())
	return nil
}

// TestSlurmStepsStaySeparate starts two steps of one SLURM job at once,
// two ranks each, as "srun -n2 --exact prog & srun -n2 --exact prog" does:
// each step must form a job of its own ranks.
func TestSlurmStepsStaySeparate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	type result struct {
		out bytes.Buffer
		err error
	}
	results := make([]result, 4)
	var wg sync.WaitGroup
	for i := range results {
		step, rank := i/2, i%2
		if step == 1 {
			rank = 1 - rank // the steps' ranks start in a different order
		}
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), workerVar+"=step", "GOCOLL_TIMEOUT=20s",
			"SLURM_JOB_ID=77", "SLURM_NTASKS=2", "SLURM_JOB_NODELIST=127.0.0.1",
			"SLURM_PROCID="+strconv.Itoa(rank), "SLURM_STEP_ID="+strconv.Itoa(step))
		cmd.Stdout, cmd.Stderr = &results[i].out, &results[i].out
		require.NoError(t, cmd.Start())
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].err = cmd.Wait()
		}()
	}
	wg.Wait()
	for i, r := range results {
		require.NoError(t, r.err, "step %d, process %d:\n%s", i/2, i%2, r.out.String())
		require.Contains(t, r.out.String(), fmt.Sprintf("step %d rank", i/2))
	}
}
