package collective

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/kernel"
)

// DefaultBucketBytes is the size limit of a Bucketer's buckets unless
// WithBucketBytes sets another: PyTorch DDP's default of 25 MiB, large
// enough that per-message costs vanish and small enough that the first
// buckets start while later gradients are still being computed.
const DefaultBucketBytes = 25 << 20

// Bucketer allreduces many tensors (gradients) as a few large messages,
// as PyTorch DDP and Horovod do. Tensors are registered once (Register);
// in registration order they fill buckets of up to WithBucketBytes bytes,
// each of one element type, and a tensor larger than the limit gets a
// bucket of its own. Each bucket has a flat buffer, allocated at the first
// step and reused by every step after it: in registered memory (Alloc)
// where ranks of the communicator share a host, so that the buckets'
// Allreduces go direct, between the ranks' buffers (across hosts, the
// phases of a Hierarchical Allreduce inside each host), and in ordinary
// memory otherwise or when /dev/shm has no room for them. Close frees it.
//
// A step either calls AllreduceAll, or marks each tensor with Ready as soon
// as its value is final and then calls Wait: a bucket whose tensors are all
// ready starts its AllreduceAsync at once, so communication overlaps the
// computation of the remaining tensors. Buckets start in bucket order on
// every rank, whatever order the tensors become ready in, because that
// order is what matches them across ranks: a bucket that is ready waits
// for every earlier one to start. Register tensors in the order they
// usually become ready (for back-propagation, the reverse of the forward
// pass), so that buckets are held back as little as possible.
//
// Every rank must register the same tensors (lengths and element types) in
// the same order, with the same options; the first step checks that and
// fails naming the first tensor that differs.
//
// A step allocates nothing of its own in steady state; each bucket costs
// what one AllreduceAsync under a cancellable context costs (a
// goroutine, its Request: about 8 allocations). Ready, Wait and
// AllreduceAll may be called from several goroutines.
type Bucketer struct {
	c       *comm.Comm
	op      codec.Op
	limit   int      // bytes per bucket
	options []Option // of every bucket's allreduce

	mu      sync.Mutex
	tensors []tensorState
	buckets []bucketState
	frozen  bool // the first step began: the plan is fixed and checked
	closed  bool
	next    int // the first bucket of this step not yet started
	// stop ends the collectives of a step early, when a caller's context
	// ends or the step fails: they run under it rather than under the
	// context of the Ready call that started them, so that Wait's context
	// bounds them too. It is replaced only after it was cancelled, so a
	// step that succeeds allocates no context.
	stop   context.Context
	cancel context.CancelFunc
}

type tensorState struct {
	bucket int // index in Bucketer.buckets
	pos    int // index among the bucket's tensors
	len    int
	dtype  kernel.DType
	ready  bool
}

type bucketState struct {
	flat     flatBucket
	first    int // index of its first tensor; its tensors are consecutive
	ntensors int
	bytes    int
	pending  int // tensors not yet ready in this step
	req      *Request
}

// flatBucket is the typed part of a bucket: its tensors and its flat
// buffer, whatever their element type.
type flatBucket interface {
	dtype() kernel.DType
	elems() int
	alloc(registered bool)
	free() error
	pack(pos int)
	unpack()
	allreduce(ctx context.Context, c *comm.Comm, op codec.Op, opts []Option) *Request
}

type typedBucket[T codec.Elem] struct {
	tensors    [][]T
	offsets    []int // of each tensor in flat
	count      int
	flat       []T
	registered bool // flat came from Alloc
}

func (t *typedBucket[T]) dtype() kernel.DType { return kernel.DTypeOf[T]() }
func (t *typedBucket[T]) elems() int          { return t.count }

// alloc allocates flat, in registered memory if registered and it can.
func (t *typedBucket[T]) alloc(registered bool) {
	if registered && t.count > 0 {
		if flat, err := Alloc[T](t.count); err == nil {
			t.flat, t.registered = flat, true
			return
		}
	}
	t.flat = make([]T, t.count)
}

func (t *typedBucket[T]) free() error {
	flat := t.flat
	t.flat = nil
	if !t.registered {
		return nil
	}
	t.registered = false
	return Free(flat)
}

