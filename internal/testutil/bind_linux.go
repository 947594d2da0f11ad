package testutil

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// bindProcess binds every thread of this process to cpu, as a launcher
// that binds ranks binds a rank's process; threads the runtime starts
// later inherit it from the thread that starts them. The returned
// function gives every thread the CPUs the calling thread had.
func bindProcess(cpu int) (restore func(), err error) {
	var own, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &own); err != nil {
		return nil, err
	}
	set.Set(cpu)
	if err := setThreads(&set); err != nil {
		setThreads(&own)
		return nil, fmt.Errorf("binding to CPU %d: %w", cpu, err)
	}
	return func() { setThreads(&own) }, nil
}

// setThreads sets the CPUs of every thread of this process.
func setThreads(set *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return err
		}
	}
	return nil
}
