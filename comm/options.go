package comm

import (
	"log/slog"
	"time"

	"github.com/gocoll/gocoll/internal/core"
)

// Option configures Init and NewLocal.
type Option func(*options) error

// options is what the options set; the engine reads it.
type options = core.Options

// DefaultTimeout bounds every blocking call when WithTimeout is not given
// (and GOCOLL_TIMEOUT is not set). Gloo and NCCL default to 30 s and
// 10–30 min; five minutes lets a rank finish a long step between
// collectives while a dead job still fails in minutes, not hours.
const DefaultTimeout = core.DefaultTimeout

// DefaultUnexpectedLimit bounds the bytes of messages that arrived before
// their receive was posted, per rank. Past it a link stops reading until
// receives are posted, so memory stays bounded whatever the senders do.
const DefaultUnexpectedLimit = core.DefaultUnexpectedLimit

// DefaultHeartbeat is the heartbeat period of Init's ranks when
// WithHeartbeat is not given (and GOCOLL_HEARTBEAT is not set): a rank
// that is frozen or cut off from rank 0 is reported lost within it (plus
// LossSettle). A rank that dies is reported at once, heartbeat or not.
const DefaultHeartbeat = core.DefaultHeartbeat

// DefaultSpin is how long a call that waits for a message over tcp or
// shared memory polls the link itself before it parks, when WithSpin is not
// given (and GOCOLL_SPIN is not set). It covers a small message's round
// trip on one host with room to spare, so small collectives never pay the
// two thread wake-ups of a parked wait, while a rank that waits longer (for
// a slower rank, or between steps) gives its core back after 50 µs.
const DefaultSpin = core.DefaultSpin

// MaxSpin is the longest spin WithSpin accepts.
const MaxSpin = core.MaxSpin

// WithTransport chooses the links between ranks: "auto" (the default of
// Init: shared-memory links between ranks of one host, tcp between hosts,
// chosen per pair), "shm" (shared-memory links only; every rank must run
// on one host), "tcp" (tcp only, no shared memory at all) or "mem"
// (in-memory links between the ranks of one process, the default of
// NewLocal). With auto and shm, communicators whose ranks share a host
// also get a shared-memory segment, and those that span hosts a
// hierarchy (see the Shared memory section).
func WithTransport(name string) Option { return Option(core.WithTransport(name)) }

// WithHostIdentity sets the host each rank claims to run on, in place of
// the machine's identity (hostname plus machine id): ranks with equal
// identities share memory, others talk over tcp. It lets one machine
// stand in for several hosts, in tests and for trying hierarchical
// algorithms; Init's ranks can do the same with GOCOLL_HOST. The ranks
// still share the machine's CPUs: where they outnumber them, a spinning
// rank hands its CPU over between looks (WithSpin).
func WithHostIdentity(hostOf func(rank int) string) Option {
	return Option(core.WithHostIdentity(hostOf))
}

// WithSegmentSlot sets the bytes that each rank moves per round of a
// shared-memory collective, its slot in each half of a communicator's
// segment: a multiple of 4096 from 4 KiB to 1 GiB. The default is 8 MiB
// shared by the ranks, but 256 KiB to 1 MiB each. Every rank of a job
// must set the same; ranks whose segments differ go without (a warning
// says so) and use links.
func WithSegmentSlot(bytes int) Option { return Option(core.WithSegmentSlot(bytes)) }

