package collective

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/timeline"
	"github.com/gocoll/gocoll/internal/wire"
)

// call is one collective call on one rank: what it is on the wire (kind,
// element type, op, count, root, algorithm) and its sequence number, from
// which the tags of its messages derive. Algorithms send and receive only
// through it, so every message carries the call, which comm checks
// against the receiving rank's call of the same operation.
type call[T codec.Elem] struct {
	ctx context.Context
	c   *core.Comm
	me  wire.Call
	op  codec.Op
	seq uint64
	cfg config
	// ticket is the call's place in the order of operations on a
	// shared segment (Shm and Hierarchical).
	ticket uint64
	size   int // bytes per element
	// keep says that the call keeps, as its result, the values it sends
	// now, so that with a lossy codec send must round its copy as the
	// receivers' is. It starts as keepsRounded says and the allreduce
	// algorithms clear it for their reduce phases, whose partial sums the
	// sender does not keep.
	keep bool
	// pieceLen is the elements of the chunks or segments in which the
	// call's pipelined algorithm cuts its buffer, at most its length (0
	// where the algorithm cuts none). Calls do not record the chunk size,
	// so acknowledgements carry it: a rank that cuts its buffer otherwise
	// than the rank it hears from fails in the call, even where it only
	// sends.
	pieceLen int
	// entered says that the call holds its communicator (start).
	entered bool
	// beside says that the call runs in a goroutine of its own, beside
	// the work of the goroutine that issued it (AllreduceAsync).
	beside bool
	// ownUnused says that an Allgather's caller never reads this rank's
	// part of recv, so that through the segment's slots it is not copied
	// there (other paths may still copy it).
	ownUnused bool
	// t is what the call did, for its communicator's Stats.
	t core.Tally
	// labeled says that the call set the goroutine's profiler labels
	// (label), allLabels that every call sets them
	// (GOCOLL_PROFILE_LABELS), and region is its execution-trace region.
	labeled, allLabels bool
	region             *trace.Region
	// copier, when the call's segment operation is large enough, chose
	// whether the call's puts go around the caches (around), for calls
	// of copySize bytes; putBytes and putNanos are what they copied so
	// far, and how long they took.
	copier             *shmem.Copier
	around             bool
	copySize           int
	putBytes, putNanos int64
}

// rooted and reducing say which collectives have a root and an op.
func rooted(k wire.Kind) bool {
	switch k {
	case wire.KindReduce, wire.KindBcast, wire.KindGather, wire.KindGatherv, wire.KindScatter, wire.KindScatterv:
		return true
	}
	return false
}

func reducing(k wire.Kind) bool {
	switch k {
	case wire.KindAllreduce, wire.KindReduce, wire.KindReduceScatter, wire.KindScan, wire.KindExscan:
		return true
	}
	return false
}

// begin prepares a call and starts it: what a collective does whose
// arguments prepare checks in full.
func begin[T codec.Elem](k *call[T], ctx context.Context, c *comm.Comm, kind wire.Kind, op codec.Op, count, root int, opts []Option) error {
	if err := prepare(k, ctx, c, kind, op, count, root, opts); err != nil {
		return err
	}
	return k.start()
}

// prepare validates a call's options, root and op and chooses its
// algorithm. count is the number of elements of the whole operation,
// which every rank must agree on, and what the selector decides by. A
// call that fails validation aborts the job, as MPI's default error
// handler does: the other ranks would otherwise wait for this one until
// the timeout. A collective with more to check (buffer lengths, counts)
// checks it between prepare and start, so that a bad argument is
// reported as such and not as the mismatch it would cause. k is filled in
// place rather than returned, field by field: a call is a few hundred
// bytes, and a small call lasts a few hundred nanoseconds. k must be a
// zero call.
func prepare[T codec.Elem](k *call[T], ctx context.Context, c *comm.Comm, kind wire.Kind, op codec.Op, count, root int, opts []Option) error {
	dt := kernel.DTypeOf[T]()
	k.ctx, k.c, k.op, k.size, k.keep = ctx, (*core.Comm)(c), op, dt.Size(), keepsRounded(kind)
	k.me = wire.Call{Kind: kind, DType: dt, Count: count, Root: -1}
	if c == nil {
		return fmt.Errorf("%w: %s on a nil communicator", codec.ErrInvalid, kind)
	}
	reportEnv(k.c)
	for _, o := range opts {
		if err := o.apply(&k.cfg); err != nil {
			return k.invalid(err)
		}
	}
	if rooted(kind) {
		if root < 0 || root >= c.Size() {
			return k.invalid(fmt.Errorf("%w: root %d is outside the communicator of %d ranks", codec.ErrInvalid, root, c.Size()))
		}
		k.me.Root = root
	}
	if reducing(kind) {
		if err := kernel.Check(op, dt); err != nil {
			return k.invalid(err)
		}
		k.me.Op = kernel.ID(op)
	}
	if err := k.cfg.chooseCodec(dt); err != nil {
		return k.invalid(err)
	}
	e := env()
	if !k.cfg.receiptsSet {
		k.cfg.noReceipts = e.noReceipts
	}
	k.allLabels = e.profileLabels
	k.me.NoReceipts = k.cfg.noReceipts
	commutative := !reducing(kind) || op.Commutative()
	topo := topologyOf(k.c)
	algo, tuned, err := choose(kind, &k.cfg, c.Size(), count*k.size, commutative, &topo)
	if err != nil {
		return k.invalid(err)
	}
	k.cfg.tunedChunk = tuned.Chunk
	if !k.cfg.codecSet && kernel.CheckCodec(tuned.Codec, dt) == nil {
		k.cfg.codec = tuned.Codec
	}
	k.me.Algorithm = algo
	return nil
}

