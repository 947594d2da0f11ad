//go:build !linux

package launch

// cpuSet is a set of CPUs a rank is bound to; binding needs Linux.
type cpuSet struct{}

// cpuSets binds nothing: see the Linux build.
func cpuSets(ranks int) []cpuSet { return nil }

// startOn starts without binding.
func startOn(set *cpuSet, start func() error) error { return start() }

// StartOnCPU starts without binding: binding needs Linux.
func StartOnCPU(cpu int, start func() error) error { return start() }
