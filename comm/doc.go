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
// # Links
//
// Links are opened lazily, on a rank's first message to a peer, so a job
// opens only the connections its traffic needs, not N² of them up front. A
// rank sends on the links it dialed and receives on the links it accepted.
// Every link proves at connect time that both ends know the job's secret
// (HMAC challenge); a peer that does not is refused and logged, and the job
// goes on.
//
// # Matching
//
// A receive names (source, communicator, tag); messages with the same
// triple are received in the order they were sent, as in MPI. When the
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
// (WithTimeout, GOCOLL_TIMEOUT, DefaultTimeout). A rank that dies makes
// every other rank's pending and next calls fail with a *PeerError naming
// it; Abort makes them fail with an *AbortError naming the aborting rank.
// Errors are *OpError values that name the call, the communicator and both
// ranks, and wrap sentinels for errors.Is: ErrTimeout (which also matches
// context.DeadlineExceeded), ErrPeerLost, ErrPeerClosed, ErrAborted,
// ErrTruncated, ErrRefused, ErrInvalid and ErrClosed.
//
// # Operations and mismatches
//
// The collectives of package collective, and Split, are operations of a
// communicator: StartCall gives each the communicator's next sequence
// number and records what this rank called (a codec.Call, which every
// frame of the operation carries). The reader of every link checks each
// arriving frame of an operation against this rank's call of it, running,
// finished or not yet made, and a receive of an operation that has waited
// 200 ms sends its call to the rank it waits for, so that ranks that send
// each other nothing are compared too. Any difference aborts the job with
// a *MismatchError naming both ranks and both calls.
//
// # Concurrency
//
// A Comm may be used from several goroutines at once: Rank, Size, Send,
// Recv, Irecv, Abort and Close are safe concurrently, and messages of
// concurrent sends to one peer with one tag arrive in some order of the
// sends. Operations are another matter: ranks match them by the order in
// which each rank starts them (StartCall), so two goroutines that start
// operations on one communicator at once make that order the scheduler's.
// Blocking collectives therefore bracket themselves with EnterCall and
// LeaveCall, and one that overlaps another on the same communicator fails
// with ErrInvalid, as does the one it overlapped, and aborts the job.
// Split a communicator per goroutine to run collectives concurrently, or
// issue asynchronous ones from one goroutine; Split itself must be called
// in the same order on every rank, like a collective.
//
// # Shared memory
//
// With the auto and shm transports, ranks that run on one host (by the
// identity each rank publishes: hostname and machine id, or GOCOLL_HOST /
// WithHostIdentity) link through shared memory (transport/shm), others
// over tcp, chosen per pair. A communicator whose ranks all run on one
// host also gets a Segment when it is made:
// memory every rank maps, through which package collective runs its Shm
// algorithms. A communicator across hosts with several ranks on some host
// gets a Hierarchy instead: a communicator per host, with a segment, and
// communicators across hosts. Segments are unnamed files, so nothing is
// left in /dev/shm whatever happens to the processes; where one cannot be
// made (no /dev/shm space, /proc not readable) every rank of the
// communicator learns so and uses links. Waits in a segment honour the
// context and the timeout and end with a *PeerError when a rank waited
// for dies.
//
// # Sub-communicators
//
// Split partitions a communicator like MPI_Comm_split. Communicators share
// their ranks' links; the communicator id in every frame keeps their
// traffic apart.
//
// # Performance
//
// Send and Recv of a steady stream allocate nothing: receive requests,
// timers and buffers for early messages come from pools. Each message costs
// one header of codec.HeaderSize bytes and, over TCP, one writev.
package comm
