package collective

import (
	"context"
	"fmt"
	"slices"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/wire"
)

// Allgather collects every rank's send into every rank's recv, in rank
// order: recv holds Size()·len(send) elements, rank i's at
// recv[i·len(send):]. send may be recv's own block (recv[Rank()·len(send):
// (Rank()+1)·len(send)]), which MPI calls in place; it must not overlap
// recv otherwise. Algorithms: Bruck (lg p steps; the default below 64 KiB
// in total), Ring (p-1 steps, each byte sent once; the default above) and
// RecursiveDoubling (lg p steps, plus two for a rank count that is not a
// power of two; the default for a power of two below 512 KiB, and at
// every size where all ranks run on one host).
func Allgather[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, opts ...Option) error {
	return allgather(ctx, c, send, recv, false, opts)
}

// allgather is Allgather; with ownUnused, whose caller never reads this
// rank's part of recv, that part is left as it was where the call goes
// through the segment.
func allgather[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, ownUnused bool, opts []Option) (err error) {
	var k call[T]
	if err = prepareAllgather(&k, ctx, c, send, recv, opts); err != nil {
		return err
	}
	k.ownUnused = ownUnused
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	return k.allgather(send, recv)
}

// prepareAllgather prepares k as an Allgather from send into recv and
// checks their lengths: what Allgather and AllgatherAsync check before
// they start.
func prepareAllgather[T codec.Elem](k *call[T], ctx context.Context, c *comm.Comm, send, recv []T, opts []Option) error {
	p := commSize(c)
	if err := prepare(k, ctx, c, wire.KindAllgather, codec.Op{}, p*len(send), -1, opts); err != nil {
		return err
	}
	if len(recv) != p*len(send) {
		return k.invalid(fmt.Errorf("%w: recv has %d elements, want Size()·len(send) = %d·%d = %d",
			codec.ErrInvalid, len(recv), p, len(send), p*len(send)))
	}
	return nil
}

// allgather runs the chosen algorithm.
func (k *call[T]) allgather(send, recv []T) error {
	switch k.me.Algorithm {
	case Ring:
		return allgatherRing(k, send, recv)
	case RecursiveDoubling:
		return allgatherRecursive(k, send, recv)
	case Shm:
		return gatherShm(k, send, recv, -1)
	}
	return allgatherBruck(k, send, recv)
}

// allgatherRing passes blocks around the ring: in step s every rank sends
// the block it received in step s-1 (its own first) to the right and
// receives the next one from the left. Offsets on the wire are element
// positions in recv.
func allgatherRing[T codec.Elem](k *call[T], send, recv []T) error {
	p, me, m := k.c.Size(), k.c.Rank(), len(send)
	copy(recv[me*m:(me+1)*m], send)
	right, left := (me+1)%p, (me+p-1)%p
	for s := range p - 1 {
		sb, rb := (me-s+p)%p, (me-s-1+p)%p
		if err := k.sendRecv(right, s, recv[sb*m:(sb+1)*m], sb*m, left, s, recv[rb*m:(rb+1)*m], rb*m); err != nil {
			return err
		}
	}
	return nil
}

// allgatherBruck is Bruck's algorithm: ceil(lg p) steps for any p. recv
// is used in an order rotated by this rank, so that position j holds the
// block of rank me+j (mod p): in the step with distance d, a rank sends
// its first min(d, p-d) blocks to rank me-d and appends those of rank
// me+d behind its own d. A final local rotation puts the blocks in rank
// order. The offset on the wire is where the blocks land in the
// receiver's rotated recv, d·m: a position in the final recv would wrap
// around the end for the ranks near p-1.
func allgatherBruck[T codec.Elem](k *call[T], send, recv []T) error {
	p, me, m := k.c.Size(), k.c.Rank(), len(send)
	copy(recv[:m], send) // copy is memmove, so send may be recv's own block
	step := 0
	for d := 1; d < p; d <<= 1 {
		blocks := min(d, p-d)
		to, from := (me-d+p)%p, (me+d)%p
		if err := k.sendRecv(to, step, recv[:blocks*m], d*m, from, step, recv[d*m:(d+blocks)*m], d*m); err != nil {
			return err
		}
		step++
	}
	// Rotate right by me blocks, in place: position j moves to me+j.
	if shift := me * m; shift > 0 {
		slices.Reverse(recv)
		slices.Reverse(recv[:shift])
		slices.Reverse(recv[shift:])
	}
	return nil
}

// allgatherRecursive is recursive doubling. With p a power of two it is
// allgatherDoubling alone. Otherwise the first 2·rem ranks (rem = p -
// pof2) fold first, as allreduce's recursive doubling does: each even
// rank hands its block to the odd rank above it, which then stands for
// both in the doubling, and gets the whole result back from it at the
// end (MPICH instead patches the missing blocks in along a tree; the fold
// costs two messages more but keeps every exchange contiguous).
func allgatherRecursive[T codec.Elem](k *call[T], send, recv []T) error {
	me, m := k.c.Rank(), len(send)
	copy(recv[me*m:(me+1)*m], send)
	g := newHalving(k)
	if me < 2*g.rem {
		if me%2 == 0 {
			if err := k.send(me+1, 0, recv[me*m:(me+1)*m], me*m); err != nil {
				return err
			}
		} else if err := k.recv(me-1, 0, recv[(me-1)*m:me*m], (me-1)*m); err != nil {
			return err
		}
	}
	lo, hi := g.owned(me)
	return allgatherDoubling(k, recv, lo*m, hi*m, 1)
}

