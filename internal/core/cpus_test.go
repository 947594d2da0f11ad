package core

import (
	"fmt"
	"math/bits"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCPUSetString(t *testing.T) {
	tests := []struct {
		set  cpuSet
		want string
	}{
		{nil, ""},
		{cpuSet{0b11}, "3"},
		{cpuSet{1, 0, 1 << 63, 0, 0}, "1.0.8000000000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, tt.set.String())
			got := parseCPUs(tt.want)
			for len(got) < len(tt.set) {
				got = append(got, 0)
			}
			if tt.set == nil {
				require.Nil(t, got)
			} else {
				require.Equal(t, tt.set, got)
			}
		})
	}
	require.Nil(t, parseCPUs("1.x"), "garbage is unknown")
}

// TestCrowded: the ranks of a machine are crowded when they outnumber the
// CPUs of all their sets together, not those of one rank's: ranks that a
// launcher bound to a core each are not (they spun handing the CPU over
// while each had its own core, when one process's CPUs were counted).
// Containers of one machine are hosts of their own that share its
// kernel, and its CPUs: two containers of two ranks each on two CPUs
// spun without handing the CPU over, and an 8 B Allreduce took 463 µs
// (four such ranks on one host: 42).
func TestCrowded(t *testing.T) {
	cpu := func(ids ...int) cpuSet {
		s := make(cpuSet, 1)
		for _, id := range ids {
			s[0] |= 1 << id
		}
		return s
	}
	tests := []struct {
		name    string
		hosts   []string
		kernels []string
		cpus    []cpuSet
		want    []bool
		cpusA   int // CPUs of rank 0's machine
	}{
		{"bound to a core each", []string{"a", "a"}, nil, []cpuSet{cpu(0), cpu(1)}, []bool{false, false}, 2},
		{"bound to one core", []string{"a", "a"}, nil, []cpuSet{cpu(0), cpu(0)}, []bool{true, true}, 1},
		{"unbound", []string{"a", "a", "a"}, nil, []cpuSet{cpu(0, 1), cpu(0, 1), cpu(0, 1)}, []bool{true, true, true}, 2},
		{"other hosts apart", []string{"a", "b", "b"}, nil, []cpuSet{cpu(0), cpu(0), cpu(1)}, []bool{false, false, false}, 1},
		{"a set unknown", []string{"a", "a"}, nil, []cpuSet{cpu(0), nil}, []bool{2 > runtime.NumCPU(), 2 > runtime.NumCPU()}, runtime.NumCPU()},
		{"containers of one machine", []string{"a", "a", "b", "b"}, []string{"k", "k", "k", "k"},
			[]cpuSet{cpu(0, 1), cpu(0, 1), cpu(0, 1), cpu(0, 1)}, []bool{true, true, true, true}, 2},
		{"containers bound apart", []string{"a", "a", "b", "b"}, []string{"k", "k", "k", "k"},
			[]cpuSet{cpu(0), cpu(1), cpu(2), cpu(3)}, []bool{false, false, false, false}, 4},
		{"machines apart", []string{"a", "a", "b", "b"}, []string{"k", "k", "l", "l"},
			[]cpuSet{cpu(0, 1), cpu(0, 1), cpu(0, 1), cpu(0, 1)}, []bool{false, false, false, false}, 2},
		{"kernels unknown", []string{"a", "a", "b", "b"}, []string{"", "", "", ""},
			[]cpuSet{cpu(0, 1), cpu(0, 1), cpu(0, 1), cpu(0, 1)}, []bool{false, false, false, false}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := peerTable{hosts: tt.hosts, cpus: tt.cpus, kernels: tt.kernels}
			require.Equal(t, tt.cpusA, p.cpusOnMachine(0))
			for r, want := range tt.want {
				require.Equal(t, want, p.crowded(r), fmt.Sprint("rank ", r))
			}
		})
	}
}

// TestCrowding: how many ranks of a machine there are to each of its
// CPUs, rounded up, where they outnumber them; else 0.
func TestCrowding(t *testing.T) {
	both := cpuSet{0b11}
	tests := []struct {
		ranks int
		cpus  cpuSet
		want  int
	}{
		{2, both, 0},
		{3, both, 2},
		{4, both, 2},
		{5, both, 3},
		{8, both, 4},
		{2, cpuSet{0b1}, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d ranks on %d CPUs", tt.ranks, bits.OnesCount64(tt.cpus[0])), func(t *testing.T) {
			p := peerTable{hosts: make([]string, tt.ranks), cpus: make([]cpuSet, tt.ranks)}
			for r := range tt.ranks {
				p.hosts[r], p.cpus[r] = "a", tt.cpus
			}
			require.Equal(t, tt.want, p.crowding(0))
		})
	}
}

// TestProcsShare checks the GOMAXPROCS that Init leaves a rank's process
// where the environment does not set it: its share of its machine's
// CPUs when it runs at the runtime's default with more, else what it
// runs at.
func TestProcsShare(t *testing.T) {
	cpus := func(n int) cpuSet { return cpuSet{1<<n - 1} }
	tests := []struct {
		name        string
		hosts       []string
		pids        []int
		cpus        []cpuSet
		procs, ncpu int
		want        int
	}{
		{"two ranks on two CPUs", []string{"a", "a"}, []int{10, 11}, []cpuSet{cpus(2), cpus(2)}, 2, 2, 1},
		{"four ranks on two CPUs", []string{"a", "a", "a", "a"}, []int{10, 11, 12, 13}, []cpuSet{cpus(2), cpus(2), cpus(2), cpus(2)}, 2, 2, 1},
		{"two ranks on eight CPUs", []string{"a", "a"}, []int{10, 11}, []cpuSet{cpus(8), cpus(8)}, 8, 8, 4},
		{"three ranks on eight CPUs", []string{"a", "a", "a"}, []int{10, 11, 12}, []cpuSet{cpus(8), cpus(8), cpus(8)}, 8, 8, 2},
		{"one rank a host", []string{"a", "b"}, []int{10, 10}, []cpuSet{cpus(2), cpus(2)}, 2, 2, 2},
		{"bound by the launcher", []string{"a", "a"}, []int{10, 11}, []cpuSet{{1}, {2}}, 1, 1, 1},
		{"the program's choice", []string{"a", "a"}, []int{10, 11}, []cpuSet{cpus(8), cpus(8)}, 6, 8, 6},
		{"a choice below the share", []string{"a", "a"}, []int{10, 11}, []cpuSet{cpus(8), cpus(8)}, 2, 8, 2},
		{"ranks of one process", []string{"a", "a"}, []int{10, 10}, []cpuSet{cpus(2), cpus(2)}, 2, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := peerTable{hosts: tt.hosts, pids: tt.pids, cpus: tt.cpus}
			require.Equal(t, tt.want, p.procsShare(0, tt.procs, tt.ncpu))
		})
	}
}
