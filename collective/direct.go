package collective

import (
	"unsafe"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/wire"
)

// Direct algorithms: where every rank's buffers of a Shm call lie in
// memory from Alloc, each rank maps the others' (core.SegmentOp.Direct)
// and data moves straight between the buffers, once, instead of into the
// segment's slots and out again. Where they are ordinary Go memory, a
// Bcast, Gather, Allgather, Allgatherv, Scatter, Alltoall, Allreduce,
// Reduce or ReduceScatter can still copy once, each rank reading what it
// needs out of the others' buffers with process_vm_readv or writing into
// them with process_vm_writev, where the segment's SingleCopy chose so
// (core.SegmentOp.Single). Each ends with every rank that lent its
// buffers waiting until nobody reads or writes them any more.

// directChunk is how many bytes of its share a rank combines at once in
// a direct Allreduce: the partial result stays in the cache while the
// next rank's operand is added to it and while it is copied out.
const directChunk = 32 << 10

// singleChunk is directChunk for a single-copy Allreduce, Reduce or
// ReduceScatter, whose every chunk costs a process_vm_readv from each
// other rank (and an Allreduce's a process_vm_writev to each): larger
// chunks make fewer of those calls, each of which looks up and pins the
// other process's pages, while a chunk still stays in the second-level
// cache. Two ranks' Allreduces on the Intel host (2 MiB of L2 a core),
// six alternating runs, median of the pairs' time ratios against 32 KiB
// chunks: 128 KiB 0.69 / 0.76 / 0.81 at 256 KiB / 1 MiB / 2 MiB; 256
// KiB chunks as fast as 128, 512 KiB 1.10-1.19 times slower than 128
// (2026-11-30).
const singleChunk = 128 << 10

// directMin is the smallest call, in bytes of its count, that goes
// direct: below, a direct call's two waits and its mapping bookkeeping
// cost more than copying through the slots (two ranks, 8 B Allreduce:
// 7.6 µs direct against 3.6 through the slots).
const directMin = 16 << 10

// directMinCrowded is directMin for a rooted call but a Bcast (Gather,
// Scatter, Reduce) on a host whose ranks outnumber its CPUs. A direct
// call makes every rank wait until the others are done with its buffer,
// and where ranks share CPUs each such wait costs a turn of the
// scheduler; through the slots a rank that has put its data in leaves.
// Four ranks on two CPUs, 2026-11-26, µs through the slots against
// direct: Gather 5.5 / 8.7 at 64 KiB, 8.1 / 9.3 at 128 KiB, 9.9 / 9.5
// at 256 KiB. On a Zen 4 VM, 2026-11-29, three alternating runs, with
// Gathers that write into root's buffer: Gather 8.4 / 9.6 at 32 KiB,
// 10.7 / 10.2 at 64, 13.1 / 21.1 at 128; Scatter 7.7 / 18.7, 10.3 /
// 19.8, 15.1 / 12.0.
const directMinCrowded = 256 << 10

// directMinCrowdedBcast is directMinCrowded for a Bcast. Since a direct
// Bcast is split (bcastSplits) its root copies rather than waits, and
// from 32 KiB it beats the slots on a crowded host (four ranks on two
// CPUs of a Zen 4 VM, registered buffers, 2026-11-29, three alternating
// runs, µs through the slots / direct: 16 KiB 7.4 / 8.8, 32 KiB 10.0 /
// 8.1, 64 KiB 13.9 / 9.8, 128 KiB 22.0 / 12.8; three ranks: 7.4 / 7.1,
// 8.1 / 7.8, 10.1 / 9.6, 18.6 / 10.6). The 64 KiB figures of 2026-11-26
// that set directMinCrowded, 5.8 / 9.0, were of a Bcast not yet split.
const directMinCrowdedBcast = 32 << 10

// directFrom is the smallest call of kind, in bytes of its count, that
// goes direct; crowded is core.Segment.Crowded.
func directFrom(kind wire.Kind, crowded bool) int {
	switch {
	case !crowded || !rooted(kind):
		return directMin
	case kind == wire.KindBcast:
		return directMinCrowdedBcast
	}
	return directMinCrowded
}

