package core

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ownCPUs returns the CPUs this process may run on, as a bit set in
// words of 64 bits, or nil where it cannot tell.
func ownCPUs() cpuSet {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return nil
	}
	n := int(unsafe.Sizeof(set)) * 8
	s := make(cpuSet, (n+63)/64)
	for cpu := range n {
		if set.IsSet(cpu) {
			s[cpu/64] |= 1 << (cpu % 64)
		}
	}
	return s
}
