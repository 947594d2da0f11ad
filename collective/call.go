package collective

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// call is one collective call on one rank: what it is on the wire (kind,
// element type, op, count, root, algorithm) and its sequence number, from
// which the tags of its messages derive. Algorithms send and receive only
// through it, so every message carries the call, which comm checks
// against the receiving rank's call of the same operation.
type call[T codec.Elem] struct {
	ctx context.Context
	c   *comm.Comm
	me  Call
	op  codec.Op
	seq uint64
	cfg config
	// ticket is the call's place in the order of operations on a
	// shared segment (Shm and Hierarchical).
	ticket uint64
	size   int // bytes per element
}

// rooted and reducing say which collectives have a root and an op.
func rooted(k codec.Kind) bool {
	switch k {
	case codec.KindReduce, codec.KindBcast, codec.KindGather, codec.KindGatherv, codec.KindScatter, codec.KindScatterv:
		return true
	}
	return false
}

func reducing(k codec.Kind) bool {
	switch k {
	case codec.KindAllreduce, codec.KindReduce, codec.KindReduceScatter, codec.KindScan, codec.KindExscan:
		return true
	}
	return false
}

// begin prepares a call and starts it: what a collective does whose
// arguments prepare checks in full.
func begin[T codec.Elem](ctx context.Context, c *comm.Comm, kind codec.Kind, op codec.Op, count, root int, opts []Option) (call[T], error) {
	k, err := prepare[T](ctx, c, kind, op, count, root, opts)
	if err != nil {
		return k, err
	}
	return k, k.start()
}

// prepare validates a call's options, root and op and chooses its
// algorithm. count is the number of elements of the whole operation,
// which every rank must agree on, and what the selector decides by. A
// call that fails validation aborts the job, as MPI's default error
// handler does: the other ranks would otherwise wait for this one until
// the timeout. A collective with more to check (buffer lengths, counts)
// checks it between prepare and start, so that a bad argument is
// reported as such and not as the mismatch it would cause.
func prepare[T codec.Elem](ctx context.Context, c *comm.Comm, kind codec.Kind, op codec.Op, count, root int, opts []Option) (call[T], error) {
	dt := codec.DTypeOf[T]()
	k := call[T]{ctx: ctx, c: c, op: op, size: dt.Size(),
		me: Call{Kind: kind, DType: dt, Count: count, Root: -1}}
	if c == nil {
		return k, fmt.Errorf("%w: %s on a nil communicator", codec.ErrInvalid, kind)
	}
	for _, o := range opts {
		if err := o.apply(&k.cfg); err != nil {
			return k, k.invalid(err)
		}
	}
	if rooted(kind) {
		if root < 0 || root >= c.Size() {
			return k, k.invalid(fmt.Errorf("%w: root %d is outside the communicator of %d ranks", codec.ErrInvalid, root, c.Size()))
		}
		k.me.Root = root
	}
	if reducing(kind) {
		if err := op.Check(dt); err != nil {
			return k, k.invalid(err)
		}
		k.me.Op = op.ID()
	}
	commutative := !reducing(kind) || op.Commutative()
	algo, chunk, err := choose(kind, k.cfg, c.Size(), count*k.size, commutative, topologyOf(c))
	if err != nil {
		return k, k.invalid(err)
	}
	k.cfg.tunedChunk = chunk
	k.me.Algorithm = algo
	return k, nil
}

// start registers the call with its communicator, which numbers it and
// checks it against the calls of the other ranks.
func (k *call[T]) start() error {
	h := k.header(0, 0, 0)
	if err := k.c.StartCall(&h); err != nil {
		return k.wrap(-1, err)
	}
	k.seq = h.Seq
	if s := k.segment(); s != nil {
		k.ticket = s.Enqueue()
	}
	return nil
}