// asBytes is s as bytes, in place.
func asBytes[T codec.Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// segBeginDirect starts the call's operation on s, in its turn, through
// the slots; where every rank's buffers, here a and b, are registered and
// the call is large enough, the operation can go direct (a and b nil for
// one that cannot), and where decider is a rank, that rank chooses
// whether it copies once out of ordinary buffers (-1 for one that
// cannot).
func (k *call[T]) segBeginDirect(op *core.SegmentOp, s *core.Segment, a, b []T, decider int) error {
	if k.me.Count*k.size < directFrom(k.me.Kind, s.Crowded()) {
		// The rank's call goes through the slots, and so every rank's.
		a, b, decider = nil, nil, -1
	}
	if k.me.Algorithm == Shm { // register took its number only
		if err := k.c.RecordCall(k.seq, k.me); err != nil {
			return k.wrap(-1, err)
		}
	}
	if err := s.Begin(op, k.ctx, k.ticket, k.seq, k.me, [2][]byte{asBytes(a), asBytes(b)}, decider); err != nil {
		return k.wrap(-1, err)
	}
	if k.beside {
		op.Beside()
	}
	op.Time(k.t.Timed())
	k.chooseCopy(s, k.me.Count*k.size)
	return nil
}

// chooseCopy lets s's Copier choose how the call's puts copy, for a call
// of size bytes, if that is large enough for the choice to matter.
func (k *call[T]) chooseCopy(s *core.Segment, size int) {
	if size >= shmem.CopierMin {
		k.copier, k.copySize = s.Copier(), size
		k.around = k.copier.Choose(int(k.me.Kind), size)
	}
}

// peers is how a direct algorithm reaches the ranks' buffers: mapped into
// this process (registered memory), or, for a single copy, through the
// kernel (process_vm_readv and process_vm_writev).
type peers struct {
	op     *core.SegmentOp
	mapped [][2][]byte // by rank, as Direct returns them; nil for a single copy
}

// segBegin starts the call's operation on s as segBeginDirect does and
// reports whether it goes direct, mapping the buffers of peer (or,
// with peer -1, everyone's), or copying once as decider chose. On
// success the caller ends the operation (endOp); on error it is over.
func (k *call[T]) segBegin(op *core.SegmentOp, s *core.Segment, a, b []T, peer, decider int) (peers, bool, error) {
	if err := k.segBeginDirect(op, s, a, b, decider); err != nil {
		return peers{}, false, err
	}
	bufs, direct, err := k.direct(op, peer)
	if err == nil && !direct {
		direct, err = op.Single()
		if err != nil {
			err = k.wrap(-1, err)
		}
	}
	if err != nil {
		k.endOp(op)
		return peers{}, false, err
	}
	return peers{op: op, mapped: bufs}, direct, nil
}

// read copies into dst the elements of rank r's buffer i from element
// off on.
func (k *call[T]) read(p peers, dst []T, r, i, off int) error {
	if p.mapped != nil {
		k.take(dst, segView[T](p.mapped[r][i])[off:])
		return nil
	}
	k.t.Mark()
	err := p.op.Read(r, i, off*k.size, asBytes(dst))
	k.t.Lap(core.PartCopy)
	if err != nil {
		return k.wrap(r, err)
	}
	k.t.Received += uint64(len(dst) * k.size)
	return nil
}

// write copies src into rank r's buffer i from element off on.
func (k *call[T]) write(p peers, src []T, r, i, off int) error {
	if p.mapped != nil {
		k.put(segView[T](p.mapped[r][i])[off:], src)
		return nil
	}
	k.t.Mark()
	err := p.op.Write(r, i, off*k.size, asBytes(src))
	k.t.Lap(core.PartCopy)
	if err != nil {
		return k.wrap(r, err)
	}
	k.t.Sent += uint64(len(src) * k.size)
	return nil
}

// length is the number of elements in rank r's buffer i.
func (k *call[T]) length(p peers, r, i int) (int, error) {
	if p.mapped != nil {
		return len(p.mapped[r][i]) / k.size, nil
	}
	n, err := p.op.BufferLen(r, i)
	if err != nil {
		return 0, k.wrap(r, err)
	}
	return n / k.size, nil
}

// direct reports whether the operation goes direct, and with which
// buffers: peer's, or with peer -1 everyone's (core.SegmentOp.Direct).
func (k *call[T]) direct(op *core.SegmentOp, peer int) ([][2][]byte, bool, error) {
	bufs, ok, err := op.Direct(peer)
	if err != nil {
		return nil, false, k.wrap(-1, err)
	}
	return bufs, ok, nil
}

// lent ends a direct operation for a rank whose buffers others use: it
// says its own work is done and waits for everyone's, after which nobody
// reads or writes its buffers.
func (k *call[T]) lent(op *core.SegmentOp) error {
	if _, err := op.Next(); err != nil {
		return k.wrap(-1, err)
	}
	return k.lentInRound(op)
}

// lentInRound is lent for an operation that has begun its one round.
func (k *call[T]) lentInRound(op *core.SegmentOp) error {
	op.Done()
	if err := op.WaitDone(); err != nil {
		return k.wrap(-1, err)
	}
	return nil
}

// used ends a direct operation for a rank whose buffers nobody uses: it
// says its work on the others' is done and goes, without waiting.
func (k *call[T]) used(op *core.SegmentOp) error {
	if _, err := op.Next(); err != nil {
		return k.wrap(-1, err)
	}
	op.Done()
	return nil
}

// allreduceDirect: rank me of the segment combines its share of the
// elements from every rank's send buffer, in rank order, into rank 0's
// receive buffer, and copies the result into everyone else's (a rank in
// place lends one buffer, both); each element is read once from each
// send buffer and written once to each receive buffer. Op's finishing
// step (Avg's division) is the caller's.
//
// With a hierarchy h, the segment is h's node: only node ranks below
// h.Shards combine, each allreduces its combined share with its peers on
// the other hosts (h.Cross) before copying it out, and the shares are
// those of rounds of per elements, as reduceShm's through the slots, so
// that the calls across hosts match whichever way each host went.
func allreduceDirect[T codec.Elem](k *call[T], op *core.SegmentOp, bufs [][2][]byte, me int, h *core.Hierarchy, per int) (err error) {
	p, n := len(bufs), k.me.Count
	owners, round := p, n
	if h != nil {
		owners, round = h.Shards, per
	}
	defer func() {
		if err == nil {
			err = k.lent(op)
		}
	}()
	defer k.recoverOp(&err)
	step := max(1, directChunk/k.size)
	for off := 0; off < n && me < owners; off += round {
		lo, hi := segShare(min(round, n-off), owners, me, k.size)
		lo, hi = off+lo, off+hi
		if h == nil {
			// Each chunk is copied out while it is in the cache.
			for c0 := lo; c0 < hi; c0 += step {
				c1 := min(hi, c0+step)
				k.combineDirect(bufs, c0, c1)
				k.copyOutDirect(bufs, c0, c1)
			}
			continue
		}
		k.combineDirect(bufs, lo, hi)
		if err := k.acrossHosts(h, segView[T](recvOf(bufs[0]))[lo:hi]); err != nil {
			return err
		}
		k.copyOutDirect(bufs, lo, hi)
	}
	return nil
}

// reduceSingle is allreduceDirect between ordinary buffers, copying
// once (core.SegmentOp.Single), or with root 0 or more a Reduce's: rank
// me combines its share of the elements (combineOnce), reading the
// others' parts of it out of their send buffers, and puts the result
// into every rank's receive buffer (root's alone), the others' with
// process_vm_writev; each element is read once from each send buffer and
// written once into each receive buffer, where through the slots it is
// copied in and out of them besides. A share goes chunk by chunk through
// this rank's slot of the operation's round, which nobody reads once
// Next has returned it: another rank's part in its second half. The
// partial result is combined in this rank's receive buffer, but for a
// rank that receives nothing (a Reduce's other than root) or whose own
// operand does not come first in place, whose first half of the slot
// takes it; a rank that receives copies it out from there. (Two ranks'
// 1 MiB Allreduces spent 18 % of their time in memmove when every rank
// combined in the slot, 2026-11-30.) Nobody else reads this rank's share
// of its send buffer, or writes that of its receive buffer, so a call in
// place can combine there. With a commutative op the operand that comes
// first is this rank's own where it combines in place, and otherwise
// the next rank's, read straight into where it combines: no copy either
// way.
func reduceSingle[T codec.Elem](k *call[T], p peers, s *core.Segment, send, buf []T, root int) (err error) {
	ranks, me := s.Size(), s.Rank()
	half, err := p.op.Next()
	if err != nil {
		return k.wrap(-1, err)
	}
	defer func() {
		if err == nil {
			err = k.lentInRound(p.op)
		}
	}()
	defer k.recoverOp(&err)
	slot := s.Slot(me, half)
	acc, part := segView[T](slot[:len(slot)/2]), segView[T](slot[len(slot)/2:])
	step := max(1, min(singleChunk, len(slot)/2)/k.size)
	lo, hi := segShare(len(buf), ranks, me, k.size)
	inPlace, receives := sameSlice(send, buf), root < 0 || me == root
	first := k.firstOperand(inPlace && receives)
	for c0 := lo; c0 < hi; c0 += step {
		c1 := min(hi, c0+step)
		a := buf[c0:c1]
		if !receives || inPlace && first != me {
			a = acc[:c1-c0]
		}
		if err := k.combineOnce(p, first, a, part, send, c0); err != nil {
			return err
		}
		if receives {
			copyApart(buf[c0:c1], a)
		}
		for i := 1; i < ranks; i++ {
			r := (me + i) % ranks
			if root >= 0 && r != root {
				continue
			}
			into, err := k.recvIndex(p, r)
			if err == nil {
				err = k.write(p, a, r, into, c0)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// firstOperand is the rank whose operand a rank combining once starts
// from (combineOnce): rank 0 where the op needs rank order; otherwise
// this rank where its own operand lies already where it combines (own),
// and the next rank elsewhere, whose operand is then read straight into
// where it combines.
func (k *call[T]) firstOperand(own bool) int {
	switch {
	case !k.op.Commutative():
		return 0
	case own:
		return k.c.Rank()
	}
	return (k.c.Rank() + 1) % k.c.Size()
}

// combineOnce sets acc to the combination of the len(acc) elements from
// element off on of every rank's send buffer, this rank's being send:
// first's operand, then the others' in rank order, which with first 0 is
// rank order and otherwise needs a commutative op. Each other rank's
// operand is read where it lies in registered memory or, copying once,
// into scratch, first's into acc itself. acc may be this rank's own
// operand, in place, where that comes first; it overlaps no other.
func (k *call[T]) combineOnce(p peers, first int, acc, scratch, send []T, off int) error {
	n := len(acc)
	x, err := k.operand(p, first, off, n, send, acc)
	if err != nil {
		return err
	}
	copyApart(acc, x)
	for q := range k.c.Size() {
		if q == first {
			continue
		}
		x, err := k.operand(p, q, off, n, send, scratch)
		if err != nil {
			return err
		}
		k.t.Mark()
		kernel.Reduce(k.op, acc, x)
		k.t.Lap(core.PartReduce)
	}
	return nil
}

// operand is rank q's n elements of its send buffer from element off on:
// this rank's own, in send, and another's in registered memory, where
// they lie; otherwise read into into, which then has at least n elements.
func (k *call[T]) operand(p peers, q, off, n int, send, into []T) ([]T, error) {
	switch {
	case q == k.c.Rank():
		return send[off : off+n], nil
	case p.mapped != nil:
		return segView[T](p.mapped[q][0])[off : off+n], nil
	}
	return into[:n], k.read(p, into[:n], q, 0, off)
}

// recvIndex is which of rank r's buffers of a single-copy Allreduce or
// Reduce receives: its second, or its first where it reduces in place.
func (k *call[T]) recvIndex(p peers, r int) (int, error) {
	n, err := k.length(p, r, 1)
	if n > 0 {
		return 1, err
	}
	return 0, err
}

// recvOf is a rank's receive buffer in a direct Allreduce: its second
// buffer, or its first when it reduces in place.
func recvOf(b [2][]byte) []byte {
	if b[1] != nil {
		return b[1]
	}
	return b[0]
}

// combineDirect sets elements lo to hi of rank 0's receive buffer to
// their combination over every rank's send buffer, in rank order.
func (k *call[T]) combineDirect(bufs [][2][]byte, lo, hi int) {
	k.t.Mark()
	defer k.t.Lap(core.PartReduce)
	k.t.Received += uint64((len(bufs) - 1) * (hi - lo) * k.size)
	acc := segView[T](recvOf(bufs[0]))[lo:hi]
	if bufs[0][1] != nil {
		copy(acc, segView[T](bufs[0][0])[lo:hi])
	}
	for q := 1; q < len(bufs); q++ {
		kernel.Reduce(k.op, acc, segView[T](bufs[q][0])[lo:hi])
	}
}

// copyOutDirect copies elements lo to hi of rank 0's receive buffer into
// every other rank's.
func (k *call[T]) copyOutDirect(bufs [][2][]byte, lo, hi int) {
	acc := segView[T](recvOf(bufs[0]))[lo:hi]
	for q := 1; q < len(bufs); q++ {
		k.put(segView[T](recvOf(bufs[q]))[lo:hi], acc)
	}
}

// reduceScatterDirect: every rank combines its block of every rank's
// send buffer into its receive buffer, chunk by chunk (combineOnce):
// reading the others' blocks where they lie in registered memory or,
// copying once, through its slot of the operation's round, which nobody
// reads once Next has returned it. Each block is then read once from
// each send buffer, where through the slots every rank copies all of its
// send buffer into its slot first. Copying once with a commutative op,
// the next rank's block comes first, read straight into the receive
// buffer, so that no block is copied.
func reduceScatterDirect[T codec.Elem](k *call[T], p peers, s *core.Segment, send, recv []T) (err error) {
	me, m := k.c.Rank(), len(recv)
	first := 0 // a registered operand is copied from wherever it lies
	if p.mapped == nil {
		first = k.firstOperand(false)
	}
	half, err := p.op.Next()
	if err != nil {
		return k.wrap(-1, err)
	}
	defer func() {
		if err == nil {
			err = k.lentInRound(p.op)
		}
	}()
	defer k.recoverOp(&err)
	var scratch []T
	step := max(1, directChunk/k.size)
	if p.mapped == nil {
		scratch = segView[T](s.Slot(me, half))
		step = max(1, min(singleChunk/k.size, len(scratch)))
	}
	for c0 := 0; c0 < m; c0 += step {
		c1 := min(m, c0+step)
		if err := k.combineOnce(p, first, recv[c0:c1], scratch, send, me*m+c0); err != nil {
			return err
		}
	}
	return nil
}

// bcastDirect: every rank copies root's buffer into its own, buf. With
// split (see bcastSplits), root copies the last part of every other
// rank's buffer itself (rootShare), and each of them the rest, so that
// root's CPU copies too rather than only waiting; everyone then waits
// until all are done, since root writes the others' buffers.
func bcastDirect[T codec.Elem](k *call[T], p peers, buf []T, root int, split bool) error {
	me, n := k.c.Rank(), len(buf)
	lo := n
	if split {
		lo = rootShare(n, k.c.Size())
	}
	if me == root {
		for r := range k.c.Size() {
			if r != root && lo < n {
				if err := k.write(p, buf[lo:], r, 0, lo); err != nil {
					return err
				}
			}
		}
		return k.lent(p.op)
	}
	if err := k.read(p, buf[:lo], root, 0, 0); err != nil {
		return err
	}
	if split {
		return k.lent(p.op)
	}
	return k.used(p.op)
}

// rootShare is where root's share begins of the n elements of a split
// direct Bcast among ranks ranks: root copies the last n/ranks elements
// into every other rank's buffer, and each of them the rest out of
// root's, so that root and every other rank each copy (ranks-1)·n/ranks.
// Two ranks, three alternating runs, µs, whole against split: registered
// Bcasts 1 MiB 37-50 / 15.5-20.4, 16 MiB 1163-1390 / 661-788, 64 MiB
// 9090-11463 / 3727-4205 (2026-11-28); ordinary ones copying once 64 KiB
// 4.2 / 3.4, 1 MiB 70 / 22, 4 MiB 492 / 266 (2026-11-29).
func rootShare(n, ranks int) int { return n - n/ranks }

// bcastSplits reports whether a direct Bcast of the given bytes is
// split (rootShare): always where each rank has a CPU, and up to
// crowdedSplitMax where the host's ranks outnumber its CPUs.
func bcastSplits(crowded bool, bytes int) bool { return !crowded || bytes <= crowdedSplitMax }

// crowdedSplitMax is the largest split Bcast on a crowded host. Unsplit,
// root has nothing to do but wait while each other rank copies the
// whole buffer in its turn for a CPU; split, root copies a share of
// each, and its turns copy rather than wait. Registered Bcasts on two
// CPUs, µs, medians of three or four alternating runs, unsplit against
// split (2026-11-28): four ranks 80 / 58 at 512 KiB, 393 / 134 and 470 /
// 110 at 1 MiB, 919 / 630 at 2 MiB; three ranks 44 / 48 at 512 KiB, 226
// / 92 and 239 / 105 at 1 MiB, but 497 / 463 and 497 / 670 at 2 MiB, 973
// / 1646 at 4 MiB and 20.9 / 24.6 ms at 64 MiB: there three ranks copy
// on two CPUs where two did, and once each copy outlasts a turn, the
// one whose turn it is not holds the others up at the end.
const crowdedSplitMax = 1 << 20

// scatterDirect: every rank but root copies its block of root's send
// buffer into its receive buffer. (Root copies its own block meanwhile,
// as much as each other rank copies: a share of the others' blocks, as
// bcastDirect's root takes, would make it the slowest.)
func scatterDirect[T codec.Elem](k *call[T], p peers, send, recv []T, root int) error {
	me, n := k.c.Rank(), len(recv)
	if me == root {
		copy(recv, send[me*n:])
		return k.lent(p.op)
	}
	if err := k.read(p, recv, root, 0, me*n); err != nil {
		return err
	}
	return k.used(p.op)
}

// alltoallDirect: every rank puts its block for every other rank into
// that rank's receive buffer, as gatherDirect's ranks put theirs.
func alltoallDirect[T codec.Elem](k *call[T], p peers, send, recv []T) error {
	ranks, me := k.c.Size(), k.c.Rank()
	b := len(recv) / ranks
	copy(recv[me*b:(me+1)*b], send[me*b:])
	for i := 1; i < ranks; i++ {
		r := (me + i) % ranks
		if err := k.write(p, send[r*b:(r+1)*b], r, 1, me*b); err != nil {
			return err
		}
	}
	return k.lent(p.op)
}

// gatherDirect: every rank but root puts its send buffer into root's
// receive buffer, or with root -1 (Allgather) into every other rank's,
// each starting with the rank after it, while root copies its own. A
// Gather's root reading them all had root copy as much as all the others
// together (two ranks, ordinary buffers, 1 MiB Gathers 70 µs against
// 20, 2026-11-29). And a rank writes rather than reads: a C probe of two
// ranks on an Intel Xeon host, each copying its own 512 KiB into its
// receive buffer and moving 512 KiB to the other, took 71 µs reading the
// other's send buffer with process_vm_readv and 39 writing its own into
// the other's receive buffer with process_vm_writev (64 KiB and 8 MiB:
// level), its working set then its own send buffer and the two receive
// buffers' halves it writes.
func gatherDirect[T codec.Elem](k *call[T], p peers, send, recv []T, root int) error {
	me, n := k.c.Rank(), len(send)
	switch {
	case me == root:
		copy(recv[me*n:], send)
		return k.lent(p.op)
	case root >= 0:
		if err := k.write(p, send, root, 1, me*n); err != nil {
			return err
		}
		return k.used(p.op)
	}
	copy(recv[me*n:], send)
	for i := 1; i < k.c.Size(); i++ {
		if err := k.write(p, send, (me+i)%k.c.Size(), 1, me*n); err != nil {
			return err
		}
	}
	return k.lent(p.op)
}

// allgathervDirect is gatherDirect for Allgatherv: each rank copies every
// other rank's send straight into its recv, once it has found that each
// send is as long as its counts say (a rank that finds otherwise still
// waits for the others to be done with its buffers before it fails).
func allgathervDirect[T codec.Elem](k *call[T], p peers, send, recv []T, counts []int) error {
	for r := range counts {
		// Every rank's length, before sameCounts asks for them without
		// a way to fail.
		if _, err := k.length(p, r, 0); err != nil {
			_ = k.lent(p.op)
			return err
		}
	}
	if err := k.sameCounts(counts, func(r int) int { n, _ := k.length(p, r, 0); return n }, sendDiffers); err != nil {
		_ = k.lent(p.op)
		return err
	}
	me, at := k.c.Rank(), 0
	for r, n := range counts {
		if r == me {
			copy(recv[at:at+n], send)
		} else if err := k.read(p, recv[at:at+n], r, 0, 0); err != nil {
			return err
		}
		at += n
	}
	return k.lent(p.op)
}
