package collective

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/wire"
)

// Gather collects send of every rank, in rank order, into root's recv,
// which must hold Size()*len(send) elements; recv is ignored on the other
// ranks and may be nil there. Every rank must send the same number of
// elements. Algorithms: Tree (binomial tree, lg p steps, ranks with
// children forward their subtree's data; the default for small buffers)
// and Linear (root receives from every rank at once; the default for
// large ones, where the tree's forwarding costs more than its fewer
// messages save, and for every size with at most 4 ranks, where one hop
// beats lg p).
func Gather[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, root int, opts ...Option) (err error) {
	p := commSize(c)
	var k call[T]
	if err = prepare(&k, ctx, c, wire.KindGather, codec.Op{}, p*len(send), root, opts); err != nil {
		return err
	}
	me := c.Rank()
	if me == root && len(recv) != p*len(send) {
		return k.invalid(fmt.Errorf("%w: recv has %d elements at root %d; it needs %d (%d ranks × %d elements sent)",
			codec.ErrInvalid, len(recv), root, p*len(send), p, len(send)))
	}
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	switch k.me.Algorithm {
	case Linear:
		return gatherLinear(&k, send, recv, root)
	case Shm:
		return gatherShm(&k, send, recv, root)
	}
	return gatherTree(&k, send, recv, root)
}

// Gatherv collects send of every rank, in rank order, into root's recv:
// rank i sends counts[i] elements, which land at
// recv[counts[0]+…+counts[i-1]:]. As in MPI, only root needs counts: root
// passes one per rank, and recv must hold at least their sum. The other
// ranks may pass nil counts (their recv is ignored and may be nil too);
// each sends len(send) elements, which must be root's count for it. A
// rank that passes counts anyway must pass one per rank, with
// counts[Rank()] == len(send); root's count for every other rank is
// root's alone. A rank whose len(send) differs from root's count for it
// fails with ErrMismatch, and so does root, naming the rank and both
// counts (without receipts, WithReceipts(false), such a rank may instead
// return nil and fail in its next call). Algorithms: Linear, and Shm
// (each part once into the segment and once out; the default where the
// ranks share a host, where every rank that disagrees fails inside the
// call whatever the receipts).
func Gatherv[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, counts []int, root int, opts ...Option) (err error) {
	var k call[T]
	if err = prepare(&k, ctx, c, wire.KindGatherv, codec.Op{}, 0, root, opts); err != nil {
		return err
	}
	me := c.Rank()
	total, err := checkCounts(counts, c.Size(), me, root, len(send), "send")
	if err != nil {
		return k.invalid(err)
	}
	if me == root && len(recv) < total {
		return k.invalid(fmt.Errorf("%w: recv has %d elements at root %d; the counts add up to %d",
			codec.ErrInvalid, len(recv), root, total))
	}
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	if k.me.Algorithm == Shm {
		return gathervShm(&k, send, recv, counts, root)
	}
	if me != root {
		if err := k.sendPart(root, send); err != nil {
			return err
		}
		return k.awaitPartAck(root, len(send))
	}
	batch := getRecvBatch()
	defer batch.release()
	off := 0
	for r, m := range counts {
		if r != root {
			if err := postRecv(&k, batch, r, 0, recv, off, off+m, 0); err != nil {
				return err
			}
		}
		off += m
	}
	for r, m := range counts {
		if r != root {
			if err := k.ackCount(r, m); err != nil {
				return err
			}
		}
	}
	at := countsBefore(counts, root)
	copy(recv[at:at+len(send)], send)
	for i := range batch.recvs {
		b := &batch.recvs[i]
		if err := k.awaitPart(&b.in, b.peer, recv[b.lo:b.hi]); err != nil {
			return err
		}
	}
	return nil
}

// gatherLinear: every rank sends straight to root, which has posted all
// its receives first, so data lands in recv as it arrives from any rank.
func gatherLinear[T codec.Elem](k *call[T], send, recv []T, root int) error {
	p, me, m := k.c.Size(), k.c.Rank(), len(send)
	if me != root {
		if err := k.send(root, 0, send, me*m); err != nil {
			return err
		}
		return k.awaitAck(root)
	}
	batch := getRecvBatch()
	defer batch.release()
	for r := range p {
		if r != root {
			if err := postRecv(k, batch, r, 0, recv, r*m, (r+1)*m, r*m); err != nil {
				return err
			}
		}
	}
	copy(recv[root*m:(root+1)*m], send)
	return ackThenWait(k, batch, recv, true)
}