// chooseCodec settles the codec of a call of element type dt before its
// algorithm: the call's own, which must apply to dt, else GOCOLL_CODEC's
// where it applies. Where neither sets one the tuning table may, with
// the algorithm it was measured with.
func (c *config) chooseCodec(dt kernel.DType) error {
	if c.codecSet {
		return kernel.CheckCodec(c.codec, dt)
	}
	if e := env(); e.codecSet && kernel.CheckCodec(e.codec, dt) == nil {
		c.codec, c.codecSet = e.codec, true
	}
	return nil
}

// start starts a blocking call: it enters the communicator, which no
// other blocking collective may hold at once (comm.EnterCall; leave
// undoes it), and registers the call.
func (k *call[T]) start() error {
	if err := k.c.EnterCall(k.me.Kind); err != nil {
		return k.invalid(err)
	}
	k.entered = true
	if err := k.register(); err != nil {
		k.leave(&err)
		return err
	}
	return nil
}

// leave ends a blocking call that start entered, turning *err into an
// error, and the job into an aborted one, when another goroutine called a
// collective on the communicator meanwhile.
func (k *call[T]) leave(err *error) {
	if !k.entered {
		return
	}
	k.entered = false
	// A blocking call accounts while it holds the communicator (see
	// core.Comm.Account).
	k.end(*err)
	if e := k.c.LeaveCall(k.me.Kind); e != nil && *err == nil {
		*err = k.invalid(e)
		k.c.AccountFailure(&k.t)
	}
}

// end accounts for the call that ended with err: in its communicator's
// Stats, on the rank's timeline when it keeps one, and in the profiler
// labels and trace region it leaves.
func (k *call[T]) end(err error) {
	k.c.Account(&k.t, err)
	if k.t.Traced() {
		k.c.TimelineSpan(&timeline.Span{Name: k.me.Kind.String(), Cat: "collective", Start: k.t.Started(), End: core.Now(),
			Seq: k.seq, Bytes: int64(k.me.Count * k.size), Peer: -1, Step: -1, Algorithm: k.me.Algorithm.String(), Lane: k.lane()})
	}
	k.unlabel()
}

// span adds a span of the call's message of step step with peer, from
// start to end, to the rank's timeline, if it keeps one: a "send", a
// "wait" for its first byte or the "recv" of the rest.
func (k *call[T]) span(name string, start, end int64, peer, step, bytes int) {
	if !k.t.Traced() || end <= start {
		return
	}
	k.c.TimelineSpan(&timeline.Span{Name: name, Cat: name, Start: start, End: end, Seq: k.seq,
		Bytes: int64(bytes), Peer: peer, Step: step, Lane: k.lane()})
}

// lane is the timeline track of the call's spans: 0 for blocking calls,
// 1 for async ones, which overlap them.
func (k *call[T]) lane() int {
	if k.beside {
		return 1
	}
	return 0
}

// label marks the running goroutine as running the call: an
// execution-trace region (runtime/trace) named after the collective when
// tracing is on, and CPU-profiler labels (runtime/pprof) "collective" and
// "algorithm". Setting and resetting the labels costs about 20 ns, a
// tenth of an 8-byte call through a shared segment, so a Shm call of
// less than labelFrom bytes carries them only with
// GOCOLL_PROFILE_LABELS=1. unlabel undoes what label did.
func (k *call[T]) label() {
	if trace.IsEnabled() {
		k.region = trace.StartRegion(k.ctx, k.me.Kind.String())
		trace.Log(k.ctx, "algorithm", k.me.Algorithm.String())
	}
	if k.me.Algorithm != Shm || k.me.Count*k.size >= labelFrom || k.allLabels {
		k.labeled = true
		pprof.SetGoroutineLabels(profileContext(k.ctx, k.me.Kind, k.me.Algorithm))
	}
}

