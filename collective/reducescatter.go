package collective

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/gocoll/gocoll/internal/wire"
)

// ReduceScatter combines send of every rank with op and scatters the
// result: rank i gets block i, the elements [i·len(recv), (i+1)·len(recv))
// of the combined buffer, in recv. len(send) must be Size()·len(recv);
// send is not modified and must not overlap recv. Avg divides by Size().
// Algorithms: Ring (p-1 steps; commutative ops only), RecursiveHalving
// (lg p steps, plus two when p is not a power of two) and Shm (through
// the communicator's shared segment). RecursiveHalving and Shm keep rank
// order, r0∘r1∘…, so they also serve non-commutative ops; RecursiveHalving
// at the price of one more step that moves each block to its rank.
func ReduceScatter[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, op codec.Op, opts ...Option) (err error) {
	var k call[T]
	if err = prepareReduceScatter(&k, ctx, c, send, recv, op, opts); err != nil {
		return err
	}
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	return k.reduceScatter(send, recv)
}

// prepareReduceScatter prepares k as a ReduceScatter from send into recv
// and checks their lengths: what ReduceScatter and ReduceScatterAsync
// check before they start.
func prepareReduceScatter[T codec.Elem](k *call[T], ctx context.Context, c *comm.Comm, send, recv []T, op codec.Op, opts []Option) error {
	if err := prepare(k, ctx, c, wire.KindReduceScatter, op, len(send), -1, opts); err != nil {
		return err
	}
	if p := c.Size(); len(send) != p*len(recv) {
		return k.invalid(fmt.Errorf("%w: send has %d elements, want Size()·len(recv) = %d·%d = %d",
			codec.ErrInvalid, len(send), p, len(recv), p*len(recv)))
	}
	return nil
}

// reduceScatter runs the chosen algorithm and finishes the op (Avg
// divides).
func (k *call[T]) reduceScatter(send, recv []T) error {
	var err error
	switch k.me.Algorithm {
	case Ring:
		err = reduceScatterRing(k, send, recv)
	case Shm:
		err = reduceScatterShm(k, send, recv)
	default: // RecursiveHalving
		err = reduceScatterRecursive(k, send, recv)
	}
	if err != nil {
		return err
	}
	kernel.Finish(k.op, recv, k.c.Size())
	return nil
}

// reduceScatterRing is the reduce-scatter half of the ring allreduce: in
// step s a rank sends the partial sum of block me-s-1 to the right and
// receives that of block me-s-2 from the left, adding its own
// contribution before passing it on; after p-1 steps the block received
// is its own, complete. Partial sums alternate between two scratch
// blocks, the last one lands in recv. The order in which a block's
// contributions combine depends on the block, so the op must be
// commutative (choose refuses Ring otherwise).
func reduceScatterRing[T codec.Elem](k *call[T], send, recv []T) error {
	p, me, m := k.c.Size(), k.c.Rank(), len(recv)
	if p == 1 {
		copy(recv, send)
		return nil
	}
	right, left := (me+1)%p, (me+p-1)%p
	a, ab := scratch[T](m)
	defer ab.release()
	b, bb := scratch[T](m)
	defer bb.release()
	sb := (me + p - 1) % p
	cur := send[sb*m : (sb+1)*m]
	for s := range p - 1 {
		rb := (sb + p - 1) % p
		dst := a
		switch {
		case s == p-2:
			dst = recv
		case s%2 == 1:
			dst = b
		}
		if err := k.sendRecv(right, s, cur, sb*m, left, s, dst, rb*m); err != nil {
			return err
		}
		if err := k.reduce(dst, send[rb*m:(rb+1)*m], true); err != nil {
			return err
		}
		sb, cur = rb, dst
	}
	return nil
}

