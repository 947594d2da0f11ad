//go:build unix

package cputime

import (
	"time"

	"golang.org/x/sys/unix"
)

// process reads the process's CPU-time clock, which counts nanoseconds
// where getrusage counts microseconds: a call of a microsecond is then
// more than a rounding.
func process() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