func (k *call[T]) unlabel() {
	if k.region != nil {
		k.region.End()
		k.region = nil
	}
	if k.labeled {
		k.labeled = false
		pprof.SetGoroutineLabels(k.ctx)
	}
}

// labelFrom is the size from which every Shm call carries profiler
// labels.
const labelFrom = 64 << 10

// labelContexts holds, by collective and algorithm, a context with
// nothing but their profiler labels, made on first use: a call whose
// context carries no labels of its own sets these, without allocating.
var labelContexts [wire.NumKinds][wire.NumAlgorithms]atomic.Pointer[context.Context]

// profileContext is ctx with the profiler labels of a call of kind and
// algo.
func profileContext(ctx context.Context, kind wire.Kind, algo wire.Algorithm) context.Context {
	own := false
	pprof.ForLabels(ctx, func(string, string) bool { own = true; return false })
	if own {
		return pprof.WithLabels(ctx, pprof.Labels("collective", kind.String(), "algorithm", algo.String()))
	}
	p := &labelContexts[kind][algo]
	if l := p.Load(); l != nil {
		return *l
	}
	l := pprof.WithLabels(context.Background(), pprof.Labels("collective", kind.String(), "algorithm", algo.String()))
	p.Store(&l)
	return l
}

// register registers the call with its communicator, which numbers it
// and checks it against the calls of the other ranks. A context that
// has ended already ends the call here, on every transport, before it
// waits for anybody (a segment's root would otherwise finish without).
// A Shm call only takes its number: its segment operation records the
// call (segBeginDirect, overLines).
func (k *call[T]) register() error {
	if k.ctx.Err() != nil {
		return k.wrap(-1, context.Cause(k.ctx))
	}
	var seq uint64
	var err error
	if k.me.Algorithm == Shm {
		seq, err = k.c.NextSeq()
	} else {
		seq, err = k.c.StartCall(k.me)
	}
	if err != nil {
		return k.wrap(-1, err)
	}
	k.seq = seq
	k.c.StartTally(&k.t, k.me.Kind, k.me.Algorithm, seq, k.me.Count*k.size, !k.beside)
	if !k.beside {
		k.label()
	}
	if s := k.segment(); s != nil {
		k.ticket = s.Enqueue()
	}
	return nil
}

// segment is the shared segment the call's algorithm runs on, if any. A
// communicator of one rank has none, and its Shm calls run locally.
func (k *call[T]) segment() *core.Segment {
	switch k.me.Algorithm {
	case Shm:
		return k.c.Segment()
	case Hierarchical:
		return k.c.Hierarchy().Node.Segment()
	}
	return nil
}

// invalid reports a bad argument of this rank's call and aborts the job
// with it.
func (k *call[T]) invalid(err error) error {
	err = k.wrap(-1, err)
	k.c.Abort(err)
	return err
}

// wrap names the collective, the ranks and the communicator in err. An
// error that comm already wrapped loses comm's wrapping: the collective
// is what the caller called.
func (k *call[T]) wrap(peer int, err error) error {
	var oe *comm.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return &comm.OpError{Op: k.me.String(), Comm: k.c.ID(), Rank: k.c.Rank(), Peer: peer, Err: err}
}

func (k *call[T]) tag(step int) int64 { return core.InternalTag(k.seq, step) }

func (k *call[T]) header(step, n, off int) wire.Header {
	h := wire.Header{Kind: k.me.Kind, DType: k.me.DType, Op: k.me.Op, Seq: k.seq, Tag: k.tag(step),
		Count: uint64(k.me.Count), Root: int32(k.me.Root), Algorithm: k.me.Algorithm, Offset: uint64(off),
		Length: uint64(n * k.size)}
	if k.me.NoReceipts {
		h.Flags = wire.FlagNoReceipts
	}
	return h
}

// recvReduce receives step step from peer and combines it with mine into
// dst: dst = mine ∘ received when the peer's data comes after this rank's
// in rank order (peerIsRight), received ∘ mine otherwise. mine is dst
// itself, or a send buffer apart from it that the call leaves unchanged;
// then the message lands in dst, and no scratch and no copy of mine are
// needed.
func (k *call[T]) recvReduce(peer, step int, dst, mine []T, off int, peerIsRight bool) error {
	got := dst
	var buf scratchBuf
	if sameSlice(dst, mine) {
		got, buf = scratch[T](len(dst))
	}
	defer buf.release()
	in, err := k.irecv(peer, step, got)
	if err != nil {
		return err
	}
	return k.awaitReduce(&in, peer, dst, off, mine, got, peerIsRight, nil)
}

