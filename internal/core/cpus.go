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

// crowding is how many ranks of rank's machine there are to each of its
// CPUs, rounded up, where they outnumber the CPUs; else 0.
func (p *peerTable) crowding(rank int) int {
	if !p.crowded(rank) {
		return 0
	}
	cpus := max(p.cpusOnMachine(rank), 1)
	return (p.ranksOnMachine(rank) + cpus - 1) / cpus
}

// procsShare is the GOMAXPROCS that Init leaves rank's process, which
// runs at procs on a machine of numCPU CPUs (runtime.NumCPU): its share
// of the CPUs the ranks of its machine may run on between them, at
// least 1, where it runs at the runtime's default (procs == numCPU) with
// more than that; else procs. gocoll run gives each rank that share
// (launch.ProcsPerRank), mpirun and srun bind each rank to cores of its
// own, which the runtime's default then follows, and torchrun sets
// OMP_NUM_THREADS=1; under a launcher that does none of these, two ranks
// on two CPUs each ran two Ps, whose threads took turns on the CPUs:
// RecvObject round trips of 64 KiB over shared memory took 78-121 µs at
// GOMAXPROCS=2 against 20-32 at 1, typed ones 14.3 against 10.3, and 1
// MiB RecvObject round trips 1.46 ms against 0.30 (two-vCPU AMD EPYC
// host, 2026-11-29). A GOMAXPROCS other than the default is the
// program's choice, and stays; so does that of a process that is more
// than one rank (its ranks' records name the same process), whose ranks
// share its Ps.
func (p *peerTable) procsShare(rank, procs, numCPU int) int {
	share := max(1, p.cpusOnMachine(rank)/p.ranksOnMachine(rank))
	if procs != numCPU || procs <= share {
		return procs
	}
	for r := range p.hosts {
		if r != rank && p.sameMachine(rank, r) && p.pids[r] == p.pids[rank] {
			return procs
		}
	}
	return share
}

// firstOnMachine is the lowest rank that runs on rank's machine.
func (p *peerTable) firstOnMachine(rank int) int {
	for r := range p.hosts {
		if p.sameMachine(rank, r) {
			return r
		}
	}
	return rank
}

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