func (t *typedBucket[T]) add(buf []T) {
	t.tensors = append(t.tensors, buf)
	t.offsets = append(t.offsets, t.count)
	t.count += len(buf)
}

func (t *typedBucket[T]) pack(pos int) { copy(t.flat[t.offsets[pos]:], t.tensors[pos]) }

func (t *typedBucket[T]) unpack() {
	for i, buf := range t.tensors {
		copy(buf, t.flat[t.offsets[i]:])
	}
}

func (t *typedBucket[T]) allreduce(ctx context.Context, c *comm.Comm, op codec.Op, opts []Option) *Request {
	return AllreduceAsync(ctx, c, t.flat, op, opts...)
}

// BucketOption configures a Bucketer.
type BucketOption func(*Bucketer) error

// WithBucketBytes sets the size limit of a bucket in bytes (default
// DefaultBucketBytes). Every rank must set the same limit.
func WithBucketBytes(n int) BucketOption {
	return func(b *Bucketer) error {
		if n <= 0 {
			return fmt.Errorf("%w: bucket size %d bytes must be positive", codec.ErrInvalid, n)
		}
		b.limit = n
		return nil
	}
}

// WithAllreduceOptions passes opts (algorithm, chunk size, …) to the
// allreduce of every bucket.
func WithAllreduceOptions(opts ...Option) BucketOption {
	return func(b *Bucketer) error {
		b.options = append(b.options, opts...)
		return nil
	}
}

// NewBucketer returns a Bucketer that reduces with op over c, with no
// tensors registered yet.
func NewBucketer(c *comm.Comm, op codec.Op, opts ...BucketOption) (*Bucketer, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: bucketer on a nil communicator", codec.ErrInvalid)
	}
	stop, cancel := context.WithCancel(context.Background())
	b := &Bucketer{c: c, op: op, limit: DefaultBucketBytes, stop: stop, cancel: cancel}
	for _, o := range opts {
		if err := o(b); err != nil {
			cancel()
			return nil, fmt.Errorf("bucketer: %w", err)
		}
	}
	return b, nil
}

// Register adds buf as b's next tensor and returns its index, which Ready
// takes. buf is read at Ready (or AllreduceAll) and receives the result
// at Wait; between the two the caller must not touch it. Tensors can be
// registered only before the first step, which fixes the buckets.
func Register[T codec.Elem](b *Bucketer, buf []T) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := len(b.tensors)
	if b.closed {
		return -1, fmt.Errorf("bucketer: tensor %d registered after Close: %w", i, comm.ErrClosed)
	}
	if b.frozen {
		return -1, fmt.Errorf("%w: bucketer: tensor %d registered after the first step, which fixed the buckets", codec.ErrInvalid, i)
	}
	dt := kernel.DTypeOf[T]()
	if err := kernel.Check(b.op, dt); err != nil {
		return -1, fmt.Errorf("bucketer: tensor %d (%d %s): %w", i, len(buf), dt, err)
	}
	size := len(buf) * dt.Size()
	var tb *typedBucket[T]
	if n := len(b.buckets); n > 0 {
		last := &b.buckets[n-1]
		if t, ok := last.flat.(*typedBucket[T]); ok && last.bytes+size <= b.limit {
			tb = t
		}
	}
	if tb == nil {
		tb = new(typedBucket[T])
		b.buckets = append(b.buckets, bucketState{flat: tb, first: i})
	}
	bk := &b.buckets[len(b.buckets)-1]
	b.tensors = append(b.tensors, tensorState{bucket: len(b.buckets) - 1, pos: bk.ntensors, len: len(buf), dtype: dt})
	tb.add(buf)
	bk.ntensors++
	bk.pending++
	bk.bytes += size
	return i, nil
}

// Ready marks tensor i final for this step and copies it into its
// bucket's buffer. When that completes its bucket and every earlier
// bucket has started, the bucket's allreduce starts, and so does that of
// each later bucket it was holding back. The allreduces run under the
// Bucketer's own context, not ctx: ctx bounds Ready itself (and, in the
// first step, the check of the plan), Wait's context bounds the
// allreduces. Marking a tensor twice in one step, or an index that was
// never registered, is an error that changes nothing.
func (b *Bucketer) Ready(ctx context.Context, i int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ready(ctx, i)
}

