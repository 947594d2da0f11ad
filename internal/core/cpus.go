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

// crowded reports whether the ranks of rank's host outnumber the CPUs
// they may run on between them (cpusOnHost).
func (p *peerTable) crowded(rank int) bool { return p.ranksOnHost(rank) > p.cpusOnHost(rank) }

// cpusOnHost counts the CPUs the ranks of rank's host may run on between
// them: the union of the CPU sets they published. A launcher that binds
// each rank to cores of its own (gocoll run, mpirun, srun) leaves each
// rank's process one CPU, so counting one process's CPUs would find one
// for all. When a rank's set is unknown, it is the CPUs of this process.
func (p *peerTable) cpusOnHost(rank int) int {
	var union cpuSet
	for r, h := range p.hosts {
		if h != p.hosts[rank] {
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