// reduceMine leaves mine ∘ got (peerIsRight) or got ∘ mine in dst, which
// is one of the two: mine when the peer's data was received apart, got
// when it was received in place of an out-of-place call's own data.
func (k *call[T]) reduceMine(dst, mine, got []T, peerIsRight bool) error {
	k.t.Mark()
	defer k.t.Lap(core.PartReduce)
	return k.reduceMineUntimed(dst, mine, got, peerIsRight)
}

// reduceMineUntimed is reduceMine for a caller that times the larger step
// it is part of.
func (k *call[T]) reduceMineUntimed(dst, mine, got []T, peerIsRight bool) error {
	if sameSlice(dst, mine) {
		return k.reduceUntimed(dst, got, peerIsRight)
	}
	return k.reduceUntimed(dst, mine, !peerIsRight)
}

// reduce combines src into dst: dst = dst ∘ src when src is the right
// operand, src ∘ dst when it is the left one.
func (k *call[T]) reduce(dst, src []T, srcIsRight bool) error {
	k.t.Mark()
	defer k.t.Lap(core.PartReduce)
	return k.reduceUntimed(dst, src, srcIsRight)
}

// reduceUntimed is reduce for a caller that times the larger step it is
// part of.
func (k *call[T]) reduceUntimed(dst, src []T, srcIsRight bool) (err error) {
	defer k.recoverOp(&err)
	if srcIsRight {
		err = kernel.Reduce(k.op, dst, src)
	} else {
		var tmp []T
		var buf scratchBuf
		if !k.op.Commutative() {
			tmp, buf = scratch[T](len(dst))
		}
		err = kernel.ReduceLeft(k.op, src, dst, tmp)
		buf.release()
	}
	if err != nil {
		return k.wrap(-1, err)
	}
	return nil
}

// recoverOp turns a panic of a user op into *err, and aborts the job with
// it, naming this rank and the op: the other ranks would otherwise wait
// for this one until the timeout. A panic of anything else is a bug of
// gocoll's and goes on.
func (k *call[T]) recoverOp(err *error) {
	if kernel.ID(k.op) != ops.User {
		return
	}
	if p := recover(); p != nil {
		*err = k.invalid(fmt.Errorf("%w: user op %q panicked on rank %d: %v", codec.ErrInvalid, k.op, k.c.Rank(), p))
	}
}

func (k *call[T]) mismatch(peer int, h *wire.Header, detail string) error {
	me := k.c.Rank()
	err := &comm.MismatchError{Rank: me, Peer: peer, Local: k.me, Remote: h.Call(), Detail: detail}
	k.c.Abort(err)
	return k.wrap(peer, err)
}

// canceled withdraws receives that are no longer wanted.
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// Scratch buffers for received operands come from pools by power-of-two
// byte size, so a steady stream of collectives stops allocating once the
// pools are warm.
var scratchPools [64]sync.Pool

// scratchBuf is a pooled buffer on loan; the zero value owns nothing.
type scratchBuf struct {
	p     *[]byte
	class int
}

func (b scratchBuf) release() {
	if b.p != nil {
		scratchPools[b.class].Put(b.p)
	}
}

// scratch lends a buffer of n elements.
func scratch[T codec.Elem](n int) ([]T, scratchBuf) {
	size := n * kernel.DTypeOf[T]().Size()
	class := 0
	if size > 1 {
		class = bits.Len(uint(size - 1))
	}
	p, _ := scratchPools[class].Get().(*[]byte)
	if p == nil {
		b := make([]byte, 1<<class)
		p = &b
	}
	// size is a whole number of elements, so FromBytes cannot fail.
	s, _ := codec.FromBytes[T]((*p)[:size])
	return s, scratchBuf{p: p, class: class}
}

// block returns the bounds of block i when n elements are split into p
// nearly equal blocks (sizes differ by at most one, earlier blocks
// smaller): the partition that every block-wise algorithm uses, so that
// all ranks agree on it.
func block(n, p, i int) (start, end int) {
	return i * n / p, (i + 1) * n / p
}

// phaseSteps separates the step numbers of the phases of a composite
// algorithm (a reduce followed by a bcast, say): phase i numbers its steps
// from i*phaseSteps.
const phaseSteps = 1 << 20

// sameSlice reports whether a and b are one slice, the same elements from
// the same first one: an out-of-place call made in place.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// overlapApart reports whether a and b share memory without being one
// slice, which no out-of-place call accepts.
func overlapApart[T any](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 || sameSlice(a, b) {
		return false
	}
	size := unsafe.Sizeof(a[0])
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b))*size && b0 < a0+uintptr(len(a))*size
}

// copyApart copies src into dst unless they are one slice.
func copyApart[T any](dst, src []T) {
	if !sameSlice(dst, src) {
		copy(dst, src)
	}
}