// allgatherDoubling is the inverse of reduceScatterHalving: on entry each
// rank that survived the fold holds buf[lo:hi], the range that
// reduceScatterHalving with the same k and len(buf) left it (see there);
// on return every rank, including the ranks removed by the fold, holds
// all of buf. Ranks exchange what they hold with the partners of the
// halving in the opposite order, doubling the range each step, and
// finally every odd rank below 2·rem hands all of buf to the even rank
// below it. Data is copied, never combined, so all ranks end with the
// same bits. A removed rank's lo and hi are ignored. A surviving rank's
// lo and hi are checked against its ownership, as a guard against
// passing buffers of different lengths to the two halves. It uses the
// step numbers [step0, step0+halvingSteps), like reduceScatterHalving;
// give the two different step0 when they run in one call (Rabenseifner's
// allreduce: 0 and halvingSteps).
func allgatherDoubling[T codec.Elem](k *call[T], buf []T, lo, hi int, step0 int) error {
	me, n := k.c.Rank(), len(buf)
	g := newHalving(k)
	v := g.virtual(me)
	if v < 0 {
		return k.recv(me+1, step0, buf, 0)
	}
	role := g.role(v)
	wlo := g.vblock(v)
	whi := wlo + 1
	if a, b := g.start(n, wlo), g.start(n, whi); a != lo || b != hi {
		// A bug in the caller, not in the user's arguments; abort all the
		// same, so that the partners do not wait for this rank.
		err := k.wrap(-1, fmt.Errorf("allgatherDoubling: rank %d was given buf[%d:%d], but owns buf[%d:%d] of %d elements", me, lo, hi, a, b, n))
		k.c.Abort(err)
		return err
	}
	for j := g.lg - 1; j >= 0; j-- {
		size := whi - wlo
		plo := wlo &^ (2*size - 1)
		olo, ohi := plo+size, plo+2*size // the partner's half of the parent window
		if role&(1<<j) != 0 {
			olo, ohi = plo, plo+size
		}
		peer := g.real(g.fromRole(role ^ 1<<j))
		a, b := g.start(n, wlo), g.start(n, whi)
		oa, ob := g.start(n, olo), g.start(n, ohi)
		if err := k.sendRecv(peer, step0+1+j, buf[a:b], a, peer, step0+1+j, buf[oa:ob], oa); err != nil {
			return err
		}
		wlo, whi = plo, plo+2*size
	}
	if me < 2*g.rem {
		return k.send(me-1, step0, buf, 0)
	}
	return nil
}

// Allgatherv is Allgather with a count per rank: rank i contributes
// counts[i] elements (len(send) must be counts[Rank()]), and recv, of
// sum(counts) elements, holds them in rank order without gaps. Every rank
// passes the same counts. Algorithms: Ring, and Shm (each rank's part
// once into the segment and once out, the default where the ranks share
// a host).
func Allgatherv[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, counts []int, opts ...Option) (err error) {
	total := 0
	for _, n := range counts {
		total += n
	}
	var k call[T]
	if err = prepare(&k, ctx, c, wire.KindAllgatherv, codec.Op{}, total, -1, opts); err != nil {
		return err
	}
	p, me := c.Size(), c.Rank()
	if len(counts) != p {
		return k.invalid(fmt.Errorf("%w: %d counts for %d ranks", codec.ErrInvalid, len(counts), p))
	}
	for i, n := range counts {
		if n < 0 {
			return k.invalid(fmt.Errorf("%w: counts[%d] is %d, negative", codec.ErrInvalid, i, n))
		}
	}
	if len(send) != counts[me] {
		return k.invalid(fmt.Errorf("%w: send has %d elements, want counts[%d] = %d", codec.ErrInvalid, len(send), me, counts[me]))
	}
	if len(recv) != total {
		return k.invalid(fmt.Errorf("%w: recv has %d elements, want sum(counts) = %d", codec.ErrInvalid, len(recv), total))
	}
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	if k.me.Algorithm == Shm {
		return allgathervShm(&k, send, recv, counts)
	}
	return allgathervRing(&k, send, recv, counts)
}

// allgathervRing is allgatherRing with blocks of different sizes. The
// blocks a rank sends and receives move one rank down each step, so their
// offsets are kept up to date by subtraction instead of summing counts
// each step.
func allgathervRing[T codec.Elem](k *call[T], send, recv []T, counts []int) error {
	p, me := k.c.Size(), k.c.Rank()
	off := 0
	for _, n := range counts[:me] {
		off += n
	}
	copy(recv[off:off+counts[me]], send)
	right, left := (me+1)%p, (me+p-1)%p
	sb, soff := me, off // the block sent this step and its offset
	for s := range p - 1 {
		rb := (sb + p - 1) % p
		roff := soff - counts[rb]
		if rb == p-1 {
			roff = len(recv) - counts[rb]
		}
		if err := k.sendRecv(right, s, recv[soff:soff+counts[sb]], soff, left, s, recv[roff:roff+counts[rb]], roff); err != nil {
			return err
		}
		sb, soff = rb, roff
	}
	return nil
}
