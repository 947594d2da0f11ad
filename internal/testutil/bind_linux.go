package testutil

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// BindProcess binds every thread of this process to cpu, as a launcher
// that binds ranks binds a rank's process; threads the runtime starts
// later inherit it from the thread that starts them. The returned
// function gives every thread the CPUs the calling thread had.
func BindProcess(cpu int) (restore func(), err error) {
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

// StartOn runs start, which starts a child process, with the calling
// thread bound to cpu for the fork, so that the child is bound to it.
func StartOn(cpu int, start func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var own, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &own); err != nil {
		return err
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("binding to CPU %d: %w", cpu, err)
	}
	defer unix.SchedSetaffinity(0, &own)
	return start()
}