func (b *Bucketer) ready(ctx context.Context, i int) error {
	if b.closed {
		return fmt.Errorf("bucketer: tensor %d marked ready after Close: %w", i, comm.ErrClosed)
	}
	if i < 0 || i >= len(b.tensors) {
		return fmt.Errorf("%w: bucketer: tensor %d marked ready, but %d tensors are registered", codec.ErrInvalid, i, len(b.tensors))
	}
	t := &b.tensors[i]
	if t.ready {
		return fmt.Errorf("%w: bucketer: tensor %d marked ready twice in one step", codec.ErrInvalid, i)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bucketer: tensor %d: %w", i, err)
	}
	if !b.frozen {
		if err := b.freeze(ctx); err != nil {
			return err
		}
	}
	t.ready = true
	bk := &b.buckets[t.bucket]
	bk.flat.pack(t.pos)
	bk.pending--
	for b.next < len(b.buckets) && b.buckets[b.next].pending == 0 {
		bk := &b.buckets[b.next]
		bk.req = bk.flat.allreduce(b.stop, b.c, b.op, b.options)
		b.next++
	}
	return nil
}

// freeze fixes the plan at the first step: it checks that every rank
// registered the same tensors and allocates the flat buffers. A
// difference would otherwise show as a mismatch of some bucket's
// allreduce, or not at all where two ranks' buckets hold the same number
// of elements in different tensors.
func (b *Bucketer) freeze(ctx context.Context) error {
	// One word per tensor (length and element type), then the bucket
	// limit. A rank with a different number of tensors fails in the
	// Allgather itself, as a mismatch of counts.
	mine := make([]int64, len(b.tensors)+1)
	for i, t := range b.tensors {
		mine[i] = int64(t.len)<<8 | int64(t.dtype)
	}
	mine[len(b.tensors)] = int64(b.limit)
	all := make([]int64, len(mine)*b.c.Size())
	if err := Allgather(ctx, b.c, mine, all); err != nil {
		return fmt.Errorf("bucketer: checking that every rank registered the same %d tensors: %w", len(b.tensors), err)
	}
	for r := range b.c.Size() {
		for i, w := range all[r*len(mine) : (r+1)*len(mine)] {
			if w == mine[i] {
				continue
			}
			if i == len(b.tensors) {
				return fmt.Errorf("%w: bucketer: buckets of %d bytes on rank %d but %d on rank %d; every rank must set the same limit",
					comm.ErrMismatch, b.limit, b.c.Rank(), w, r)
			}
			return fmt.Errorf("%w: bucketer: tensor %d is %d %s on rank %d but %d %s on rank %d; every rank must register the same tensors in the same order",
				comm.ErrMismatch, i, mine[i]>>8, kernel.DType(mine[i]&0xff), b.c.Rank(), w>>8, kernel.DType(w&0xff), r)
		}
	}
	// Ranks share a host where the communicator has a segment, or a
	// hierarchy, whose hosts' segments take a Hierarchical Allreduce's
	// phases inside each host.
	cc := (*core.Comm)(b.c)
	shared := cc.Segment() != nil || cc.Hierarchy() != nil
	for i := range b.buckets {
		b.buckets[i].flat.alloc(shared)
	}
	b.frozen = true
	return nil
}

// Close frees the buckets' buffers. A step must not be running: Close
// then fails with an error wrapping ErrInvalid and frees nothing. After
// Close, Register, Ready and AllreduceAll fail with comm.ErrClosed.
// Close is idempotent.
func (b *Bucketer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	if b.next > 0 || slices.ContainsFunc(b.tensors, func(t tensorState) bool { return t.ready }) {
		return fmt.Errorf("%w: bucketer: Close during a step; Wait for it first", codec.ErrInvalid)
	}
	b.closed = true
	b.cancel()
	var first error
	for i := range b.buckets {
		if err := b.buckets[i].flat.free(); err != nil && first == nil {
			first = fmt.Errorf("bucketer: freeing bucket %d: %w", i, err)
		}
	}
	return first
}

