package shmem

import "errors"

// Cross-memory attach (CMA): a process copies another's memory with
// process_vm_readv, or into it with process_vm_writev, once, where shared
// memory takes two copies (into the mapping and out of it). The kernel
// allows it where the copying process may ptrace the other: the same
// user, or CAP_SYS_PTRACE, and under Yama's ptrace_scope 1 only a
// descendant or a process named with prctl(PR_SET_PTRACER). A process
// that could copy another's memory once may find another process in its
// place later, should it die and its PID be reused; a cookie tells them
// apart.

// A Cookie is a random word in a process's memory and where it is. Every
// copy out of that process's memory (VM.Read) fetches the word too, and
// every copy into it (VM.Write) first, and compares: a process that took
// over the PID has something else there, or nothing, and the copy fails
// instead of delivering its memory or writing into it.
type Cookie struct {
	Addr, Value uint64
}

// ErrNotPeer says that a process's PID now names another process: the
// cookie read back is not the one it published.
var ErrNotPeer = errors.New("the process is gone: its PID names another process")