// WithSingleCopy sets how the collectives of a communicator's segment
// move data between ordinary Go slices (not from Alloc, which ranks share
// outright): "auto", the default, copies once where that has been faster
// (the root of each call times both ways as it goes), else twice, through
// the segment; "cma" copies once, each rank reading what it needs out of
// the others' slices with process_vm_readv (as Open MPI's vader does) or
// writing into them with process_vm_writev (a Bcast's root its share, the
// ranks of a Gather, an Allgather, an Alltoall, an Allreduce and a
// Reduce their parts; a ReduceScatter's ranks read), wherever the kernel
// allows it; "none" always copies twice, through the segment. On a host
// whose ranks outnumber its CPUs, auto tries one copy only in Gathers,
// Scatters, Alltoalls and Reduces of 256 KiB and more and in Bcasts of
// 64 KiB (256 KiB with more than two ranks a CPU) to 4 MiB (where the
// hypervisor shadows the guest's page tables, in Gathers and Scatters of
// 512 KiB and Alltoalls of 1 MiB). Which is faster depends on
// the host: on one of this project's machines two copies matched or beat
// one everywhere, on another one copy took a third of the time of a
// handoff through shared memory (64 KiB: 3.4 µs against 10.5) and made
// Bcasts, Gathers, Scatters and Alltoalls of 64 to 256 KiB up to twice as
// fast. "auto" follows the host: the root of each call times both ways
// and takes the faster, trying the other in short runs now and then
// (docs/guide.md, "One copy, straight out of another rank's slice"). Init
// also takes it from GOCOLL_SINGLE_COPY. The kernel allows the copy where
// a rank may ptrace the others (the same user, and under Yama's
// ptrace_scope 1 only a descendant or a process that allowed it); the
// ranks find out when the segment is made, and where one may not, none
// copies once. Rank 0's setting holds for a communicator's ranks, which
// all take the way that the root of each call (rank 0 for the others)
// chooses. The setting also governs point to point over shared-memory
// links, for messages of 64 KiB and more: with "cma" each goes by one
// copy, the reader and the writer each copying half; with "auto" only
// where that has been faster than the link's ring, as the process's links
// time both ways, size class by size class (one copy took 1.5 times as
// long as the ring on a Zen 5 VM, and 0.4 to 0.8 times as long on an
// Intel Xeon host); with "none" every one goes through the ring.
func WithSingleCopy(mode string) Option { return Option(core.WithSingleCopy(mode)) }

// WithHugePages sets whether a rank puts its buffers of shared-memory
// collectives that may copy once (WithSingleCopy) on transparent huge
// pages; on by default. The kernel pins and walks every page of a buffer
// that it copies between processes, so on 4 KiB pages, which Go's heap
// gets wherever the host's transparent huge pages are set to "madvise",
// much of a single copy's time goes to the pages: on a Zen 5 VM two
// ranks' single copies of 1 MiB took 1.5-2 times as long as on 2 MiB
// pages. The second time an operation comes with a buffer of 64 KiB or
// more (the same start and length), the rank asks the kernel
// (madvise(MADV_COLLAPSE), Linux 6.1) to move the aligned 2 MiB regions
// around it onto huge pages, once, which costs a copy of each region
// (about 0.8 ms on that VM). The regions hold whatever else the heap put
// beside the buffer, whose bytes move with it; a region's pages that
// nothing had touched come into memory, up to 2 MiB at each end of a
// buffer. The kernel leaves memory marked MADV_NOHUGEPAGE as it is, and
// a host whose transparent huge pages are "never" is not asked. Init
// also takes it from GOCOLL_HUGE_PAGES (1 or 0). Each rank's setting
// holds for its own buffers.
func WithHugePages(on bool) Option { return Option(core.WithHugePages(on)) }

// WithTimeout bounds every blocking call of the communicator, on top of the
// call's context. Zero disables the bound; the default is DefaultTimeout.
// A receive fails once nothing has come from its source for d. A send
// whose peer stops taking in data (its link stays full) fails between d
// and d/8 later: a watchdog looks at the sends in flight 16 times per d,
// which costs a send nothing, where a timer per send would.
func WithTimeout(d time.Duration) Option { return Option(core.WithTimeout(d)) }

// WithHeartbeat sets the heartbeat period of Init's ranks. Each rank
// beats to rank 0 over the rendezvous connection four times a period,
// from a goroutine of its own, so ranks that compute for hours between
// calls keep beating; a rank that sends nothing for a whole period
// (stopped, swapped out, cut off by the network) is reported lost to the
// others, and rank 0 silent for a period is reported lost to the rank.
// The period must be at least 100 ms; zero turns heartbeats off, and then
// a frozen rank is found only by the communicator's timeout and a host cut
// off by TCP keepalive (about 30 s). NewLocal has no heartbeat: its ranks
// share one process.
func WithHeartbeat(period time.Duration) Option { return Option(core.WithHeartbeat(period)) }

