package collective

import (
	"context"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// Reduce combines buf of every rank with op and leaves the result in
// root's buf; every other rank's buf is left as it was. Algorithms: Tree,
// a binomial tree (lg p steps, each rank sends once); Rabenseifner,
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
// cheaper through shared memory (Shm), where the algorithms read root's
// send where they would have read its buf and never copy it whole. Over
// links root copies send into recv first.
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
		copyApart(buf, send)
		err = reduceTree(k, buf, root, 0)
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

// reduceFinalStep is the step of the extra hop from rank 0 to the root,
// above the tree's lg p < 64 levels.
const reduceFinalStep = 64

// reduceTree reduces buf of every rank into root's buf with a binomial
// tree, using steps step0 to step0+reduceFinalStep; the other ranks' bufs
// are not written. It does not finish the op (Avg's division), so that a
// caller that goes on (Allreduce's Tree) finishes once, at the end.
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
func reduceTree[T codec.Elem](k *call[T], buf []T, root, step0 int) error {
	p, me := k.c.Size(), k.c.Rank()
	if p == 1 {
		return nil
	}
	top := root
	if !k.op.Commutative() {
		top = 0
	}
	v := (me - top + p) % p

	// acc holds the partial result. The root builds it in buf, which ends
	// up holding the result anyway; any other rank that has children
	// builds it in scratch, since its buf must stay unchanged. A leaf
	// sends buf itself.
	acc := buf
	var sb scratchBuf
	var err error
	// A leaf receives nothing (in a Reduce; Allreduce's bcast follows),
	// so its parent acknowledges it.
	acks := k.me.Kind == wire.KindReduce
	for level, mask := 0, 1; mask < p; level, mask = level+1, mask<<1 {
		if v&mask != 0 {
			parent := (v - mask + top) % p
			err = k.send(parent, step0+level, acc, 0)
			if err == nil && acks && treeLeaf(v, p) {
				err = k.awaitAck(parent)
			}
			break
		}
		if v+mask >= p {
			continue
		}
		if me != root && sb.p == nil {
			acc, sb = scratch[T](len(buf))
			copy(acc, buf)
		}
		child := (v + mask + top) % p
		if acks && treeLeaf(v+mask, p) {
			if err = k.ack(child); err != nil {
				break
			}
		}
		if err = k.recvReduce(child, step0+level, acc, acc, 0, true); err != nil {
			break
		}
	}
	if err == nil && top != root {
		switch me {
		case top:
			err = k.send(root, step0+reduceFinalStep, acc, 0)
		case root:
			err = k.recv(top, step0+reduceFinalStep, buf, 0)
		}
	}
	sb.release()
	return err
}
