//go:build !linux

package transport

// YieldCPU does nothing outside Linux, where the polling loops that call
// it yield only to the process's goroutines (runtime.Gosched).
func YieldCPU() {}
