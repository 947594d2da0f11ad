package bench

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system, in
// all its threads: a call's own goroutine, and the links' readers and the
// runtime that work for it. A rank that spins while it waits spends CPU
// time that its wall time does not show.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
