package transport

import "golang.org/x/sys/unix"

// YieldCPU gives the calling thread's CPU to another runnable thread of
// the host, if there is one (sched_yield). Loops that poll for messages
// call it between looks where the host's ranks outnumber its CPUs: the
// rank that would send the message may be waiting for that CPU.
func YieldCPU() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
