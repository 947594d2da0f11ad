package shmem

import "errors"

// Cross-memory attach (CMA): a process copies another's memory with
// process_vm_readv, once, where shared memory takes two copies (into the
// mapping and out of it). The kernel allows it where the reader may
// ptrace the other process: the same user, or CAP_SYS_PTRACE, and under
// Yama's ptrace_scope 1 only a descendant or a process named with
// prctl(PR_SET_PTRACER). A reader that could read a process once may
// find another in its place later, should it die and its PID be reused;
// a cookie tells them apart.

// A Cookie is a random word in a process's memory and where it is. Every
// read of that process's memory (VMReader.Read) fetches the word too and
// compares: a process that took over the PID has something else there,
// or nothing, and the read fails instead of delivering its memory.
type Cookie struct {
	Addr, Value uint64
}

// ErrNotPeer says that a process's PID now names another process: the
// cookie read back is not the one it published.
var ErrNotPeer = errors.New("the process is gone: its PID names another process")