// reduceScatterRecursive runs reduceScatterHalving from send into a
// scratch buffer, and then moves every complete block from
// the rank that holds it to the rank it belongs to: nothing moves when p
// is a power of two and the op is commutative, block 2i moves from rank
// 2i+1 to rank 2i for the ranks removed by the fold, and with a
// non-commutative op most blocks move (see halving).
func reduceScatterRecursive[T codec.Elem](k *call[T], send, recv []T) error {
	me, m := k.c.Rank(), len(recv)
	work, wb := scratch[T](len(send))
	defer wb.release()
	if _, _, err := reduceScatterHalving(k, send, work, 0); err != nil {
		return err
	}
	g := newHalving(k)
	step := halvingSteps
	from := g.owner(me)
	var in inbound
	defer in.withdraw()
	if from != me {
		var err error
		if in, err = k.irecv(from, step, recv); err != nil {
			return err
		}
	}
	first, last := g.owned(me)
	for i := first; i < last; i++ {
		if i == me {
			copy(recv, work[i*m:(i+1)*m])
			continue
		}
		if err := k.send(i, step, work[i*m:(i+1)*m], i*m); err != nil {
			return err
		}
	}
	if from == me {
		return nil
	}
	return k.await(&in, from, recv, me*m)
}

// reduceScatterHalving is recursive halving: from holds this rank's n =
// len(buf) elements, seen as p blocks block(n, p, i); on return
// buf[lo:hi] holds the blocks this rank owns, each combined over
// all p ranks (without Finish: Avg is still a sum). Every rank must pass
// the same n. It is correct for any p >= 1 and any n, also n < p (empty
// blocks still exchange empty messages).
//
// The fold: with pof2 the largest power of two <= p and rem = p - pof2,
// each even rank r < 2·rem sends all of buf to r+1 and is done: it
// returns lo == hi == 0, owns nothing, and buf is left as it was. The odd
// rank r+1 combines it into its own (r's data on the left) and stands for
// both from then on. The pof2 remaining ranks are numbered v = r/2 for
// odd r < 2·rem and v = r-rem for r >= 2·rem, in rank order, and the p
// blocks are grouped the same way into pof2 virtual blocks: virtual block
// b is blocks {2b, 2b+1} for b < rem and block b+rem otherwise.
//
// Ownership: in lg(pof2) steps the ranks halve the range of virtual
// blocks they work on and exchange the other half with a partner. Which
// virtual block rank v ends with depends on the op:
//   - a commutative op (or none): virtual block v, which is the rank's
//     own block r, or blocks 2v and 2v+1 for the odd survivor r = 2v+1
//     of a fold. Partners are at distance pof2/2 first, as in MPICH.
//   - a non-commutative op: virtual block bitreverse(v) (v's lg(pof2)
//     bits reversed). Partners are at distance 1 first, so that each step
//     combines two adjacent ranges of ranks, lower ∘ upper, and rank order
//     holds; splitting the range in halves the same way then leaves the
//     blocks in bit-reversed order.
//
// lo and hi are element positions: block(n, p, f) start and block(n, p,
// l) start of the owned blocks [f, l) (see halving.owned). Every block
// is combined on exactly one rank, so the ranks that later copy it hold
// the same bits. Blocks are cut at any element, as codec.NewOp allows.
// Steps: step0 for the fold, step0+1+j for the j-th halving exchange, all
// below step0+halvingSteps.
//
// This rank's data are in from, which is buf itself or a send buffer
// that is only read: the first exchange sends its half from from and
// receives the partner's half of the rest straight into buf, where it is
// combined with from's, so that from is never copied whole. Only the
// owned range of buf holds the result; the rest of it is scratch.
func reduceScatterHalving[T codec.Elem](k *call[T], from, buf []T, step0 int) (lo, hi int, err error) {
	me, n := k.c.Rank(), len(buf)
	g := newHalving(k)
	if me < 2*g.rem {
		if me%2 == 0 {
			return 0, 0, k.send(me+1, step0, from, 0)
		}
		if err := k.recvReduce(me-1, step0, buf, from, 0, false); err != nil {
			return 0, 0, err
		}
		from = buf
	}
	v := g.virtual(me)
	role := g.role(v)
	wlo, whi := 0, g.pof2 // the virtual blocks this rank still works on
	if g.lg > 0 {
		mid := g.pof2 / 2
		half := max(g.start(n, mid), n-g.start(n, mid))
		var tmp []T
		var tb scratchBuf
		if sameSlice(from, buf) || g.lg > 1 {
			tmp, tb = scratch[T](half)
		}
		defer tb.release()
		for j := range g.lg {
			mid := (wlo + whi) / 2
			klo, khi, slo, shi := wlo, mid, mid, whi // keep the lower half, send the upper
			if role&(1<<j) != 0 {
				klo, khi, slo, shi = mid, whi, wlo, mid
			}
			pv := g.fromRole(role ^ 1<<j)
			peer := g.real(pv)
			ka, kb := g.start(n, klo), g.start(n, khi)
			sa, sb := g.start(n, slo), g.start(n, shi)
			got := buf[ka:kb]
			if sameSlice(from, buf) {
				got = tmp[:kb-ka]
			}
			if err := k.sendRecvReduce(peer, step0+1+j, from[sa:sb], sa, buf[ka:kb], from[ka:kb], got, ka, pv > v); err != nil {
				return 0, 0, err
			}
			wlo, whi = klo, khi
			from = buf
		}
	}
	lo, hi = g.start(n, wlo), g.start(n, whi)
	copyApart(buf[lo:hi], from[lo:hi]) // with no exchange at all (p == 1)
	return lo, hi, nil
}