// segment is the shared segment the call's algorithm runs on, if any. A
// communicator of one rank has none, and its Shm calls run locally.
func (k *call[T]) segment() *comm.Segment {
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

func (k *call[T]) tag(step int) int64 { return comm.InternalTag(k.seq, step) }

func (k *call[T]) header(step, n, off int) codec.Header {
	return codec.Header{Kind: k.me.Kind, DType: k.me.DType, Op: k.me.Op, Seq: k.seq, Tag: k.tag(step),
		Count: uint64(k.me.Count), Root: int32(k.me.Root), Algorithm: k.me.Algorithm, Offset: uint64(off),
		Length: uint64(n * k.size)}
}

// send sends s, the elements at offset off of the operation's buffer, to
// peer as step step of the algorithm.
func (k *call[T]) send(peer, step int, s []T, off int) error {
	h := k.header(step, len(s), off)
	if err := k.c.SendHeader(k.ctx, peer, &h, codec.Bytes(s)); err != nil {
		return k.sendFailed(peer, err)
	}
	return nil
}

// sendFailed wraps a send's error. A send refused as invalid (a header
// this call built wrong) sent nothing, and the peer would wait for it, so
// the job is aborted.
func (k *call[T]) sendFailed(peer int, err error) error {
	if errors.Is(err, codec.ErrInvalid) {
		err = k.wrap(peer, err)
		k.c.Abort(err)
		return err
	}
	return k.wrap(peer, err)
}

// recv receives step step from peer into dst, the elements at offset off.
func (k *call[T]) recv(peer, step int, dst []T, off int) error {
	b := codec.Bytes(dst)
	n, h, err := k.c.RecvHeader(k.ctx, peer, k.tag(step), b)
	if err = k.check(peer, n, &h, len(dst), off, err); err != nil {
		return err
	}
	codec.Store(dst, b)
	return nil
}

// sendRecv sends s to dst and receives into r from src at once, the
// receive posted first so that neither side waits for the other's send.
func (k *call[T]) sendRecv(to, sendStep int, s []T, soff int, from, recvStep int, r []T, roff int) error {
	b := codec.Bytes(r)
	req, err := k.c.IrecvHeader(from, k.tag(recvStep), b)
	if err != nil {
		return k.wrap(from, err)
	}
	if err := k.send(to, sendStep, s, soff); err != nil {
		req.WaitHeader(canceled) // withdraw the receive
		return err
	}
	n, h, err := req.WaitHeader(k.ctx)
	if err = k.check(from, n, &h, len(r), roff, err); err != nil {
		return err
	}
	codec.Store(r, b)
	return nil
}

// recvReduce receives step step from peer and reduces it into dst: dst =
// dst ∘ received when the peer's data comes after this rank's in rank
// order (peerIsRight), received ∘ dst otherwise.
func (k *call[T]) recvReduce(peer, step int, dst []T, off int, peerIsRight bool) error {
	tmp, buf := scratch[T](len(dst))
	defer buf.release()
	if err := k.recv(peer, step, tmp, off); err != nil {
		return err
	}
	return k.reduce(dst, tmp, peerIsRight)
}

// reduce combines src into dst: dst = dst ∘ src when src is the right
// operand, src ∘ dst when it is the left one.
func (k *call[T]) reduce(dst, src []T, srcIsRight bool) error {
	var err error
	if srcIsRight {
		err = codec.Reduce(k.op, dst, src)
	} else {
		var tmp []T
		var buf scratchBuf
		if !k.op.Commutative() {
			tmp, buf = scratch[T](len(dst))
		}
		err = codec.ReduceLeft(k.op, src, dst, tmp)
		buf.release()
	}
	if err != nil {
		return k.wrap(-1, err)
	}
	return nil
}

// check turns the outcome of a receive into this call's error: a sender
// whose message differs from what this rank's call expects is a mismatch,
// which aborts the job. comm compares the calls of every frame as it
// arrives; this check adds what a call does not describe (lengths and
// offsets, which chunk sizes decide) and covers operations too old for
// comm to remember.
func (k *call[T]) check(peer, n int, h *codec.Header, want, off int, err error) error {
	if err != nil {
		if te := new(comm.TruncateError); errors.As(err, &te) {
			return k.mismatch(peer, h, fmt.Sprintf("it sent %d bytes where %d were expected", te.Len, te.Cap))
		}
		return k.wrap(peer, err)
	}
	if h.Call() != k.me {
		return k.mismatch(peer, h, "")
	}
	if n != want*k.size || int(h.Offset) != off {
		return k.mismatch(peer, h, fmt.Sprintf("it sent %d elements at offset %d where %d at offset %d were expected (different chunk sizes?)",
			n/k.size, h.Offset, want, off))
	}
	return nil
}

func (k *call[T]) mismatch(peer int, h *codec.Header, detail string) error {
	me := k.c.Rank()
	err := &MismatchError{Rank: me, Peer: peer, Local: k.me, Remote: h.Call(), Detail: detail}
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
	size := n * codec.DTypeOf[T]().Size()
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
