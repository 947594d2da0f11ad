package core

import (
	"math/bits"
	"runtime"
	"strconv"
	"strings"
)

// A cpuSet is a set of CPUs, bit i of word i/64 standing for CPU i; nil
// is unknown.
type cpuSet []uint64

// String is the set as the rendezvous carries it: its words in hex,
// dot-separated, without trailing zero words; "" for unknown.
func (s cpuSet) String() string {
	for len(s) > 0 && s[len(s)-1] == 0 {
		s = s[:len(s)-1]
	}
	words := make([]string, len(s))
	for i, w := range s {
		words[i] = strconv.FormatUint(w, 16)
	}
	return strings.Join(words, ".")
}

// parseCPUs reads what String wrote; anything else is unknown (nil).
func parseCPUs(v string) cpuSet {
	if v == "" {
		return nil
	}
	words := strings.Split(v, ".")
	s := make(cpuSet, len(words))
	for i, w := range words {
		n, err := strconv.ParseUint(w, 16, 64)
		if err != nil {
			return nil
		}
		s[i] = n
	}
	return s
}

// crowded reports whether the ranks that share rank's CPUs outnumber
// them (ranksOnMachine, cpusOnMachine).
func (p *peerTable) crowded(rank int) bool { return p.ranksOnMachine(rank) > p.cpusOnMachine(rank) }

// sameMachine reports whether ranks a and b run on the same CPUs: under
// one kernel where both published one (containers of one machine are
// hosts of their own, with shared memory of their own, but share the
// machine's CPUs), else on one host.
func (p *peerTable) sameMachine(a, b int) bool {
	if p.kernels != nil && p.kernels[a] != "" && p.kernels[b] != "" {
		return p.kernels[a] == p.kernels[b]
	}
	return p.hosts[a] == p.hosts[b]
}

// ranksOnMachine counts the ranks that run on rank's machine, rank among
// them.
func (p *peerTable) ranksOnMachine(rank int) int {
	n := 0
	for r := range p.hosts {
		if p.sameMachine(rank, r) {
			n++
		}
	}
	return n
}

// cpusOnMachine counts the CPUs the ranks of rank's machine may run on
// between them: the union of the CPU sets they published. A launcher
// that binds each rank to cores of its own (gocoll run, mpirun, srun)
// leaves each rank's process one CPU, so counting one process's CPUs
// would find one for all. When a rank's set is unknown, it is the CPUs of
// this process.
func (p *peerTable) cpusOnMachine(rank int) int {
	var union cpuSet
	for r := range p.hosts {
		if !p.sameMachine(rank, r) {
			continue
		}
		s := p.cpus[r]
		if s == nil {
			return runtime.NumCPU()
		}
		for len(union) < len(s) {
			union = append(union, 0)
		}
		for i, w := range s {
			union[i] |= w
		}
	}
	n := 0
	for _, w := range union {
		n += bits.OnesCount64(w)
	}
	return n
}