// Wait completes the step: it waits for every bucket's allreduce, copies
// the results back into the tensors and makes the Bucketer ready for the
// next step. Every tensor must have been marked ready; if one was not,
// the ranks that marked it wait for this one, so the job is aborted, as
// for any invalid argument of a collective.
//
// Wait returns the first bucket's error, naming the bucket and its
// tensors, or ctx's error if ctx ended first, after every allreduce of
// the step has ended: none is left running. The tensors of buckets that
// completed then hold their results; the others keep this rank's values.
func (b *Bucketer) Wait(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	stopped := ctx.Err()
	if stopped == nil {
		if missing := b.unready(); missing != "" {
			stopped = fmt.Errorf("%w: bucketer: Wait on rank %d before %s marked ready", codec.ErrInvalid, b.c.Rank(), missing)
			b.c.Abort(stopped)
		}
	}
	return b.finish(ctx, stopped)
}

// AllreduceAll runs a step at once: it marks every tensor not yet marked
// ready, in registration order, so that each bucket's allreduce starts as
// soon as it is packed and overlaps the packing of the next, then waits
// as Wait does.
func (b *Bucketer) AllreduceAll(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.tensors {
		if b.tensors[i].ready {
			continue
		}
		if err := b.ready(ctx, i); err != nil {
			return b.finish(ctx, err)
		}
	}
	return b.finish(ctx, nil)
}

// finish waits for the step's allreduces, unpacks each bucket that
// succeeded as soon as it has, and resets the step. A non-nil stopped is
// why the step ends early: its allreduces are cancelled, and it is the
// error returned. So is ctx ending during the wait. Otherwise the first
// failing bucket cancels the rest, since they would each wait for the
// same lost peer.
func (b *Bucketer) finish(ctx context.Context, stopped error) error {
	if stopped != nil {
		b.cancel()
	}
	var first error
	for i := range b.next {
		bk := &b.buckets[i]
		select {
		case <-bk.req.Done():
		case <-ctx.Done():
			if stopped == nil {
				stopped = fmt.Errorf("bucketer: %w", ctx.Err())
				b.cancel()
			}
		}
		// The allreduce has completed or is cancelled and ends soon; its
		// buffer is the bucket's, which unpack and the next step use, so
		// wait for its end whatever ctx says.
		if err := bk.req.Wait(context.Background()); err != nil {
			if first == nil {
				first = fmt.Errorf("bucketer: %s: %w", b.label(i), err)
				b.cancel()
			}
			continue
		}
		bk.flat.unpack()
	}
	b.reset()
	if stopped != nil {
		return stopped
	}
	return first
}

// reset readies the Bucketer for the next step, with a fresh stop
// context if this step's was cancelled.
func (b *Bucketer) reset() {
	for i := range b.tensors {
		b.tensors[i].ready = false
	}
	for i := range b.buckets {
		bk := &b.buckets[i]
		bk.pending, bk.req = bk.ntensors, nil
	}
	b.next = 0
	if b.stop.Err() != nil {
		b.stop, b.cancel = context.WithCancel(context.Background())
	}
}

// unready names the tensors not yet marked ready in this step, or is
// empty when all are.
func (b *Bucketer) unready() string {
	const shown = 8
	var names []string
	missing := 0
	for i, t := range b.tensors {
		if t.ready {
			continue
		}
		if missing < shown {
			names = append(names, fmt.Sprint(i))
		}
		missing++
	}
	switch {
	case missing == 0:
		return ""
	case missing == 1:
		return "tensor " + names[0] + " was"
	case missing > shown:
		names = append(names, fmt.Sprintf("%d more", missing-shown))
	}
	return "tensors " + strings.Join(names, ", ") + " were"
}

// label names bucket i and its tensors in errors.
func (b *Bucketer) label(i int) string {
	bk := &b.buckets[i]
	what := fmt.Sprintf("tensor %d", bk.first)
	if bk.ntensors > 1 {
		what = fmt.Sprintf("tensors %d-%d", bk.first, bk.first+bk.ntensors-1)
	}
	return fmt.Sprintf("bucket %d (%s: %d %s)", i, what, bk.flat.elems(), bk.flat.dtype())
}