// gatherTree gathers up a binomial tree over virtual ranks v = rank -
// root mod p: v heads the subtree of virtual ranks [v, v+size), receives
// each child's subtree (posting all its children's receives at once),
// and sends the whole range to its parent. A rank with children collects
// its range in scratch, in virtual-rank order; root collects straight
// into recv. A range that wraps past rank p-1 travels as two messages
// (rankRuns), so that each carries one contiguous run of root's recv and
// says where in it with its offset. A leaf sends its own send.
func gatherTree[T codec.Elem](k *call[T], send, recv []T, root int) error {
	p, me, m := k.c.Size(), k.c.Rank(), len(send)
	v := (me - root + p) % p
	size := p
	if v != 0 {
		size = min(v&-v, p-v)
	}

	// acc holds the data of virtual ranks [v, v+size), in that order.
	acc := recv
	var sb scratchBuf
	if v != 0 {
		if size > 1 {
			acc, sb = scratch[T](size * m)
			copy(acc, send)
		} else {
			acc = send
		}
	}
	defer sb.release()

	batch := getRecvBatch()
	defer batch.release()
	for mask := 1; mask < size; mask <<= 1 {
		child := v + mask
		from := (child + root) % p
		step := 2 * bits.TrailingZeros(uint(mask))
		a0, a1, b1 := rankRuns(p, root, child, min(child+mask, p))
		lo := subtreeAt(p, root, v, a0, m)
		if err := postRecv(k, batch, from, step, acc, lo, lo+(a1-a0)*m, a0*m); err != nil {
			return err
		}
		if b1 > 0 {
			lo = subtreeAt(p, root, v, 0, m)
			if err := postRecv(k, batch, from, step+1, acc, lo, lo+b1*m, 0); err != nil {
				return err
			}
		}
	}
	if v == 0 {
		copy(recv[root*m:(root+1)*m], send)
	}
	// A leaf child receives nothing: acknowledge it.
	if err := ackThenWait(k, batch, acc, false); err != nil {
		return err
	}
	if v == 0 {
		return nil
	}
	mask := v & -v
	to := (v - mask + root) % p
	step := 2 * bits.TrailingZeros(uint(mask))
	a0, a1, b1 := rankRuns(p, root, v, v+size)
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
	if size == 1 {
		return k.awaitAck(to)
	}
	return nil
}

// subtreeAt is where real rank r's m elements start in the buffer of
// virtual rank v's subtree: root's is its recv, in real-rank order; any
// other's is in virtual-rank order from v.
func subtreeAt(p, root, v, r, m int) int {
	if v == 0 {
		return r * m
	}
	return ((r-root+p)%p - v) * m
}

// recvBatch is a set of receives in flight into one buffer, waited for
// together. Batches are pooled, so that a rank that posts p receives per
// call allocates nothing once the pool is warm.
type recvBatch struct {
	recvs []postedRecv
}

type postedRecv struct {
	in          inbound
	peer        int
	lo, hi, off int // the destination buf[lo:hi] and its wire offset
}

var recvBatches = sync.Pool{New: func() any { return new(recvBatch) }}

func getRecvBatch() *recvBatch { return recvBatches.Get().(*recvBatch) }

// release withdraws the receives still posted and returns the batch to
// the pool.
func (b *recvBatch) release() {
	for i := range b.recvs {
		b.recvs[i].in.withdraw()
		b.recvs[i] = postedRecv{}
	}
	b.recvs = b.recvs[:0]
	recvBatches.Put(b)
}

// postRecv posts the receive of step step from peer into buf[lo:hi],
// whose wire offset is off.
func postRecv[T codec.Elem](k *call[T], b *recvBatch, peer, step int, buf []T, lo, hi, off int) error {
	in, err := k.irecv(peer, step, buf[lo:hi])
	if err != nil {
		return err
	}
	b.recvs = append(b.recvs, postedRecv{in: in, peer: peer, lo: lo, hi: hi, off: off})
	return nil
}

// waitRecvs waits for every receive of the batch, in the order posted,
// and checks each against this rank's call. The batch's buf must be the
// one the receives were posted into.
func waitRecvs[T codec.Elem](k *call[T], b *recvBatch, buf []T) error {
	for i := range b.recvs {
		r := &b.recvs[i]
		if err := k.await(&r.in, r.peer, buf[r.lo:r.hi], r.off); err != nil {
			return err
		}
	}
	return nil
}

// ackThenWait acknowledges (ack) the senders of the batch that receive
// nothing in the call, every one with all, else the leaves of Gather's
// tree, and then waits for the batch (waitRecvs).
func ackThenWait[T codec.Elem](k *call[T], b *recvBatch, buf []T, all bool) error {
	p, root := k.c.Size(), k.me.Root
	for i := range b.recvs {
		peer := b.recvs[i].peer
		if i > 0 && peer == b.recvs[i-1].peer {
			continue // the second message of one sender
		}
		if all || treeLeaf((peer-root+p)%p, p) {
			if err := k.ack(peer); err != nil {
				return err
			}
		}
	}
	return waitRecvs(k, b, buf)
}

// commSize is c's size, or 0 for a nil communicator, which begin then
// refuses.
func commSize(c *comm.Comm) int {
	if c == nil {
		return 0
	}
	return c.Size()
}

// countsBefore is where rank r's elements start: the sum of the counts
// of the ranks before it.
func countsBefore(counts []int, r int) int {
	off := 0
	for _, n := range counts[:r] {
		off += n
	}
	return off
}

