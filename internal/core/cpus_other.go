//go:build !linux

package core

// ownCPUs cannot tell the CPUs this process may run on here.
func ownCPUs() cpuSet { return nil }
