package comm

import (
	"context"

	"github.com/gocoll/gocoll/internal/core"
)

// Comm is a communicator: a group of ranks that exchange messages. The
// world communicator that Init and NewLocal return holds every rank of the
// job; Split makes smaller ones. Its methods may be called from several
// goroutines at once, but the blocking collectives of one communicator may
// not overlap (see the Concurrency section).
type Comm core.Comm

// core is c as the engine knows it.
func (c *Comm) core() *core.Comm { return (*core.Comm)(c) }

// Init joins the job described by the environment and returns its world
// communicator. It reads, in this order, the variables of gocoll run
// (GOCOLL_RANK, GOCOLL_SIZE, GOCOLL_ADDR), torchrun (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), Open MPI's mpirun (OMPI_COMM_WORLD_RANK and
// _SIZE), SLURM's srun (SLURM_PROCID, SLURM_NTASKS) and Kubernetes indexed
// jobs (JOB_COMPLETION_INDEX, with GOCOLL_SIZE); GOCOLL_ADDR overrides any
// launcher's rendezvous address, GOCOLL_SECRET sets the job secret,
// GOCOLL_TIMEOUT the communicator's timeout, GOCOLL_HEARTBEAT the heartbeat
// period (WithHeartbeat; "off" for none), GOCOLL_SPIN how long a wait over
// tcp or shared memory polls before it parks (WithSpin), GOCOLL_TRANSPORT
// the links (WithTransport), GOCOLL_TCP_CONGESTION their TCP congestion
// control (WithTCPCongestion), GOCOLL_SINGLE_COPY how shared-memory
// collectives copy (WithSingleCopy), GOCOLL_HUGE_PAGES whether their
// buffers go on huge pages (WithHugePages), GOCOLL_HOST the host identity
// (WithHostIdentity), GOCOLL_TUNING the tuning table (WithTuning),
// GOCOLL_TLS_CERT, GOCOLL_TLS_KEY and GOCOLL_TLS_CA the certificates of TLS
// (WithTLS), GOCOLL_STATS_SAMPLING the timing of Stats (WithStatsSampling),
// GOCOLL_TRACE the rank's timeline (WithTimeline), GOCOLL_DUMP where the
// flight recorder dumps (see the package doc), GOCOLL_SINGLETON whether a
// program without a launcher runs as a single rank (WithSingleton), and
// GOCOLL_DEBUG turns on debug logging. Options override the environment.
//
// Rank 0 serves the rendezvous at the address; the others retry until it
// is up or the timeout passes. Init returns once every rank has joined.
//
// Where the environment does not set GOMAXPROCS and the process runs at
// the runtime's default, Init lowers it to the rank's share of the CPUs
// its machine's ranks may run on between them (CPUs ÷ ranks, at least 1),
// which gocoll run sets and mpirun's and srun's binding to cores gives,
// and logs so at Info on the machine's first rank, as torchrun says that
// it set OMP_NUM_THREADS=1. Two ranks of two CPUs at two Ps each take
// turns on the CPUs: 64 KiB RecvObject round trips took four times as
// long. Set GOMAXPROCS to choose; a value other than the default that
// the program set stays.
//
// A program that no launcher started, where none of the rank variables
// above (GOCOLL_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID,
// JOB_COMPLETION_INDEX) nor GOCOLL_SIZE, WORLD_SIZE,
// OMPI_COMM_WORLD_SIZE, SLURM_NTASKS or GOCOLL_ADDR is set, becomes a job
// of one rank, as with MPI's singleton init: Init returns rank 0 of a
// world of size 1 at once, without a rendezvous, links or a listening
// socket, and logs so at Info through the logger (WithLogger). Every
// collective and point-to-point call works on it. GOCOLL_SINGLETON=0 or
// WithSingleton(false) make that an error wrapping ErrInvalid instead. A
// partial environment, such as RANK without WORLD_SIZE or WORLD_SIZE
// without RANK, is always an error.
func Init(ctx context.Context, opts ...Option) (*Comm, error) {
	c, err := core.Init(ctx, engineOptions(opts)...)
	return (*Comm)(c), err
}

