package launch_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/launch"
)

// TestRunBindsRanks: with no more ranks than CPUs, each rank runs on CPUs
// of its own, its share of them; with more ranks, or with NoBind, every
// rank may run on every CPU the launcher may.
func TestRunBindsRanks(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	all := cpuList(t, allowedCPUs())
	tests := []struct {
		name   string
		ranks  int
		noBind bool
		bound  bool
	}{
		{"one rank per CPU", len(all), false, true},
		{"two ranks", 2, false, len(all) >= 2},
		{"more ranks than CPUs", len(all) + 1, false, false},
		{"no binding", 2, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := launch.Run(context.Background(), launch.Job{
				Program: exe, Ranks: tt.ranks, NoBind: tt.noBind, Env: []string{roleVar + "=cpus"}, Stdout: &out, Stderr: &out,
			})
			require.NoError(t, err)
			seen := map[int]int{} // CPU → rank bound to it
			for r := range tt.ranks {
				line := findLine(t, out.String(), fmt.Sprintf("[%d] rank=%d cpus=", r, r))
				cpus := cpuList(t, line[strings.LastIndex(line, "=")+1:])
				if !tt.bound {
					require.Equal(t, all, cpus, "rank %d", r)
					continue
				}
				require.Len(t, cpus, len(all)/tt.ranks, "rank %d's CPUs", r)
				for _, cpu := range cpus {
					other, taken := seen[cpu]
					require.False(t, taken, "CPU %d bound to ranks %d and %d", cpu, other, r)
					seen[cpu] = r
				}
			}
		})
	}
	require.Equal(t, runtime.NumCPU(), len(all), "the CPUs the test may use")
}

// cpuList parses a CPU list as /proc writes it ("0-3,6").
func cpuList(t *testing.T, s string) []int {
	t.Helper()
	var cpus []int
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		require.NoError(t, err, "CPU list %q", s)
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			require.NoError(t, err, "CPU list %q", s)
		}
		for cpu := a; cpu <= b; cpu++ {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}
