// Package comm is gocoll's communicator: how the ranks of a job find each
// other, connect, and exchange tagged messages point to point. The
// collectives in package collective are written against it.
//
// # Joining a job
//
// Init reads the job from the environment that a launcher set (gocoll run,
// torchrun, Open MPI's mpirun, SLURM's srun or a Kubernetes indexed job)
// and returns the world communicator. Rank 0 serves a small rendezvous
// store; every rank publishes the address of its link listener there and
// keeps a control connection to it, through which the job learns at once
// when a rank dies or aborts. NewLocal starts all ranks of a job inside one
// process, over in-memory links or over real TCP sockets.
//
// A program started without a launcher (none of the launchers' rank and
// size variables set) is a job of its own: Init makes it rank 0 of a
// world of one, as MPI's singleton init does, with no rendezvous and no
// sockets, and logs so once at Info. Every call works on that world, so
// one binary runs both alone and under a launcher. GOCOLL_SINGLETON=0
// or WithSingleton(false) make a missing environment an error instead; a
// partial one (RANK without WORLD_SIZE, say) always is.
//
// Every communicator knows which of its ranks share a host, by the host
// identity each rank publishes when it joins (see Shared memory):
// LocalRank and LocalSize are this rank's place among its host's ranks
// and their number, under any launcher and for communicators made by
// Split too.
//
// # Links
//
// Links are opened lazily, on a rank's first message to a peer, so a job
// opens only the connections its traffic needs, not N² of them up front. A
// rank sends on the links it dialed and receives on the links it accepted.
// Every link proves at connect time that both ends belong to the job (see
// Security); a peer that does not is refused and logged, and the job goes
// on.
//
// # Security
//
// Every link and every connection to the rendezvous starts with a
// challenge-response handshake in which both ends prove that they hold
// the job key, HMAC-SHA256 of the secret and the job identity. The secret
// comes from GOCOLL_SECRET or WithSecret (gocoll run makes a fresh one per
// job); the job identity from what the launcher says of the job: SLURM's
// job and step ids, torchrun's run id and restart count, Open MPI's PMIx
// namespace, the Kubernetes job's name, or GOCOLL_JOB_ID. Until a
// connecting peer has proven the key it learns nothing, not even the rank
// it reached or the job id; then the handshake binds the connection to
// one job, one service and the ranks of both ends. So a stranger cannot
// join the job, claim a rank or forge an abort, and two jobs (two srun
// steps of one allocation, say) never join each other.
//
// Without a secret the key is derived from the job identity alone: jobs
// still stay apart, but anyone who can guess the identity can join, so
// Init logs a warning naming GOCOLL_SECRET. Under torchrun, mpirun
// (-x GOCOLL_SECRET), srun and Kubernetes (a Secret mounted as an
// environment variable) set GOCOLL_SECRET for every rank.
//
// The handshake authenticates; it does not encrypt, and the frames after
// it carry no MAC: someone who can read or alter the network between
// hosts can read or alter the data. WithTLS (or GOCOLL_TLS_CERT, _KEY and
// _CA) runs every tcp link and the rendezvous inside mutual TLS 1.3 with
// certificates of the job's CA, for networks nobody trusts.
// Shared-memory links never leave the host.
//
// The links and the rendezvous each hold at most 64 connections in
// their handshake at once (the oldest is cut), and log
// refusals at a bounded rate, so a flood of strangers costs bounded
// memory and log lines.
//
// # Point to point
//
// Send and Recv move bytes; the generic Send and Recv move typed slices
// (their own memory on little-endian hosts) and check the element type.
// Isend and Irecv start a send or a receive and return a Request;
// Request.Wait, WaitAny and WaitAll finish them. Sendrecv exchanges with
// two peers at once. Each of the three has a generic form of typed
// slices too (Isend[T], Irecv[T], Sendrecv[S, R]), whose receives check
// the element type when they are waited for. Probe and Iprobe report the Status (source, tag,
// length) of the next message a receive would take, without taking it,
// so that a receiver can size its buffer or learn who is asking:
//
//	st, err := c.Probe(ctx, comm.AnySource, tagResult)
//	buf := make([]byte, st.Bytes)
//	_, err = c.Recv(ctx, st.Source, st.Tag, buf)
//
// # Matching
//
// A receive names (source, communicator, tag), where the source may be
// AnySource and the tag AnyTag; messages with the same triple are
// received in the order they were sent, as in MPI. A message goes to the
// earliest posted receive that matches it, named or wildcard, and a
// receive takes the earliest matching message that has arrived, whichever
// rank sent it. Wildcards match only messages of user tags of their own
// communicator, never a collective's traffic. A wildcard receive that
// names no source looks at every member's messages at once, which costs
// a little more per posted receive on large communicators. When the
// receive is posted before the message arrives the payload is read
// straight into the receive's buffer. A message that arrives first is kept
// in a pooled buffer; the bytes kept that way are bounded
// (WithUnexpectedLimit), and past the bound a link stops reading until
// receives are posted. A program that relies on more buffering than that,
// receiving in an order the sender cannot reach, fails with a timeout
// instead of growing without bound: MPI calls such programs unsafe.
//
// # Failure
//
// Every blocking call honours its context and the communicator's timeout
// (WithTimeout, GOCOLL_TIMEOUT, DefaultTimeout). Errors are *OpError
// values that name the call, the communicator and both ranks, and wrap
// sentinels for errors.Is: ErrTimeout (which also matches
// context.DeadlineExceeded), ErrPeerLost, ErrPeerClosed, ErrAborted,
// ErrMismatch, ErrTruncated, ErrRefused, ErrInvalid and ErrClosed.
//
// When ranks are lost, every other rank's pending and next calls fail with
// a *PeerError whose Ranks names all of them: a rank that finds a peer
// lost waits LossSettle for news of others, so the ranks of a host that
// went down are named together. Abort makes the other ranks fail with an
// *AbortError naming the aborting rank. A rank that closes after a
// failure passes the failure on to its peers instead of a goodbye, so
// they blame the rank that caused it, not the one that left; and a rank
// that fails because of a loss every rank has heard of leaves the
// rendezvous before its call returns, so a program that exits on the
// error, without Close, is not named with the ranks it lost.
//
// # Failure detection
//
// A rank that dies (exit, crash, kill -9) breaks its links and its
// rendezvous connection, and the other ranks know within milliseconds. A
// rank that stops without dying (SIGSTOP, a debugger, a machine swapping
// to a halt) or a host that the network cuts off closes nothing; for
// those, every rank beats to rank 0 over its rendezvous connection four
// times per heartbeat period (WithHeartbeat, GOCOLL_HEARTBEAT,
// DefaultHeartbeat: 4 s), from a goroutine of its own, so a rank that
// computes for hours between calls keeps beating. A rank silent for a
// whole period is reported lost to the others, within the period plus
// LossSettle, and so is rank 0 to a rank that hears nothing from it.
// Ranks of one host that fall silent together are reported together.
//
// The communicator's timeout is the last resort: a call that waits for
// rank r longer than the timeout (a receive from r, a send that r does not
// take in, a shared-memory step r does not reach) fails with a
// *PeerError naming r that wraps ErrTimeout, and the communicator fails
// with it. The rank that timed out is not to blame, and its peers learn
// whom it blamed when it closes.
//
// # Operations and mismatches
//
// The collectives of package collective, and Split, are operations of a
// communicator: each takes the communicator's next sequence number, and
// every frame of it carries what this rank called (collective, count,
// element type, op, root, algorithm). The reader of every link checks each
// arriving frame of an operation against this rank's call of it, running,
// finished or not yet made, and a receive of an operation that has waited
// 200 ms sends its call to the rank it waits for, so that ranks that send
// each other nothing are compared too. Any difference aborts the job with
// a *MismatchError naming both ranks and both calls.
//
// # Concurrency
//
// A Comm may be used from several goroutines at once: Rank, Size, the
// point-to-point calls, Abort and Close are safe concurrently, and
// messages of concurrent sends to one peer with one tag arrive in some
// order of the sends; sends from one goroutine, Isend's included, arrive
// in the order it made them. Operations are another matter: ranks match them by the order in
// which each rank starts them, so two goroutines that start operations
// on one communicator at once make that order the scheduler's. A blocking
// collective that overlaps another on the same communicator therefore
// fails with ErrInvalid, as does the one it overlapped, and aborts the
// job.
// Split a communicator per goroutine to run collectives concurrently, or
// issue asynchronous ones from one goroutine; Split itself must be called
// in the same order on every rank, like a collective.
//
// # Shared memory
//
// With the auto and shm transports, ranks that run on one host (by the
// identity each rank publishes: hostname and machine id, or GOCOLL_HOST /
// WithHostIdentity) link through shared memory, others
// over tcp, chosen per pair. A communicator whose ranks all run on one
// host also gets a segment when it is made: memory every rank maps,
// through which package collective runs its Shm algorithms. A
// communicator across hosts with several ranks on some host gets a
// hierarchy instead: a communicator per host, with a segment, and
// communicators across hosts, for the Hierarchical algorithm. Segments are unnamed files, so nothing is
// left in /dev/shm whatever happens to the processes; where one cannot be
// made (no /dev/shm space, /proc not readable) every rank of the
// communicator learns so and uses links. Waits in a segment honour the
// context and the timeout and end with a *PeerError when a rank waited
// for dies. Through the segment, data moves between ordinary slices in two
// copies (into the segment and out), or, as WithSingleCopy allows, in one
// where a rank reads another rank's slice with process_vm_readv or writes
// into it with process_vm_writev; between slices from collective.Alloc it
// moves directly. A message over a shared-memory link is read by the
// receive that waits for it, as over tcp, even while it still streams in.
//
// # Sub-communicators
//
// Split partitions a communicator like MPI_Comm_split. Communicators share
// their ranks' links; the communicator id in every frame keeps their
// traffic apart.
//
// # Observability
//
// Stats says what the collective calls on a communicator did: per
// collective and algorithm, calls, bytes, and where the time of the
// timed calls went (see CallStats). WithTimeline (GOCOLL_TRACE) writes a
// Chrome trace of every call, its sends and its waits per rank, which
// gocoll run --trace and gocoll trace merge turn into one trace with a
// track per rank.
//
// Each rank keeps a flight record of its last operations on every
// communicator: the call, and for a call whose wait turned slow, whom it
// waits for, at which step and since when. A rank started by Init dumps
// it when its job fails (a timeout, an abort, a lost peer) and on
// SIGUSR1: as a JSON file at the path GOCOLL_DUMP names, with ".rankN"
// before the extension, or else through the logger. gocoll run sets
// GOCOLL_DUMP, gathers the dumps when the job fails or a moment after it
// passes a SIGUSR1 on to the ranks, and prints one diagnosis: which rank
// waits for which, in what call, and what the awaited rank does (its
// own code, another call, nothing it could report). Recording costs the
// fast paths nothing: a dump reads the call table that mismatch detection
// keeps anyway, and only waits that already take long note themselves.
//
// Collective calls carry the pprof labels "collective" and "algorithm"
// (merged with the caller's; goroutines that read links carry
// gocoll=link) and, while an execution trace runs, a runtime/trace
// region named after the collective. With GOCOLL_DEBUG=1 the logger hears
// each communicator's setup and each link as it comes up.
//
// # Performance
//
// Send and Recv of a steady stream allocate nothing, typed or not and
// with wildcards too: requests, timers and buffers for early messages
// come from pools. Isend costs a goroutine per destination while sends
// to it are in flight, and WaitAny a channel per call. Each message costs
// one fixed-size header and, over TCP, one system call per MiB.
//
// A call that waits for a message over TCP or shared memory first polls
// the link itself (the socket, or the ring) for a short window (WithSpin,
// GOCOLL_SPIN, DefaultSpin: 50 µs), taking the message off the link
// without parking: a parked wait costs two thread wake-ups, the link's
// reader's and the caller's, which on a virtual machine are several
// microseconds each. The spin burns the core it runs on, but only for the
// window: a rank that waits longer, for a slower peer or between steps,
// parks and gives its core back. Where the ranks of a machine outnumber
// its CPUs, a spinning rank hands its CPU to the machine's other processes
// between looks, since the rank it waits for may need that CPU; and about
// once a microsecond it lets the other goroutines of its process run.
// Containers of one machine count as one machine here (they share a
// kernel, and its boot id), though each is a host of its own. The sockets
// of TCP links are kept out of the Go runtime's netpoller, so that
// arrivals a spinning call takes itself wake no runtime thread: at
// GOMAXPROCS above one they did, and small calls took up to 1.5 times as
// long.
//
// Each rank runs with its share of its machine's CPUs: gocoll run sets
// GOMAXPROCS to it, mpirun and srun bind ranks to cores of their own,
// and where the environment sets no GOMAXPROCS and a rank runs at the
// runtime's default, Init lowers it to that share (see Init). Ranks
// whose Ps outnumber their CPUs take turns on them, and a garbage
// collection's workers take another rank's CPU.
package comm