// NewLocal starts a job of n ranks inside this process and returns their
// world communicators, rank i at index i. The ranks talk over in-memory
// links by default, or over real TCP sockets on 127.0.0.1 with
// WithTransport("tcp"). Each rank must be driven by its own goroutine, as
// it would be by its own process. Its ranks wait without spinning unless
// WithSpin says otherwise: they share the process's processors. Close
// every communicator when done.
func NewLocal(n int, opts ...Option) ([]*Comm, error) {
	cores, err := core.NewLocal(n, engineOptions(opts)...)
	if err != nil {
		return nil, err
	}
	cs := make([]*Comm, len(cores))
	for i, c := range cores {
		cs[i] = (*Comm)(c)
	}
	return cs, nil
}

// engineOptions converts options to the engine's type, which is the same
// function type under another name.
func engineOptions(opts []Option) []core.Option {
	out := make([]core.Option, len(opts))
	for i, o := range opts {
		out[i] = core.Option(o)
	}
	return out
}

// Rank is this process's rank in the communicator, in [0, Size()).
func (c *Comm) Rank() int {
	return c.core().Rank()
}

// Size is the number of ranks in the communicator.
func (c *Comm) Size() int {
	return c.core().Size()
}

// LocalRank is this rank's index among the ranks of c that run on its
// host, counted in the order of their ranks in c: 0 for the lowest rank
// of c on the host, up to LocalSize()-1. It is what torchrun calls
// LOCAL_RANK and Open MPI OMPI_COMM_WORLD_LOCAL_RANK, but gocoll works it
// out itself from the host identities the ranks exchange when they join,
// so it is right under every launcher (and without one), and for every
// communicator, those made by Split too: there it counts only the
// members of the new communicator. Use it to pick a device or a core
// per rank of a host.
//
// Ranks run on one host when their host identities are equal. A rank's
// identity is, first, what WithHostIdentity returns for it; else the
// GOCOLL_HOST variable of its process, when set and not empty; else the
// machine's own: its hostname and machine id (or boot id), so that
// containers that repeat a hostname still differ. Ranks that set
// GOCOLL_HOST to one value count as one host wherever they run, and ranks
// of one machine that set different values count as several hosts, which
// lets one machine stand in for many. The ranks of NewLocal share one
// process, hence one identity unless WithHostIdentity says otherwise.
//
// Both are worked out once, when c is made; the calls cost nothing.
func (c *Comm) LocalRank() int {
	return c.core().LocalRank()
}

// LocalSize is the number of ranks of c that run on this rank's host,
// this rank among them: torchrun's LOCAL_WORLD_SIZE, Open MPI's
// OMPI_COMM_WORLD_LOCAL_SIZE, for c. See LocalRank for what makes a host.
// It is Size() when every rank of c runs on one host.
func (c *Comm) LocalSize() int {
	return c.core().LocalSize()
}

// Split partitions c into disjoint communicators, like MPI_Comm_split.
// Every rank of c must call it. Ranks that pass the same color end up in
// the same new communicator, ordered by key and then by their rank in c.
// A negative color leaves the caller out: it gets nil, nil.
//
// Traffic of the new communicator never matches traffic of c or of any
// other communicator, even with equal tags.
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	sub, err := c.core().Split(ctx, color, key)
	return (*Comm)(sub), err
}

// Abort ends the job: every rank's pending and next calls fail with an
// error wrapping ErrAborted that names this rank and err. It returns at
// once; call Close afterwards to release resources.
func (c *Comm) Abort(err error) {
	c.core().Abort(err)
}

// Close releases the communicator. Closing the world communicator says
// goodbye to every peer this rank sent to, closes its links and, on rank
// 0, keeps the rendezvous up until the other ranks have closed too (or the
// timeout passes; after a lost rank, rank 0 has closed the rendezvous
// already, when it told the others of the loss). Closing a communicator
// made by Split only retires it.
// Close is idempotent.
func (c *Comm) Close() error {
	return c.core().Close()
}

// LossSettle is how long a rank that finds a peer lost waits for news of
// other losses before it fails: the ranks of a host that goes down break
// their links and miss their heartbeats within moments of each other, and
// every survivor's error names them all. It delays only the report of a
// loss, by this much at most.
const LossSettle = core.LossSettle

// MessageOverhead is what each early message costs in the
// unexpected-message budget (WithUnexpectedLimit) on top of its payload:
// about what its bookkeeping takes in memory, so that a flood of empty
// messages is bounded as well as a flood of large ones.
const MessageOverhead = core.MessageOverhead
