// Package shmem maps memory that several processes of one host share and
// lets them wait for one another on words inside it.
//
// A Region is created unnamed: open(O_TMPFILE) in /dev/shm, or
// memfd_create where /dev/shm cannot hold unnamed files, so nothing is
// ever left in /dev/shm, whatever kills the processes. Other processes
// reach it through the creator's descriptor, /proc/<pid>/fd/<fd>, while
// the creator holds it open, and check with Identity that they opened the
// file they were told about. The size is reserved with fallocate before
// the mapping is touched: on a full tmpfs mmap succeeds and the first
// write to a missing page kills the process with SIGBUS, so Create checks
// the free space first and reports ErrNoSpace instead.
//
// Wait and Wake are the futex calls on a 32-bit word of a mapping, shared
// between processes (not FUTEX_PRIVATE). Go pointers must never be stored
// in a region, and every process maps it at its own address: store
// offsets.
//
// A Waiter waits for a counter in a mapping that another process
// advances, with one policy for every such wait: poll (on amd64 with a
// PAUSE, the spin-wait hint, between polls, where the waiter yields to
// other processes only), yield, then sleep on a Bell (a futex word and a
// count of its sleepers) that the other side rings. The shared-memory links and the communicator's segment both
// wait with it, each with its own spinning budget. Both park their
// waiters' goroutines on a Parker instead of sleeping on the futex
// (Waiter.SetPark), and their bells knock on a Unix socket (Bell.Knock):
// the link's, or each sleeping rank's of the segment.
//
// Copy writes into a mapping that other processes read: with string
// moves, which do not wait for each line to come back from the reader's
// core as a vector loop's stores do, except where the destination lies
// just after the source in their pages, where AMD's Zen 3 and Zen 4 move
// strings many times slower. A Copier chooses, by timing, between it and
// stores that go around the caches. A VM copies another process's memory
// once, with cross-memory attach (process_vm_readv and
// process_vm_writev), through a bounce buffer at those distances: the
// kernel moves strings too.
//
// Shared memory is a Linux feature here; elsewhere every function returns
// ErrUnsupported.
package shmem
