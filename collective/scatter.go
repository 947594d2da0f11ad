package collective

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/wire"
)

// Scatter sends block r of root's send, send[r*len(recv):(r+1)*len(recv)],
// to rank r's recv. At root send must hold Size()*len(recv) elements; it
// is ignored on the other ranks and may be nil there. Every rank must
// receive the same number of elements. Algorithms: Tree (binomial tree,
// lg p steps, ranks with children pass their subtree's blocks on; the
// default for small buffers) and Linear (root sends to every rank in
// turn; the default for large ones) and Shm (root copies each rank's
// block into the segment once and the rank copies it out once, or, with
// registered buffers, each rank copies its block out of root's send; the
// default where the ranks share a host).
func Scatter[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, root int, opts ...Option) (err error) {
	p := commSize(c)
	var k call[T]
	if err = prepare(&k, ctx, c, wire.KindScatter, codec.Op{}, p*len(recv), root, opts); err != nil {
		return err
	}
	me := c.Rank()
	if me == root && len(send) != p*len(recv) {
		return k.invalid(fmt.Errorf("%w: send has %d elements at root %d; it needs %d (%d ranks × %d elements received)",
			codec.ErrInvalid, len(send), root, p*len(recv), p, len(recv)))
	}
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	switch k.me.Algorithm {
	case Linear:
		return scatterLinear(&k, send, recv, root)
	case Shm:
		return scatterShm(&k, send, recv, root)
	}
	return scatterTree(&k, send, recv, root)
}

