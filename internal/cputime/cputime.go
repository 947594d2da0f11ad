// Package cputime tells the CPU time a process has used, for the
// benchmarks that report it beside their wall time.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time this process has used, user and system, in
// all its threads: a call's own goroutine, and the links' readers and the
// runtime that work for it. A rank that spins while it waits spends CPU
// time that its wall time does not show. It is 0 where the system does
// not say.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
