// Package shm implements gocoll links between processes of one host over
// shared memory: each direction of a link is a single-producer,
// single-consumer byte ring in a region that both processes map, and
// large payloads are copied once, straight from the writer's memory into
// the reader's buffer, with process_vm_readv (cross-memory attach, CMA).
//
// # Setup
//
// A Listener is a Unix-domain socket in the abstract namespace (an
// address "@name"; Listen("") picks a random one), so no file is left
// behind. Dial connects and runs the auth handshake (transport/auth), as
// tcp does. The dialer then creates the link's region, unnamed, in
// /dev/shm (WithDir), after checking that the file system has room for
// it: a full tmpfs makes Dial fail with an error wrapping
// shmem.ErrNoSpace rather than kill the process with SIGBUS later. It
// passes the region's descriptor to the acceptor over the socket
// (SCM_RIGHTS), with its size and identity; the acceptor maps it and
// answers, and both close their descriptors: the two mappings are all
// that keeps the memory, and it is freed when both processes have
// unmapped it or died. Each side learns the other's PID from the kernel
// (SO_PEERCRED). The ring size is the dialer's (WithRingSize).
//
// # Rings
//
// A region holds a page of control words and the two rings' data:
//
//	slots   each side's closed word, then for each ring: tail (bytes
//	        written, stored by the writer), head (bytes consumed, stored
//	        by the reader), the reader's bell, the writer's bell, and the
//	        CMA acknowledgement
//	data    ring 0 (the dialer's messages), then ring 1; each a power of
//	        two, DefaultRingSize by default
//
// Each control word that one side writes sits in a slot of two cache
// lines of its own, so that the two processes never write the same line.
// Indices are 64-bit counters that never wrap; a position in the ring is
// the counter modulo its size, and a record that crosses the ring's end
// is copied in two parts. A message is a record: two 8-byte words (zero
// or the address of a CMA payload, and how many payload bytes follow in
// the ring), the 64-byte codec header, and the payload. A record that
// is longer than a chunk streams through the ring: the writer publishes
// its tail every 16 KiB (or a quarter of the ring) and the reader copies
// out behind it and frees space as it goes, so that the two overlap.
// Writers are serialised by a per-link lock, so messages never
// interleave. ReadPayload copies from the ring straight into the caller's
// buffer: a payload is copied twice on the ring path, in and out.
//
// # Waiting
//
// A side that waits for data, for space or for an acknowledgement waits
// with internal/shmem's Waiter, the one the communicator's shared-memory
// segment uses too: it polls the word it waits for, yielding to the
// process's other goroutines every so many polls (the goroutine a
// message is for must run before the peer hears back), for 200 µs, or
// the communicator's spin window where that is longer. Then it sleeps:
// it announces itself in its bell's sleeper count (a word in the
// region), checks its condition again and parks its goroutine on a
// channel of its own for at most 100 ms before it looks again. The other
// side knocks, writing a byte on the link's Unix socket, only when the
// count says that someone sleeps, so a busy link sends no knocks; the
// sleeper's watcher, which reads the socket anyway to see the peer go,
// passes the knock on to the channel of every waiter of that bell (the
// reader's has two: the reading side and WaitReadable). Since the waker
// stores its index before it reads the count and the sleeper counts
// itself before it checks the index (all sequentially consistent), and a
// knock waits in the channel for a park that comes after it, no wake-up
// is lost. A sleeper parks rather than sleeping on a futex, because a
// goroutine in a system call keeps its processor until the runtime's
// monitor takes it back, up to 20 ms later (see knock.go). The bounded
// sleep also bounds how late a writer notices that its context ended.
//
// # Polling
//
// A link is a transport.Poller: a caller that waits for a message looks
// at the ring itself (Poll), and takes a message whose ring bytes have
// all arrived (its CMA part, read by process_vm_readv, never waits), or
// are streaming in (transport.Streaming), so
// that the process's goroutine that otherwise reads the link can rest
// and the message needs no hand-over between goroutines. A two-process
// ping-pong of 8 bytes went from 6.1 to 1.1-1.5 µs a round trip with it.
// WaitReadable, which that goroutine calls when no caller looks, waits
// for bytes beyond what the reading side last saw. A writer that parks,
// waiting for room or for the reader to be done with a CMA payload,
// first calls the function OnWriteBlock set, which has the process's
// links read: two ranks that write each other at once must not wait for
// goroutines that rest. A writer of a CMA payload polls for the reader's
// acknowledgement for as long as the copy takes at 1 GB/s (at most a
// millisecond) before it parks: parking there made the peer's answer
// arrive before this rank posted its receive, to be read early and
// copied twice.
//
// # CMA
//
// On a link made WithCMA, a payload of CMAThreshold bytes or more skips
// the ring: the writer puts the record with the payload's address into
// the ring and waits until the reader acknowledges it. The reader's
// ReadPayload copies the part that it asks for from the writer's process
// into the caller's buffer with process_vm_readv, one copy in all, and
// acknowledges once the whole payload is read, or when ReadHeader skips
// what is left. So a CMA WriteMessage returns only when the reader is
// done with the payload, as a mem link's does. Each read also fetches a
// random word (the cookie) from the writer's memory, so that a reader
// never delivers the memory of another process that took over the PID of
// a writer that died.
//
// On a link made WithCMAWhereFaster, such a payload goes by CMA only
// where that has been faster: the writer times its writes both ways,
// per size class, and a shmem.SingleCopy that the Transport's links
// share chooses the way of each, trying the other now and then. The
// reader needs no choice: the record says which way the payload comes.
// A write that begins in the ring's first lap is not timed: it faults
// the ring's pages in.
//
// The writer, which only waits meanwhile, helps: a reader that takes the
// whole rest of a payload into one buffer asks the writer (the ack word
// says ackHelp, beside the offset in the payload and the address in the
// reader's buffer) to write the second half into it with
// process_vm_writev while it reads the first, and waits for the
// writer's answer before it acknowledges, so both cores copy at once. A
// reader that finds the writer asleep copies alone: waking it would cost
// about as much as the half. A writer that cannot write (ptrace rules)
// answers that it failed, and the reader copies the half itself and asks
// no more. Once it has asked, the reader waits for the answer however
// the link ends meanwhile, since the writer may be writing into its
// buffer, unless the writer's process is gone; a writer that stops
// waiting first marks the message abandoned (both by compare-and-swap on
// the ack word), so that nobody asks it.
//
// Links use CMA where the communicator's single copies are not off
// (core's linkOptions). One copy by one core had not been faster than the
// ring's two by two cores that overlap, which also free the writer at
// once: on 2026-11-28 the ring moved 23.5 GB/s at 1 MiB and 18.3 at 16
// MiB against CMA's 9.4 and 4.9, and a 1 MiB ping-pong between processes
// took 106-164 µs a round trip through the ring against 320-350 by CMA.
// With the writer's half, on 2026-11-29's Intel Xeon host, a stream of 1
// MiB messages took 25-28 µs a message against the ring's 69-91, 16 MiB
// 1.01-1.06 ms against 1.36-1.46, and ping-pongs of 1 and 16 MiB 1.3 and
// 1.5 times as fast; 64 KiB stayed level.
//
// A payload given in two parts (WriteParts) lies in two places, so only
// its body goes by CMA, when it is CMAThreshold bytes or more: the head,
// small where WriteParts is used (a value's encoding before the value's
// own memory), follows the record through the ring, and the reader takes
// it from there before it reads the body by CMA.
//
// process_vm_readv needs the reader to be allowed to ptrace the writer
// (ptrace(2), "Ptrace access mode checking"): the same user, or
// CAP_SYS_PTRACE, and under Yama's ptrace_scope 1 (Ubuntu's default) a
// writer that descends from the reader or named it with
// prctl(PR_SET_PTRACER); so ranks that are siblings fall back to the
// ring there unless the program allows it. It also needs to see the
// writer's PID (SO_PEERCRED reports 0 for a process in a PID namespace
// that the reader cannot see). When the kernel refuses (EPERM, or ENOSYS
// where CMA is missing), the reader acknowledges with a refusal and the
// offset it got to in the part read by CMA; the writer sends the rest of
// that part through the ring and every later payload too. The writer's
// half needs the same of the writer towards the reader, and goes back to
// the reader where the kernel refuses it.
//
// # Liveness and closing
//
// The socket stays open for the link's life and carries nothing after
// the setup: it ends when the peer closes the link or its process dies.
// A goroutine per link waits for that end and then marks the peer gone
// in the region and wakes this side's waiters, so that nothing waits for
// a dead process. Close marks this side closed, wakes the waiters of both
// sides and closes the socket; it does not wait for calls in progress,
// and the last of them unmaps the region. A reader drains what was
// published before the peer went, then returns io.EOF at a message
// boundary and io.ErrUnexpectedEOF inside a message; a writer whose peer
// is gone gets an error wrapping syscall.EPIPE.
//
// # Performance
//
// Steady-state traffic allocates nothing, on the ring path and by CMA.
// The benchmarks (go test -bench . ./transport/shm) measure ping-pong
// latency of 8-byte messages and one-way bandwidth of 1 MiB and 16 MiB
// messages between two goroutines, as every transport's do, and, more to
// the point, between two processes (BenchmarkProcess*).
package shm