// Scatterv sends counts[r] elements of root's send to rank r's recv: the
// ones at send[counts[0]+…+counts[r-1]:]. As in MPI, only root needs
// counts: root passes one per rank, and send must hold at least their sum
// there. The other ranks may pass nil counts (their send is ignored and
// may be nil too); each receives len(recv) elements, which must be root's
// count for it. A rank that passes counts anyway must pass one per rank,
// with counts[Rank()] == len(recv); root's count for every other rank is
// root's alone. A rank whose len(recv) differs from root's count for it
// fails with ErrMismatch, and so does root, naming the rank and both
// counts (without receipts, WithReceipts(false), root may instead return
// nil and fail in its next call). Algorithms: Linear, and Shm (each part
// once into the segment and once out; the default where the ranks share
// a host, where every rank that disagrees fails inside the call whatever
// the receipts).
func Scatterv[T codec.Elem](ctx context.Context, c *comm.Comm, send []T, counts []int, recv []T, root int, opts ...Option) (err error) {
	var k call[T]
	if err = prepare(&k, ctx, c, wire.KindScatterv, codec.Op{}, 0, root, opts); err != nil {
		return err
	}
	p, me := c.Size(), c.Rank()
	total, err := checkCounts(counts, p, me, root, len(recv), "recv")
	if err != nil {
		return k.invalid(err)
	}
	if me == root && len(send) < total {
		return k.invalid(fmt.Errorf("%w: send has %d elements at root %d; the counts add up to %d",
			codec.ErrInvalid, len(send), root, total))
	}
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	if k.me.Algorithm == Shm {
		return scattervShm(&k, send, counts, recv, root)
	}
	if me != root {
		in, err := k.irecv(root, 0, recv)
		if err != nil {
			return err
		}
		if err := k.ackCount(root, len(recv)); err != nil {
			in.withdraw()
			return err
		}
		return k.awaitPart(&in, root, recv)
	}
	off := 0
	for r, m := range counts {
		if r != root {
			if err := k.sendPart(r, send[off:off+m]); err != nil {
				return err
			}
		}
		off += m
	}
	at := countsBefore(counts, root)
	copy(recv, send[at:at+len(recv)])
	for r, m := range counts {
		if r != root {
			if err := k.awaitPartAck(r, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// scatterLinear: root sends each rank its block in turn; the others
// receive straight into recv.
func scatterLinear[T codec.Elem](k *call[T], send, recv []T, root int) error {
	p, me, m := k.c.Size(), k.c.Rank(), len(recv)
	if me != root {
		if err := k.ack(root); err != nil {
			return err
		}
		return k.recv(root, 0, recv, me*m)
	}
	for r := range p {
		if r != root {
			if err := k.send(r, 0, send[r*m:(r+1)*m], r*m); err != nil {
				return err
			}
		}
	}
	copy(recv, send[root*m:(root+1)*m])
	return awaitAcks(k, root)
}

// awaitAcks awaits the acknowledgement (ack) of every rank but root, the
// rank that sent to all of them and received nothing.
func awaitAcks[T codec.Elem](k *call[T], root int) error {
	for r := range k.c.Size() {
		if r != root {
			if err := k.awaitAck(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// scatterTree scatters down a binomial tree over virtual ranks v = rank -
// root mod p: v heads the subtree of virtual ranks [v, v+size), receives
// their blocks from its parent, and sends each child its subtree's
// blocks, farthest child first, so that the largest subtree starts
// soonest. Root sends from send, where blocks are in real-rank order; a
// rank with children receives its range into scratch, in virtual-rank
// order; a leaf receives straight into recv. A range that wraps past rank
// p-1 travels as two messages (rankRuns), each one contiguous run of
// root's send, with its offset there.
func scatterTree[T codec.Elem](k *call[T], send, recv []T, root int) error {
	p, me, m := k.c.Size(), k.c.Rank(), len(recv)
	v := (me - root + p) % p
	size := p
	if v != 0 {
		size = min(v&-v, p-v)
	}

	// acc holds the blocks of virtual ranks [v, v+size), laid out as
	// subtreeAt says.
	acc := send
	var sb scratchBuf
	if v != 0 {
		acc = recv
		if size > 1 {
			acc, sb = scratch[T](size * m)
		}
		mask := v & -v
		from := (v - mask + root) % p
		step := 2 * bits.TrailingZeros(uint(mask))
		a0, a1, b1 := rankRuns(p, root, v, v+size)
		lo := subtreeAt(p, root, v, a0, m)
		var err error
		if v == mask {
			err = k.ack(root) // root's child: root hears from nobody else
		}
		if err == nil {
			err = k.recv(from, step, acc[lo:lo+(a1-a0)*m], a0*m)
		}
		if err == nil && b1 > 0 {
			lo = subtreeAt(p, root, v, 0, m)
			err = k.recv(from, step+1, acc[lo:lo+b1*m], 0)
		}
		if err != nil {
			sb.release()
			return err
		}
	}
	err := scatterTreeDown(k, acc, v, size, root, m)
	for mask := 1; err == nil && v == 0 && mask < p; mask <<= 1 {
		err = k.awaitAck((mask + root) % p)
	}
	if err == nil {
		lo := subtreeAt(p, root, v, me, m)
		copy(recv, acc[lo:lo+m])
	}
	sb.release()
	return err
}

// scatterTreeDown sends each child of virtual rank v its subtree's
// blocks of m elements from acc, farthest child first.
func scatterTreeDown[T codec.Elem](k *call[T], acc []T, v, size, root, m int) error {
	if size < 2 {
		return nil // a leaf
	}
	p := k.c.Size()
	for mask := 1 << (bits.Len(uint(size-1)) - 1); mask > 0; mask >>= 1 {
		child := v + mask
		to := (child + root) % p
		step := 2 * bits.TrailingZeros(uint(mask))
		a0, a1, b1 := rankRuns(p, root, child, min(child+mask, p))
		lo := subtreeAt(p, root, v, a0, m)
		if err := k.send(to, step, acc[lo:lo+(a1-a0)*m], a0*m); err != nil {
			return err
		}
		if b1 > 0 {
			lo = subtreeAt(p, root, v, 0, m)
			if err := k.send(to, step+1, acc[lo:lo+b1*m], 0); err != nil {
				return err
			}
		}
	}
	return nil
}