// checkCounts validates the counts of a rooted v-collective (Gatherv,
// Scatterv) on rank me of p, whose own buffer (named what) has mine
// elements, and returns their sum. Root must pass one count per rank;
// the others may pass none (nil, or empty), and their sum is then 0.
func checkCounts(counts []int, p, me, root, mine int, what string) (int, error) {
	if len(counts) == 0 && me != root {
		return 0, nil
	}
	if len(counts) != p {
		if me == root {
			return 0, fmt.Errorf("%w: counts has %d entries at root %d, which needs one for each of %d ranks", codec.ErrInvalid, len(counts), root, p)
		}
		return 0, fmt.Errorf("%w: counts has %d entries for %d ranks on rank %d (only root needs counts: pass nil or one per rank)", codec.ErrInvalid, len(counts), p, me)
	}
	total := 0
	for r, n := range counts {
		if n < 0 {
			return 0, fmt.Errorf("%w: counts[%d] is %d; counts must not be negative", codec.ErrInvalid, r, n)
		}
		if n > math.MaxInt-total {
			return 0, fmt.Errorf("%w: counts add up to more than %d elements", codec.ErrInvalid, math.MaxInt)
		}
		total += n
	}
	if counts[me] != mine {
		return 0, fmt.Errorf("%w: %s has %d elements on rank %d but counts[%d] is %d",
			codec.ErrInvalid, what, mine, me, me, counts[me])
	}
	return total, nil
}

// The parts of Gatherv and Scatterv. Only root knows every rank's count,
// so their calls record none (wire.Kind.PartCounted), and each message
// carries the count of the part it is for, in its header's Count, with
// the part at offset 0: the receiver checks that count against its own,
// root against counts[r], any other rank against the length of its
// buffer. The receipts carry a count too: root's receipt for a Gatherv
// sender, which only sends, tells it root's counts[r], and the receipt of
// a Scatterv receiver tells root, which only sends, the length of its
// recv. So a rank whose count differs from root's fails in the call, and
// so does root, whichever of the two only sends.

// sendPart sends s, a whole part (this rank's of a Gatherv, peer's of a
// Scatterv), to peer.
func (k *call[T]) sendPart(peer int, s []T) error {
	payload, c, wb := k.encode(s)
	h := k.header(0, len(s), 0)
	h.Count, h.Codec, h.Length = uint64(len(s)), c, uint64(len(payload))
	err := k.sendPayload(peer, &h, payload)
	wb.release()
	return err
}

// awaitPartAck waits for peer's acknowledgement (ackCount) of a part that
// has n elements as this rank counts it.
func (k *call[T]) awaitPartAck(peer, n int) error {
	if k.me.NoReceipts {
		return nil
	}
	in, err := k.irecv(peer, ackStep, nil)
	if err != nil {
		return err
	}
	defer in.withdraw()
	_, _, err = k.arrivePart(&in, peer, nil, n)
	return err
}

// awaitPart is await for in, the receive of a part (sendPart) from peer
// into dst, whose length is the part's count as this rank counts it.
func (k *call[T]) awaitPart(in *inbound, peer int, dst []T) error {
	defer in.withdraw()
	n, h, err := k.arrivePart(in, peer, dst, len(dst))
	if err != nil {
		return err
	}
	if err := k.decodeArrived(in, n, h.Codec, dst); err != nil {
		return k.mismatch(peer, &h, fmt.Sprintf("its %s payload of %d bytes does not decode to the %d elements expected: %v",
			h.Codec, n, len(dst), err))
	}
	return nil
}

// arrivePart is arrive for a message of a part, or its receipt (dst nil),
// whose count is want as this rank counts it: a message of the same call
// that counts the part differently is a mismatch that names both counts,
// whatever its length.
func (k *call[T]) arrivePart(in *inbound, peer int, dst []T, want int) (int, wire.Header, error) {
	n, h, err := k.waitArrival(in, peer)
	if h.Call() == k.me && int(h.Count) != want && (err == nil || errors.As(err, new(*comm.TruncateError))) {
		return n, h, k.mismatch(peer, &h, k.partDiffers(peer, int(h.Count), want))
	}
	return n, h, k.check(peer, n, &h, len(dst), 0, err)
}

// partDiffers describes the disagreement over peer's part (root) or this
// rank's (any other rank), which this rank counts want elements and
// peer got.
func (k *call[T]) partDiffers(peer, got, want int) string {
	what, root, me := "send", k.me.Root, k.c.Rank()
	if k.me.Kind == wire.KindScatterv {
		what = "recv"
	}
	if me == root {
		return fmt.Sprintf("rank %d's %s has %d elements, but root %d's counts[%d] is %d", peer, what, got, root, peer, want)
	}
	return fmt.Sprintf("root %d's counts[%d] is %d, but rank %d's %s has %d elements", root, me, got, me, what, want)
}
