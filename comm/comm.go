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

// Request is a receive posted with Irecv.
type Request core.Request

// Init joins the job described by the environment and returns its world
// communicator. It reads, in this order, the variables of gocoll run
// (GOCOLL_RANK, GOCOLL_SIZE, GOCOLL_ADDR), torchrun (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), Open MPI's mpirun (OMPI_COMM_WORLD_RANK and
// _SIZE), SLURM's srun (SLURM_PROCID, SLURM_NTASKS) and Kubernetes indexed
// jobs (JOB_COMPLETION_INDEX, with GOCOLL_SIZE); GOCOLL_ADDR overrides any
// launcher's rendezvous address, GOCOLL_SECRET sets the job secret,
// GOCOLL_TIMEOUT the communicator's timeout, GOCOLL_HEARTBEAT the heartbeat
// period (WithHeartbeat; "off" for none), GOCOLL_SPIN how long a wait
// over tcp polls before it parks (WithSpin), GOCOLL_TRANSPORT the links
// (WithTransport), GOCOLL_TCP_CONGESTION their TCP congestion control
// (WithTCPCongestion), GOCOLL_HOST the host identity (WithHostIdentity),
// GOCOLL_TUNING the tuning table (WithTuning), GOCOLL_TLS_CERT,
// GOCOLL_TLS_KEY and GOCOLL_TLS_CA the certificates of TLS (WithTLS),
// GOCOLL_STATS_SAMPLING the timing of Stats (WithStatsSampling),
// GOCOLL_TRACE the rank's timeline (WithTimeline), GOCOLL_DUMP where the
// flight recorder dumps (see the package doc), and GOCOLL_DEBUG turns on
// debug logging. Options override the environment.
//
// Rank 0 serves the rendezvous at the address; the others retry until it
// is up or the timeout passes. Init returns once every rank has joined.
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

// Send sends b to rank dst with the given tag. It returns once b may be
// reused, which for messages the peer has not yet asked for means once the
// bytes are handed to the transport. Tags are non-negative; messages with
// the same tag from one sender arrive in the order they were sent.
func (c *Comm) Send(ctx context.Context, dst, tag int, b []byte) error {
	return c.core().Send(ctx, dst, tag, b)
}

// Recv receives a message with the given tag from rank src into b and
// returns its length. A message longer than b is an error wrapping
// ErrTruncated that names both sizes; the message is not consumed.
func (c *Comm) Recv(ctx context.Context, src, tag int, b []byte) (int, error) {
	return c.core().Recv(ctx, src, tag, b)
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

// Irecv posts a receive and returns at once. A message that arrives after
// the receive is posted is read straight into b; b must not be touched
// until Wait returns.
func (c *Comm) Irecv(src, tag int, b []byte) (*Request, error) {
	r, err := c.core().Irecv(src, tag, b)
	return (*Request)(r), err
}

// Wait blocks until the receive completes and returns the message length.
// It honours ctx and the communicator's timeout: a receive that no message
// matched yet is withdrawn and the error wraps ctx's error or ErrTimeout.
func (r *Request) Wait(ctx context.Context) (int, error) {
	return (*core.Request)(r).Wait(ctx)
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