// WithSpin sets how long a call that waits for a message over a tcp or
// shared-memory link polls the link itself (the socket, or the ring),
// burning its core, before it parks; from 0 (park at once: a message then
// costs two thread wake-ups, the link's reader's and the caller's) to
// MaxSpin. A read waiting for the rest of a large message looks again as
// long. The default is DefaultSpin for Init's ranks (GOCOLL_SPIN sets it)
// and 0 for NewLocal's, which share one process: a spinning rank would keep
// the runtime from polling the network for the peer it waits for. Where the
// ranks of a machine (containers of one machine counting as one) outnumber
// its CPUs, a spinning rank hands its CPU to the machine's other processes
// between looks (sched_yield), since the rank it waits for may need that
// CPU; and every microsecond or so a spinning call lets its process's other
// goroutines run (at GOMAXPROCS=1 the one it waits for may be among them).
// Links over TLS and in memory do not spin.
func WithSpin(d time.Duration) Option { return Option(core.WithSpin(d)) }

// WithTLS runs every tcp link and the rendezvous connection inside mutual
// TLS 1.3: each rank presents the certificate in certFile (key in keyFile)
// and accepts a peer only if the peer's certificate chains to the CA
// certificates in caFile. Host names are not checked; the job secret's
// handshake still runs inside TLS and binds job and ranks. Shared-memory
// links, which never leave the host, are unchanged. Use it when ranks talk
// across a network others can read or write: without it links are
// authenticated (the secret) but not encrypted. Init also takes the files
// from GOCOLL_TLS_CERT, GOCOLL_TLS_KEY and GOCOLL_TLS_CA; every rank must
// use TLS or none.
func WithTLS(certFile, keyFile, caFile string) Option {
	return Option(core.WithTLS(certFile, keyFile, caFile))
}

// WithTCPCongestion sets the TCP congestion control algorithm of every
// tcp link, such as "cubic" or "dctcp"; Init also takes it from
// GOCOLL_TCP_CONGESTION. The kernel must offer it
// (net.ipv4.tcp_available_congestion_control) and, for a process without
// CAP_NET_ADMIN, allow it (net.ipv4.tcp_allowed_congestion_control), or
// the link fails to open, naming it. By default a link between hosts
// keeps the host's algorithm (net.ipv4.tcp_congestion_control), and a link
// over the loopback device uses reno: bbr, the default of some hosts,
// sizes its window from a round trip of microseconds there and moves
// large messages at 0.6 to 0.75 of reno's speed.
func WithTCPCongestion(name string) Option { return Option(core.WithTCPCongestion(name)) }

// WithSecret sets the job secret that every link and the rendezvous
// authenticate with. By default Init uses GOCOLL_SECRET, which gocoll run
// generates per job; NewLocal uses a random one.
func WithSecret(secret []byte) Option { return Option(core.WithSecret(secret)) }

// WithLogger sets where refused connections, lost peers and (with
// GOCOLL_DEBUG set) debug events are logged. The default is slog.Default().
func WithLogger(l *slog.Logger) Option { return Option(core.WithLogger(l)) }

// WithUnexpectedLimit bounds the bytes buffered for messages that arrive
// before their receive is posted; the default is DefaultUnexpectedLimit.
// Each message counts its payload plus MessageOverhead, so many small
// messages are bounded as well as a few large ones. One message larger
// than the limit is still accepted when nothing else is buffered, so no
// message size is refused.
func WithUnexpectedLimit(bytes int) Option { return Option(core.WithUnexpectedLimit(bytes)) }

// WithTuning loads the tuning table in the file at path (see package
// tuning; gocoll tune writes one) for the collectives to choose algorithms
// and chunk sizes by, in place of their built-in selection, on this
// communicator and those split from it. The order is: the call's
// WithAlgorithm and WithChunkSize, then GOCOLL_ALGO and GOCOLL_CHUNK, then
// the table, then the built-in selection. Every rank must load the same
// table, or ranks choose different algorithms for one call and fail it
// with a mismatch error. A file that does not load fails Init. It
// overrides GOCOLL_TUNING; an empty path loads no table.
func WithTuning(path string) Option { return Option(core.WithTuning(path)) }

// WithSingleton says what Init does when no launcher's variables are set
// (none of GOCOLL_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID and
// JOB_COMPLETION_INDEX, nor the size variables and GOCOLL_ADDR that come
// with them): with true, the default, the program becomes a job of one
// rank, as with MPI's singleton init, and Init logs so at Info; with
// false that is an error wrapping ErrInvalid that names the variables
// looked for. It overrides GOCOLL_SINGLETON (0 for false, 1 for true).
// NewLocal ignores it.
func WithSingleton(on bool) Option { return Option(core.WithSingleton(on)) }