// halvingSteps bounds the step numbers that reduceScatterHalving and
// allgatherDoubling take from their step0: a fold plus at most 63
// exchanges.
const halvingSteps = 64

// halving is the geometry that recursive halving and doubling share: the
// fold of a rank count that is not a power of two, the virtual ranks and
// blocks, and who partners with whom. See reduceScatterHalving.
type halving struct {
	p, pof2, rem, lg int
	// ordered: combine in rank order, with partners at distance 1
	// first, because the op is not commutative.
	ordered bool
}

func newHalving[T codec.Elem](k *call[T]) halving {
	p := k.c.Size()
	lg := bits.Len(uint(p)) - 1
	return halving{p: p, pof2: 1 << lg, rem: p - 1<<lg, lg: lg,
		ordered: kernel.ID(k.op) != ops.None && !k.op.Commutative()}
}

// virtual is real rank r's number among the pof2 ranks that remain after
// the fold, or -1 if the fold removes it.
func (g halving) virtual(r int) int {
	if r < 2*g.rem {
		if r%2 == 0 {
			return -1
		}
		return r / 2
	}
	return r - g.rem
}

// real is the real rank of virtual rank v.
func (g halving) real(v int) int {
	if v < g.rem {
		return 2*v + 1
	}
	return v + g.rem
}

// first is the first real block of virtual block b; first(pof2) == p.
func (g halving) first(b int) int {
	if b < g.rem {
		return 2 * b
	}
	return b + g.rem
}

// start is the element position of virtual block b in a buffer of n.
func (g halving) start(n, b int) int {
	s, _ := block(n, g.p, g.first(b))
	return s
}

func (g halving) reverse(x int) int {
	return int(bits.Reverse(uint(x)) >> (bits.UintSize - g.lg))
}

// role is the position of virtual rank v in the exchange pattern: its
// bit j says which half it keeps in halving step j, and its partner in
// that step has the role with bit j flipped. The natural order gives
// partners at distance 1 first (ordered); the bit-reversed one partners
// at distance pof2/2 first and makes v own virtual block v.
func (g halving) role(v int) int {
	if g.ordered {
		return v
	}
	return g.reverse(v)
}

// fromRole is the virtual rank of a role (role is its own inverse).
func (g halving) fromRole(r int) int { return g.role(r) }

// vblock is the virtual block that virtual rank v owns after halving:
// halving step j picks the half by role bit j, most significant block
// bit first, so the block is the role reversed.
func (g halving) vblock(v int) int { return g.reverse(g.role(v)) }

// owned is the range [first, last) of real blocks that real rank r owns
// after halving; empty (r, r) for a rank removed by the fold.
func (g halving) owned(r int) (first, last int) {
	v := g.virtual(r)
	if v < 0 {
		return r, r
	}
	b := g.vblock(v)
	return g.first(b), g.first(b + 1)
}

// owner is the real rank that owns real block i after halving.
func (g halving) owner(i int) int {
	b := i - g.rem
	if i < 2*g.rem {
		b = i / 2
	}
	// vblock(v) == b; vblock is reverse∘role, both involutions.
	return g.real(g.fromRole(g.reverse(b)))
}
