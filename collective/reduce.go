package collective

import (
	"context"
	"math/bits"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// Reduce combines buf of every rank with op and leaves the result in
// root's buf; every other rank's buf is left as it was. Algorithms: Tree,
// a binomial tree (lg p steps, each rank sends once, in segments of 256
// KiB that each rank passes on as soon as it has combined them); Rabenseifner,
// recursive halving, after which each rank holds its share of the
// result, and root gathers the shares (each rank combines a share and
// sends about twice its buf's bytes where the tree's ranks send it
// whole and only root combines the last of it); and Shm, through the
// communicator's shared segment, or copying once between the ranks'
// bufs where that has been faster (comm.WithSingleCopy). A
// non-commutative op is applied in rank order, r0∘r1∘…∘rN-1.
func Reduce[T codec.Elem](ctx context.Context, c *comm.Comm, buf []T, op codec.Op, root int, opts ...Option) (err error) {
	var k call[T]
	if err = begin(&k, ctx, c, wire.KindReduce, op, len(buf), root, opts); err != nil {
		return err
	}
	defer k.leave(&err)
	return k.reduceTo(buf, buf, root)
}

// ReduceInto is Reduce out of place, as MPI_Reduce with two buffers: it
// combines send of every rank with op and leaves the result in root's
// recv. send is never written. recv matters at root only, where it must
// be as long as send and either send itself or apart from it; every other
// rank's recv is not read or written, and may be nil. A rank may call
// Reduce while another calls ReduceInto in the same collective.
//
// It is what root copying send into recv and calling Reduce computes, but
// cheaper: every algorithm reads root's send where it would have read its
// buf, and none copies it whole.
func ReduceInto[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, op codec.Op, root int, opts ...Option) (err error) {
	var k call[T]
	if err = prepare(&k, ctx, c, wire.KindReduce, op, len(send), root, opts); err != nil {
		return err
	}
	if c.Rank() == root {
		if err = k.checkApart("ReduceInto", "root's recv", send, recv); err != nil {
			return err
		}
	}
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	return k.reduceTo(send, recv, root)
}

// reduceTo runs the chosen algorithm from send of every rank into recv
// of root (send itself in place; other ranks' recv is not used), and
// finishes the op there (Avg divides).
func (k *call[T]) reduceTo(send, recv []T, root int) error {
	buf := send // the buffer the algorithms take: a rank's result where it gets one
	if k.c.Rank() == root {
		buf = recv
	}
	var err error
	switch k.me.Algorithm {
	case Shm:
		err = reduceShm(k, k.c.Segment(), send, buf, root, nil)
	case Rabenseifner:
		err = reduceHalving(k, send, buf, root)
	default:
		err = reduceTree(k, send, buf, root, 0)
	}
	if err != nil {
		return err
	}
	if k.c.Rank() == root {
		kernel.Finish(k.op, buf, k.c.Size())
	}
	return nil
}

// reduceHalving is Reduce as Rabenseifner's: recursive halving
// (reduceScatterHalving) leaves each rank the combination of its blocks,
// in rank order where the op needs it, and root receives every other
// rank's blocks straight into buf, at step halvingSteps. Root works in
// buf, the others in scratch, since their buf must stay as it was; send
// is only read.
func reduceHalving[T codec.Elem](k *call[T], send, buf []T, root int) error {
	me, n := k.c.Rank(), len(buf)
	work := buf
	if me != root {
		var sb scratchBuf
		work, sb = scratch[T](n)
		defer sb.release()
	}
	lo, hi, err := reduceScatterHalving(k, send, work, 0)
	switch {
	case err != nil:
		return err
	case me != root && lo < hi:
		return k.send(root, halvingSteps, work[lo:hi], lo)
	case me != root:
		return nil // a rank the fold removed, or one of fewer elements than ranks
	}
	g := newHalving(k)
	for r := range k.c.Size() {
		first, last := g.owned(r)
		if r == root || first == last {
			continue // root's own blocks, or a rank the fold removed
		}
		a, _ := block(n, g.p, first)
		b, _ := block(n, g.p, last)
		if a == b {
			continue // fewer elements than ranks: r sends nothing
		}
		if err := k.recv(r, halvingSteps, buf[a:b], a); err != nil {
			return err
		}
	}
	return nil
}

// reduceSegment is the bytes of the segments in which reduceTree sends
// each rank's partial result, where WithChunkSize does not set them (as
// it does the chunks of the pipelined algorithms): a parent combines a
// segment while it is still in its caches and while its child sends the
// next. Over tcp on one host (the AMD EPYC Zen 3 VM, 2026-11-30, four
// alternating rounds of two ranks' Reduce, median µs) 64 KiB segments
// took 1.3 to 1.8 times the whole buffer's time, 128 KiB 0.98 / 0.88 /
// 0.81 of it at 1 / 4 / 16 MiB, 256 KiB 1.05 / 0.79 / 0.77 and 512 KiB
// 0.97 / 0.79 / 0.79: every message over loopback costs some 10 µs
// besides its bytes.
const reduceSegment = 256 << 10

// reduceWindow bounds the receives of segments a rank of reduceTree
// keeps posted, so that the next segments land where they are combined
// from while this one is.
const reduceWindow = 4

// reduceFinalLevel numbers the steps of the extra hop from rank 0 to the
// root, above the tree's lg p < 64 levels: segment i of level l has step
// l·MaxChunks + i.
const reduceFinalLevel = 64

// reduceTree reduces send of every rank into root's buf with a binomial
// tree, using steps step0 to step0+(reduceFinalLevel+1)·MaxChunks; send is
// never written, nor any other rank's buf. It does not finish the op
// (Avg's division), so that a caller that goes on (Allreduce's Tree)
// finishes once, at the end.
//
// In the tree, virtual rank v receives from v+1, v+2, v+4, … (each the
// head of the next contiguous range of virtual ranks) for as long as v's
// lowest bits are zero, then sends what it holds to v minus its lowest set
// bit. Every combination is held ∘ received, so the result is the ranks'
// contributions in virtual-rank order. A commutative op may take any
// order, so the tree hangs from the root itself (v = rank - root mod p).
// A non-commutative op needs rank order, so the tree hangs from rank 0
// (v = rank) and rank 0 sends the result to the root: one more message,
// which only non-commutative reductions to a root other than 0 pay.
//
// The buffer goes up the tree in segments (WithChunkSize's, else
// reduceSegment bytes): a rank sends its segment i on once it has
// combined segment i of all its children, so every level works at once,
// as in a chain.
func reduceTree[T codec.Elem](k *call[T], send, buf []T, root, step0 int) error {
	p, me := k.c.Size(), k.c.Rank()
	if p == 1 {
		copyApart(buf, send)
		return nil
	}
	top := root
	if !k.op.Commutative() {
		top = 0
	}
	v := (me - top + p) % p
	// Children at levels 0 … kids-1, the parent at level up (v > 0; the
	// top's up is the word size, so that p alone bounds its children).
	up := bits.TrailingZeros(uint(v))
	kids := 0
	for kids < up && v+1<<kids < p {
		kids++
	}
	child := func(level int) int { return (v + 1<<level + top) % p }
	parent := (v - 1<<up + top) % p
	n := len(buf)
	seg := min(capChunk(k.cfg.chunkElemsOr(k.size, reduceSegment), n), max(n, 1))
	segs := max(1, (n+seg-1)/seg) // an empty buffer still goes up, as one empty message
	k.pieceLen = min(seg, n)

	// A leaf receives nothing (in a Reduce; Allreduce's bcast follows),
	// so its parent acknowledges it.
	acks := k.me.Kind == wire.KindReduce
	for l := range kids {
		if acks && treeLeaf(v+1<<l, p) {
			if err := k.ack(child(l)); err != nil {
				return err
			}
		}
	}

	// acc holds the partial result. The root builds it in buf, which ends
	// up holding the result anyway; any other rank that has children
	// builds it in scratch, since its buf must stay unchanged. A leaf
	// sends send itself. The first child's segment lands in acc where acc
	// is apart from send (combined as send ∘ it); the others' land in got.
	acc := buf
	if me != root && kids > 0 {
		var sb scratchBuf
		acc, sb = scratch[T](n)
		defer sb.release()
	}
	receives := kids * segs
	var got []T
	if receives > 0 {
		var gb scratchBuf
		got, gb = scratch[T](min(reduceWindow, receives) * seg)
		defer gb.release()
	}
	// Receive r is segment r/kids of the child at level r%kids.
	landing := func(r int) []T {
		lo, hi := chunkBounds(0, n, seg, r/kids)
		if r%kids == 0 && !sameSlice(acc, send) {
			return acc[lo:hi]
		}
		return got[r%reduceWindow*seg:][:hi-lo]
	}
	var ins [reduceWindow]inbound
	defer withdrawAll(ins[:])
	post := func(r int) (err error) {
		l := r % kids
		ins[r%reduceWindow], err = k.irecv(child(l), step0+l*MaxChunks+r/kids, landing(r))
		return err
	}
	for r := range min(reduceWindow, receives) {
		if err := post(r); err != nil {
			return err
		}
	}
	for i := range segs {
		lo, hi := chunkBounds(0, n, seg, i)
		mine := send[lo:hi]
		for l := range kids {
			r := i*kids + l
			in := ins[r%reduceWindow]
			ins[r%reduceWindow] = inbound{}
			if err := k.awaitReduce(&in, child(l), acc[lo:hi], lo, mine, landing(r), true, nil); err != nil {
				return err
			}
			if r+reduceWindow < receives {
				if err := post(r + reduceWindow); err != nil {
					return err
				}
			}
			mine = acc[lo:hi]
		}
		var err error
		switch {
		case v > 0:
			err = k.send(parent, step0+up*MaxChunks+i, mine, lo)
		case top != root:
			err = k.send(root, step0+reduceFinalLevel*MaxChunks+i, mine, lo)
		}
		if err != nil {
			return err
		}
	}
	if v > 0 && acks && kids == 0 {
		if err := k.awaitAck(parent); err != nil {
			return err
		}
	}
	if me == root && top != root {
		for i := range segs {
			lo, hi := chunkBounds(0, n, seg, i)
			if err := k.recv(top, step0+reduceFinalLevel*MaxChunks+i, buf[lo:hi], lo); err != nil {
				return err
			}
		}
	}
	return nil
}
