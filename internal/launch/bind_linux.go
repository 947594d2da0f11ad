package launch

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cpuSet is a set of CPUs a rank is bound to.
type cpuSet = unix.CPUSet

// cpuSets divides the CPUs this process may run on among ranks, as
// mpirun's default binding gives each rank cores of its own: rank i gets
// the i-th of ranks groups of consecutive CPUs, ProcsPerRank of them. It
// returns nil, binding nothing, when there are more ranks than CPUs (the
// ranks then take turns, wherever the kernel puts them) or the CPUs
// cannot be read.
func cpuSets(ranks int) []cpuSet {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return nil
	}
	var cpus []int
	for cpu := range int(unsafe.Sizeof(all)) * 8 {
		if all.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	if ranks > len(cpus) || ranks < 1 {
		return nil
	}
	per := len(cpus) / ranks
	sets := make([]cpuSet, ranks)
	for i := range sets {
		for _, cpu := range cpus[i*per : (i+1)*per] {
			sets[i].Set(cpu)
		}
	}
	return sets
}

// startOn runs start, which starts a child, bound to the CPUs of set: the
// calling thread, which must be locked to its goroutine, takes the set
// for the fork, which the child inherits, and gets its own back. Binding
// is a placement, not a requirement: where the thread cannot take the
// set (a container's CPU limits, say), the child starts unbound.
func startOn(set *cpuSet, start func() error) error {
	var own cpuSet
	if set == nil || unix.SchedGetaffinity(0, &own) != nil || unix.SchedSetaffinity(0, set) != nil {
		return start()
	}
	defer unix.SchedSetaffinity(0, &own)
	return start()
}

// StartOnCPU runs start, which starts a child process, bound to CPU cpu,
// as a launcher binds a rank; where the thread cannot take that CPU the
// child starts unbound. For benchmarks that place a peer process beside
// their own.
func StartOnCPU(cpu int, start func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set cpuSet
	set.Set(cpu)
	return startOn(&set, start)
}
