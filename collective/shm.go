package collective

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/wire"
)

// The shared-memory algorithms (Shm) run where every rank of the
// communicator maps its core.Segment. They work in rounds, one slot of the
// segment per rank and round, half after half (see core.Segment): a rank
// copies its part of the round into its slot and publishes In, the ranks
// that need it wait for those Ins and read the slots, and everyone
// publishes Done. Data crosses memory once into the segment and once out,
// and the reduction reads each slot where it lies, which is half the
// traffic of a two-copy ring through links; the waits are on memory, not
// on messages.
//
// Allreduce reduces each round either on every rank (one-shot: each rank
// combines all slots itself, for small rounds where a second wait would
// cost more than the redundant arithmetic) or split (each rank combines
// its share of the round from every slot into rank 0's slot, and all copy
// the result out). Either way the operands are combined in rank order,
// r0∘r1∘…, by exactly one rule per element, so the results are bitwise
// identical everywhere and non-commutative ops are welcome.

// shmOneShot is the largest round, in bytes per rank, that Allreduce
// reduces on every rank instead of splitting.
const shmOneShot = 16 << 10

// bcastRound is the largest round, in bytes, of a Bcast through the
// slots (bcastShm). Bcasts of 256 KiB to 4 MiB once went in rounds of 64
// KiB, which overlapped the reader's copy of a round with root's of the
// next one sooner, while root's copies waited for every line the reader
// held (1 MiB 83 µs against 106 in rounds of 256 KiB, 2026-11-28). Since
// root writes with string moves (shmem.Copy), which do not wait, the
// fewer rounds win: two ranks, GOCOLL_SINGLE_COPY=none, three alternating
// runs, mean µs, rounds of 64 / 128 / 256 KiB (2026-11-29): 1 MiB
// 54-58 / 48-58 / 48-51, 2 MiB 102-111 / 94-101 / 85-95, 4 MiB 203-223
// / 185-219 / 161-188.
const bcastRound = 256 << 10

// bcastShortRound is the round of a Bcast of at most bcastShortMax
// bytes on a host with a CPU for each rank: the reader's copy of the
// first round overlaps the root's of the second, where a call of one
// round leaves the reader waiting for the whole of root's copy first.
// Two ranks on an AMD EPYC host, 2026-11-28 (GOCOLL_SINGLE_COPY=none,
// three alternating runs, medians, µs, in rounds of 32 / 64 / 128 KiB):
// 64 KiB 7.0 / 9.0 / 8.8, 128 KiB 11.5 / 14.2 / 12.8, 256 KiB 20.2 /
// 19.6 / 19.5; the reader's median 64 KiB call 5.6 µs against 7.4. With
// root's string moves (2026-11-29, rounds of 16 / 32 / 64 KiB, mean µs):
// 64 KiB 7.3-7.7 / 6.0-6.9 / 7.2-7.9, 128 KiB 9.9-10.7 / 9.7-10.3 /
// 9.5-10.6.
const (
	bcastShortRound = 32 << 10
	bcastShortMax   = 128 << 10
)

// reduceRound is the largest round, in bytes per rank, of a reduction
// through the slots, whatever their size: a round then stays in the
// caches from its copy in to its copy out. With ranks bound to their
// own CPUs, 1 MiB Allreduces of two ranks moved 3.9-4.6 GB/s in rounds
// of 64-256 KiB against 2.6-3.4 in the default slot's 1 MiB, and 16-64
// MiB ones 3.7-4.3 against 2.6-3.1; at four ranks 2.6-3.5 against 2.4 at
// 1 MiB (2026-11-25, rounds alternating). The hosts of a hierarchy thus
// take the same rounds, unless their slots are set smaller.
const reduceRound = 256 << 10

// gatherRound is the largest round, in bytes per rank, of a Gather or
// Allgather through the slots. Smaller rounds lost by half: two ranks,
// 1 MiB Allgather 6.0-6.8 GB/s busbw in rounds of 128 KiB, 11.5-12.7 in
// 256 KiB, 12.0-15.2 in 512 KiB, Gather 9.3-9.6, 17.2-19.3 and
// 20.7-22.7; larger ones lost too: 16 MiB Allgather 4.3-4.6 in rounds of
// 2 MiB against 4.3-6.3, Gather 8.5-9.0 against 10.4-12.9. Only the
// 64 MiB Gather, which streams from memory, went better in rounds of a
// quarter of a rank's part: 8.0-8.1 against 6.3-6.6 (2026-11-26, three
// alternating rounds each).
const gatherRound = 512 << 10

// segView is b, memory of a segment, as a []T. Segment memory is shared
// with other processes, so it must be used in place, never through
// codec's views, which copy in purego builds. Slots start on page
// boundaries, so the elements are aligned.
func segView[T codec.Elem](b []byte) []T {
	n := len(b) / int(unsafe.Sizeof(*new(T)))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// segFinish checks, at the end of the call's operation on a segment,
// that every rank made this call (SegmentOp.Finish).
func (k *call[T]) segFinish(op *core.SegmentOp) error {
	if err := op.Finish(); err != nil {
		return k.wrap(-1, err)
	}
	return nil
}

// segShare is rank r's part of a round of m elements among p ranks: whole
// 64-byte lines, so that no two ranks write one line, the last rank taking
// the rest.
func segShare(m, p, r, size int) (lo, hi int) {
	unit := max(1, 64/size)
	lines := (m + unit - 1) / unit
	lo = min(m, r*lines/p*unit)
	hi = min(m, (r+1)*lines/p*unit)
	if r == p-1 {
		hi = m
	}
	return lo, hi
}

// reduceShm reduces send of every rank with k.op into buf of root, or of
// every rank when root is -1, through the segment s; send is buf itself
// in place, or a slice of the same length apart from it, never written.
// With a hierarchy h, s is its node's segment: only node ranks below
// h.Shards combine the shares of each round, and each allreduces its
// share with its peers on the other hosts (h.Cross) before the round is
// copied out.
func reduceShm[T codec.Elem](k *call[T], s *core.Segment, send, buf []T, root int, h *core.Hierarchy) error {
	if s == nil {
		copyApart(buf, send)
		return nil // one rank: its send is the result
	}
	if h == nil && len(buf)*k.size <= core.FastBytes {
		return reduceFast(k, s, send, buf, root)
	}
	var op core.SegmentOp
	var err error
	// An Allreduce or a Reduce on one host can copy once between ordinary
	// buffers, as rank 0 or root chooses (reduceSingle).
	decider := -1
	if h == nil {
		decider = max(root, 0)
	}
	if sameSlice(send, buf) {
		err = k.segBeginDirect(&op, s, buf, nil, decider)
	} else {
		err = k.segBeginDirect(&op, s, send, buf, decider)
	}
	if err != nil {
		return err
	}
	defer k.endOp(&op)
	me := s.Rank()
	per := min(s.SlotBytes(), reduceRound) / k.size
	if root < 0 { // a Reduce does not go direct
		bufs, direct, err := k.direct(&op, -1)
		if err != nil {
			return err
		}
		if direct {
			return allreduceDirect(k, &op, bufs, me, h, per)
		}
	}
	if single, err := op.Single(); err != nil {
		return k.wrap(-1, err)
	} else if single {
		return reduceSingle(k, peers{op: &op}, s, send, buf, root)
	}
	owned := h == nil && root < 0 && k.op.Commutative()
	for off := 0; ; {
		m := min(per, len(buf)-off)
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		from, part := send[off:off+m], buf[off:off+m]
		if owned && m*k.size > shmOneShot {
			err = k.reduceOwned(&op, s, half, from, part)
		} else {
			err = k.reduceRound(&op, s, half, from, part, root, h)
		}
		if err != nil {
			return err
		}
		if off += m; off >= len(buf) {
			return k.segFinish(&op)
		}
	}
}

// reduceRound is a round of reduceShm through the slots: every rank
// copies its part of the round, from, into its slot; in a small round
// without a hierarchy each rank that wants the result combines every slot
// itself, otherwise each rank (each node rank below h.Shards) combines
// its share of the round from every slot into rank 0's, allreducing it
// across hosts with a hierarchy, and those that want the result copy it
// out into part.
func (k *call[T]) reduceRound(op *core.SegmentOp, s *core.Segment, half int, from, part []T, root int, h *core.Hierarchy) error {
	p, me, m := s.Size(), s.Rank(), len(part)
	k.put(segView[T](s.Slot(me, half)), from)
	op.In()
	if h == nil && m*k.size <= shmOneShot {
		if root < 0 || me == root {
			if err := op.WaitIn(); err != nil {
				return k.wrap(-1, err)
			}
			k.take(part, segView[T](s.Slot(0, half)))
			return k.combine(part, s, half, 0, m, 0)
		}
		return nil // nobody waits for this round's Done: the next In says it
	}
	if err := op.WaitIn(); err != nil {
		return k.wrap(-1, err)
	}
	owners := p
	if h != nil {
		owners = h.Shards
	}
	if me < owners {
		lo, hi := segShare(m, owners, me, k.size)
		acc := segView[T](s.Slot(0, half))[lo:hi]
		if err := k.combine(acc, s, half, lo, hi, 0); err != nil {
			return err
		}
		if h != nil {
			if err := k.acrossHosts(h, acc); err != nil {
				return err
			}
		}
	}
	op.Done()
	if root < 0 || me == root {
		if err := op.WaitDone(); err != nil {
			return k.wrap(-1, err)
		}
		k.take(part, segView[T](s.Slot(0, half)))
	}
	return nil
}

// acrossHosts allreduces acc, a share of a hierarchy h's node combined
// inside the host, with its peers on the other hosts (h.Cross). Avg sums
// there: it divides once, at the end of the whole call.
func (k *call[T]) acrossHosts(h *core.Hierarchy, acc []T) error {
	op := k.op
	if kernel.ID(op) == ops.Avg {
		op = codec.Sum
	}
	return Allreduce(k.ctx, (*comm.Comm)(h.Cross), acc, op)
}

// reduceOwned is a round of a commutative Allreduce through the slots in
// which each rank combines its share of the round in its own part: it
// copies only the others' shares of from into its slot, adds their
// operands to its share, puts the result in its slot where its own share
// would have been, and copies the others' results out of their slots.
// Each element is still combined by one rank, so every rank gets the
// same bits, and each rank copies the round in and out once less its
// share (two ranks, 1 MiB: memmove was 81 % of the call). The operands
// are not combined in rank order, hence commutative ops only.
//
// In a large operation (receivesAround) into another buffer the share
// is combined in the slot instead, where the others read it, and copied
// out into part around the caches: out of the caches part's lines are
// then written once rather than read first (two ranks' 16 and 64 MiB
// Allreduces took 7-8 % less time, 2026-11-30). In place, from is part,
// and combining there then putting the share into the slot makes two
// passes over it where the slot's way makes three (a copy in, the
// combining, the copy out): ten pairs of runs of two ranks' in-place
// Allreduces through the slots, the slot's way against this one, had
// this one at 0.84 of its time at 16 MiB and 0.90 at 64 MiB (medians
// of the pairs' ratios, a Zen 3 VM, 2026-11-30). No other rank reads the
// share's place in the slot before Done.
func (k *call[T]) reduceOwned(op *core.SegmentOp, s *core.Segment, half int, from, part []T) error {
	p, me, m := s.Size(), s.Rank(), len(part)
	lo, hi := segShare(m, p, me, k.size)
	mine := segView[T](s.Slot(me, half))
	k.put(mine[:lo], from[:lo])
	k.put(mine[hi:m], from[hi:])
	op.In()
	around := k.receivesAround() && !sameSlice(from, part)
	acc := part[lo:hi]
	if around {
		// Through the caches, whatever the call's puts do: this rank
		// combines into it next. The others read the result there.
		acc = mine[lo:hi]
		k.t.Mark()
		shmem.Copy(asBytes(acc), asBytes(from[lo:hi]))
		k.t.Lap(core.PartCopy)
		k.t.Sent += uint64(len(acc) * k.size)
	} else {
		copyApart(acc, from[lo:hi])
	}
	if err := op.WaitIn(); err != nil {
		return k.wrap(-1, err)
	}
	if err := k.combine(acc, s, half, lo, hi, me); err != nil {
		return err
	}
	if around {
		op.Done()
		k.copyOut(part[lo:hi], acc)
	} else {
		k.put(mine[lo:hi], acc)
		op.Done()
	}
	if err := op.WaitDone(); err != nil {
		return k.wrap(-1, err)
	}
	for q := range p {
		if q != me {
			qlo, qhi := segShare(m, p, q, k.size)
			k.take(part[qlo:qhi], segView[T](s.Slot(q, half))[qlo:qhi])
		}
	}
	return nil
}

// The fast versions of the shared-memory algorithms, for calls whose data
// of each rank fits a fast line: every rank puts its part in its line
// with its call (core.SegmentOp.Exchange), and reads what it needs from
// the others' lines.

// overLines runs the call's operation on s through the fast lines: it
// exchanges data with the ranks that from names (core.SegmentOp.Exchange)
// and hands every rank's line to use before the operation ends.
func (k *call[T]) overLines(s *core.Segment, data []byte, from int, use func(lines [][]byte) error) error {
	var op core.SegmentOp
	if err := s.BeginLines(&op, k.ctx, k.ticket, k.seq, k.me); err != nil {
		return k.wrap(-1, err)
	}
	if k.beside {
		op.Beside()
	}
	op.Time(k.t.Timed())
	defer k.endOp(&op)
	lines, err := op.Exchange(data, from)
	if err != nil {
		return k.wrap(-1, err)
	}
	k.t.Sent += uint64(len(data))
	return use(lines)
}

// linesFrom is whose fast lines a rank of a call rooted at root waits
// for, when root's line carries the data (Bcast, Scatter) or, with
// toRoot, root reads every line (Gather, Reduce). With receipts, every
// rank waits for every line, so that every rank compares every rank's
// call before it returns; without them (WithReceipts(false)), a rank
// waits only for the lines it reads, and one that only sends returns once
// its own is written, comparing the others' calls as its next call
// begins.
func (k *call[T]) linesFrom(root int, toRoot bool) int {
	switch me := k.c.Rank(); {
	case !k.me.NoReceipts || root < 0:
		return core.FromAll
	case me == root && toRoot:
		return core.FromAll
	case me == root || toRoot:
		return core.FromNone
	}
	return root
}

// reduceFast is reduceShm through the fast lines: each rank that wants
// the result combines every rank's line, in rank order, into its buf.
func reduceFast[T codec.Elem](k *call[T], s *core.Segment, send, buf []T, root int) error {
	return k.overLines(s, asBytes(send), k.linesFrom(root, true), func(lines [][]byte) error {
		if root >= 0 && s.Rank() != root {
			return nil
		}
		return k.combineLines(buf, lines, 0)
	})
}

// bcastFast is bcastShm through the fast lines.
func bcastFast[T codec.Elem](k *call[T], s *core.Segment, buf []T, root int) error {
	var mine []T
	if s.Rank() == root {
		mine = buf
	}
	return k.overLines(s, asBytes(mine), k.linesFrom(root, false), func(lines [][]byte) error {
		if s.Rank() != root {
			k.take(buf, segView[T](lines[root])[:len(buf)])
		}
		return nil
	})
}

// gatherFast is gatherShm through the fast lines.
func gatherFast[T codec.Elem](k *call[T], s *core.Segment, send, recv []T, root int) error {
	return k.overLines(s, asBytes(send), k.linesFrom(root, true), func(lines [][]byte) error {
		if root >= 0 && s.Rank() != root {
			return nil
		}
		n, me := len(send), s.Rank()
		for r, line := range lines {
			if r == me {
				copy(recv[r*n:(r+1)*n], send)
			} else {
				k.take(recv[r*n:(r+1)*n], segView[T](line)[:n])
			}
		}
		return nil
	})
}

// reduceScatterFast is reduceScatterShm through the fast lines.
func reduceScatterFast[T codec.Elem](k *call[T], s *core.Segment, send, recv []T) error {
	return k.overLines(s, asBytes(send), core.FromAll, func(lines [][]byte) error {
		return k.combineLines(recv, lines, s.Rank()*len(recv))
	})
}

// combineLines sets acc to the combination, in rank order, of the
// len(acc) elements from element at of every rank's fast line.
func (k *call[T]) combineLines(acc []T, lines [][]byte, at int) (err error) {
	defer k.recoverOp(&err)
	k.t.Mark()
	defer k.t.Lap(core.PartReduce)
	k.t.Received += uint64((len(lines) - 1) * len(acc) * k.size)
	copy(acc, segView[T](lines[0])[at:at+len(acc)])
	for q := 1; q < len(lines); q++ {
		kernel.Reduce(k.op, acc, segView[T](lines[q])[at:at+len(acc)])
	}
	return nil
}

// combine combines into acc, which holds elements lo to hi of rank
// except's operand, those elements of every other rank's slot of half,
// in rank order. With except 0 (acc a copy of slot 0, or slot 0 itself)
// that makes acc slot 0 ∘ slot 1 ∘ …; with another rank, whose operand
// comes first, the op must be commutative.
func (k *call[T]) combine(acc []T, s *core.Segment, half, lo, hi, except int) (err error) {
	defer k.recoverOp(&err)
	k.t.Mark()
	defer k.t.Lap(core.PartReduce)
	for q := range s.Size() {
		if q != except {
			kernel.Reduce(k.op, acc, segView[T](s.Slot(q, half))[lo:hi])
			if q != s.Rank() {
				k.t.Received += uint64((hi - lo) * k.size)
			}
		}
	}
	return nil
}

// endOp ends op, the call's operation on its segment, and counts the
// time the operation waited for other ranks in the call's tally.
func (k *call[T]) endOp(op *core.SegmentOp) {
	k.t.Add(core.PartWait, op.Waited())
	op.End()
	if k.copier != nil {
		k.copier.Learn(int(k.me.Kind), k.copySize, k.around, k.putBytes, k.putNanos)
		k.copier, k.around, k.putBytes, k.putNanos = nil, false, 0, 0
	}
}

// put copies src into dst, this rank's place in the segment, where the
// other ranks read it: bytes the call sends. It writes around the caches
// where the segment's Copier chose so for the call, and otherwise with
// shmem.Copy, whose stores do not wait for the lines the readers hold.
func (k *call[T]) put(dst, src []T) {
	k.t.Mark()
	if k.copier == nil {
		shmem.Copy(asBytes(dst), asBytes(src))
	} else {
		start := core.Now()
		if k.around {
			kernel.CopyAround(asBytes(dst), asBytes(src))
		} else {
			shmem.Copy(asBytes(dst), asBytes(src))
		}
		k.putNanos += core.Now() - start
		k.putBytes += int64(len(src) * k.size)
	}
	k.t.Lap(core.PartCopy)
	k.t.Sent += uint64(len(src) * k.size)
}

// take copies into dst what another rank put in src: bytes the call
// receives.
func (k *call[T]) take(dst, src []T) {
	n := k.copyOut(dst, src)
	k.t.Received += uint64(n * k.size)
}

// copyOut copies src, in the segment, into dst, part of the call's
// result, and returns how many elements it copied: around the caches in a
// large operation (receivesAround).
func (k *call[T]) copyOut(dst, src []T) int {
	k.t.Mark()
	var n int
	if k.receivesAround() {
		n = kernel.CopyAround(asBytes(dst), asBytes(src)) / k.size
	} else {
		n = copy(dst, src)
	}
	k.t.Lap(core.PartCopy)
	return n
}

// bcastShm copies root's buf to every rank through the segment, in
// rounds of a half (one slot per rank) but no more than bcastRound, so
// that root's copy of a round overlaps the others' copies of the one
// before and a round stays in the caches. (With ranks bound to their own
// CPUs, 1 MiB Bcasts of two ranks moved 11-18 GB/s in rounds of 128-256
// KiB against 8.0-8.7 in whole halves, and 16-64 MiB ones as fast,
// 2026-11-25; unbound, on 2026-11-23, smaller rounds had made them twice
// as slow.)
func bcastShm[T codec.Elem](k *call[T], buf []T, root int) error {
	s := k.c.Segment()
	if s == nil {
		return nil
	}
	if len(buf)*k.size <= core.FastBytes {
		return bcastFast(k, s, buf, root)
	}
	var op core.SegmentOp
	// A split direct Bcast (bcastDirect) has root map every rank's
	// buffer, the others only root's. Every rank finds the same split:
	// Crowded is what rank 0 found.
	split := bcastSplits(s.Crowded(), len(buf)*k.size)
	peer := root
	if split && k.c.Rank() == root {
		peer = -1
	}
	p, direct, err := k.segBegin(&op, s, buf, nil, peer, root)
	if err != nil {
		return err
	}
	defer k.endOp(&op)
	if direct {
		return bcastDirect(k, p, buf, root, split)
	}
	// Every rank finds the same round: the size is the call's, and
	// Crowded what rank 0 found.
	round := bcastRound
	switch n := len(buf) * k.size; {
	case s.Crowded():
	case n <= bcastShortMax:
		round = bcastShortRound
	}
	per := min(s.Size()*s.SlotBytes(), round) / k.size
	me := k.c.Rank()
	off := 0
	for {
		m := min(per, len(buf)-off)
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		area := segView[T](s.Half(half))
		if me == root {
			k.put(area, buf[off:off+m])
			op.In()
		} else {
			op.In()
			if err := op.WaitInOf(root); err != nil {
				return k.wrap(root, err)
			}
			k.take(buf[off:off+m], area)
		}
		if off += m; off >= len(buf) {
			return k.segFinish(&op)
		}
	}
}

// gatherShm collects send of every rank into recv of root, in rank order,
// or of every rank when root is -1 (Allgather): each rank's slot takes
// the next part of its send per round.
func gatherShm[T codec.Elem](k *call[T], send, recv []T, root int) error {
	s := k.c.Segment()
	if s == nil {
		copy(recv, send)
		return nil
	}
	if len(send)*k.size <= core.FastBytes {
		return gatherFast(k, s, send, recv, root)
	}
	p, me, n := s.Size(), k.c.Rank(), len(send)
	mine := recv
	if root >= 0 && me != root {
		mine = nil
	}
	var op core.SegmentOp
	bufs, direct, err := k.segBegin(&op, s, send, mine, root, max(root, 0))
	if err != nil {
		return err
	}
	defer k.endOp(&op)
	if direct {
		return gatherDirect(k, bufs, send, recv, root)
	}
	per := min(s.SlotBytes(), gatherRound) / k.size
	off := 0
	for {
		m := min(per, n-off)
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		if me != root {
			k.put(segView[T](s.Slot(me, half)), send[off:off+m])
		}
		op.In()
		if root < 0 || me == root {
			// A rank's own part needs no slot, and goes while the others
			// fill theirs.
			if !k.ownUnused {
				copy(recv[me*n+off:me*n+off+m], send[off:off+m])
			}
			if err := op.WaitIn(); err != nil {
				return k.wrap(-1, err)
			}
			for r := range p {
				if r != me {
					k.take(recv[r*n+off:r*n+off+m], segView[T](s.Slot(r, half)))
				}
			}
		}
		if off += m; off >= n {
			return k.segFinish(&op)
		}
	}
}

// scatterShm sends block r of root's send to rank r through the segment:
// per round root copies the next part of every other rank's block into
// that rank's slot, and each rank takes its part from its own slot.
func scatterShm[T codec.Elem](k *call[T], send, recv []T, root int) error {
	s := k.c.Segment()
	if s == nil {
		copy(recv, send)
		return nil
	}
	p, me, n := s.Size(), k.c.Rank(), len(recv)
	if p*n*k.size <= core.FastBytes {
		return scatterFast(k, s, send, recv, root)
	}
	var mine []T
	if me == root {
		mine = send
	}
	var op core.SegmentOp
	bufs, direct, err := k.segBegin(&op, s, mine, recv, root, root)
	if err != nil {
		return err
	}
	defer k.endOp(&op)
	if direct {
		return scatterDirect(k, bufs, send, recv, root)
	}
	per := min(s.SlotBytes(), gatherRound) / k.size
	off := 0
	for {
		m := min(per, n-off)
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		if me == root {
			for r := range p {
				if r != me {
					k.put(segView[T](s.Slot(r, half)), send[r*n+off:r*n+off+m])
				}
			}
			op.In()
			copy(recv[off:off+m], send[me*n+off:me*n+off+m])
		} else {
			op.In()
			if err := op.WaitInOf(root); err != nil {
				return k.wrap(root, err)
			}
			k.take(recv[off:off+m], segView[T](s.Slot(me, half)))
		}
		if off += m; off >= n {
			return k.segFinish(&op)
		}
	}
}

// scatterFast is scatterShm through the fast lines: root's line holds
// every block.
func scatterFast[T codec.Elem](k *call[T], s *core.Segment, send, recv []T, root int) error {
	var mine []T
	if s.Rank() == root {
		mine = send
	}
	return k.overLines(s, asBytes(mine), k.linesFrom(root, false), func(lines [][]byte) error {
		n, me := len(recv), s.Rank()
		if me == root {
			copy(recv, send[me*n:])
		} else {
			k.take(recv, segView[T](lines[root])[me*n:])
		}
		return nil
	})
}

// alltoallShm is Alltoall through the segment: per round each rank copies
// the next part of each of its blocks for the others into its slot, the
// parts side by side, and takes the part for it from every other slot.
func alltoallShm[T codec.Elem](k *call[T], send, recv []T) error {
	s := k.c.Segment()
	if s == nil {
		copy(recv, send)
		return nil
	}
	p, me := s.Size(), k.c.Rank()
	b := len(send) / p
	if len(send)*k.size <= core.FastBytes {
		return alltoallFast(k, s, send, recv)
	}
	var op core.SegmentOp
	bufs, direct, err := k.segBegin(&op, s, send, recv, -1, 0)
	if err != nil {
		return err
	}
	defer k.endOp(&op)
	if direct {
		return alltoallDirect(k, bufs, send, recv)
	}
	per := alltoallPart(s.SlotBytes(), p, k.size)
	if per == 0 {
		return k.invalid(fmt.Errorf("%w: Alltoall with shm among %d ranks needs segment slots of at least %d bytes, not %d",
			codec.ErrInvalid, p, p*max(64, k.size), s.SlotBytes()))
	}
	off := 0
	for {
		m := min(per, b-off)
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		mine := segView[T](s.Slot(me, half))
		for q := range p {
			if q != me {
				k.put(mine[q*per:], send[q*b+off:q*b+off+m])
			}
		}
		op.In()
		copy(recv[me*b+off:me*b+off+m], send[me*b+off:me*b+off+m])
		if err := op.WaitIn(); err != nil {
			return k.wrap(-1, err)
		}
		for r := range p {
			if r != me {
				k.take(recv[r*b+off:r*b+off+m], segView[T](s.Slot(r, half))[me*per:])
			}
		}
		if off += m; off >= b {
			return k.segFinish(&op)
		}
	}
}

// alltoallPart is the elements of size bytes that each of the p parts of
// an Alltoall's slot of slot bytes takes per round: whole lines, so that
// every part starts on a line of its own, aligned and shared with no
// other rank's part; 0 where the slot cannot hold a line per rank.
func alltoallPart(slot, p, size int) int {
	unit := max(1, 64/size)
	return min(slot, gatherRound) / size / p / unit * unit
}

// alltoallFast is alltoallShm through the fast lines: each rank's line
// holds its whole send.
func alltoallFast[T codec.Elem](k *call[T], s *core.Segment, send, recv []T) error {
	return k.overLines(s, asBytes(send), core.FromAll, func(lines [][]byte) error {
		p, me := s.Size(), s.Rank()
		b := len(send) / p
		for r := range p {
			if r == me {
				copy(recv[r*b:(r+1)*b], send[r*b:])
			} else {
				k.take(recv[r*b:(r+1)*b], segView[T](lines[r])[me*b:])
			}
		}
		return nil
	})
}

// scanShm is Scan (inclusive) or Exscan through the segment: per round
// each rank copies the next part of its buf into its slot and, once the
// ranks below it have theirs in, folds their parts in rank order into its
// buf, its own last for Scan. Rank 0's buf stays as it is.
func scanShm[T codec.Elem](k *call[T], buf []T, inclusive bool) error {
	s := k.c.Segment()
	if s == nil {
		return nil
	}
	me, n := k.c.Rank(), len(buf)
	last := me // the last rank whose operand the result takes
	if !inclusive {
		last--
	}
	if n*k.size <= core.FastBytes {
		return k.overLines(s, asBytes(buf), core.FromAll, func(lines [][]byte) error {
			return k.prefix(buf, last, func(q int) []T { return segView[T](lines[q]) })
		})
	}
	var op core.SegmentOp
	if err := k.segBeginDirect(&op, s, nil, nil, -1); err != nil {
		return err
	}
	defer k.endOp(&op)
	per := min(s.SlotBytes(), reduceRound) / k.size
	off := 0
	for {
		m := min(per, n-off)
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		k.put(segView[T](s.Slot(me, half)), buf[off:off+m])
		op.In()
		for q := range me {
			if err := op.WaitInOf(q); err != nil {
				return k.wrap(q, err)
			}
		}
		if err := k.prefix(buf[off:off+m], last, func(q int) []T { return segView[T](s.Slot(q, half)) }); err != nil {
			return err
		}
		if off += m; off >= n {
			return k.segFinish(&op)
		}
	}
}

// prefix sets acc to the combination, in rank order, of the operands of
// ranks 0 to last, each from the start of operand(q). It leaves acc
// alone where last is below 0 (rank 0's Exscan) or rank 0 is both last
// and this rank (its Scan: acc is the result already).
func (k *call[T]) prefix(acc []T, last int, operand func(q int) []T) (err error) {
	if last < 0 || last == 0 && k.c.Rank() == 0 {
		return nil
	}
	defer k.recoverOp(&err)
	k.t.Mark()
	defer k.t.Lap(core.PartReduce)
	copy(acc, operand(0))
	for q := 1; q <= last; q++ {
		if err := kernel.Reduce(k.op, acc, operand(q)[:len(acc)]); err != nil {
			return k.wrap(-1, err)
		}
	}
	k.t.Received += uint64(min(last+1, k.c.Rank()) * len(acc) * k.size)
	return nil
}

// reduceScatterShm combines send of every rank into recv, block by block,
// through the segment: per round each rank copies the next part of every
// block of its send into its slot, part after part, and combines the
// part of its own block from every slot, in rank order, into its recv.
func reduceScatterShm[T codec.Elem](k *call[T], send, recv []T) error {
	s := k.c.Segment()
	if s == nil {
		copy(recv, send)
		return nil
	}
	if len(send)*k.size <= core.FastBytes {
		return reduceScatterFast(k, s, send, recv)
	}
	var op core.SegmentOp
	bufs, direct, err := k.segBegin(&op, s, send, recv, -1, 0)
	if err != nil {
		return err
	}
	defer k.endOp(&op)
	if direct {
		return reduceScatterDirect(k, bufs, s, send, recv)
	}
	p, me, m := s.Size(), k.c.Rank(), len(recv)
	per := s.SlotBytes() / k.size / p
	if per == 0 {
		return k.invalid(fmt.Errorf("%w: ReduceScatter with shm among %d ranks needs segment slots of at least %d bytes, not %d",
			codec.ErrInvalid, p, p*k.size, s.SlotBytes()))
	}
	for off := 0; ; {
		c := min(per, m-off)
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		mine := segView[T](s.Slot(me, half))
		for q := range p {
			k.put(mine[q*c:(q+1)*c], send[q*m+off:q*m+off+c])
		}
		op.In()
		if err := op.WaitIn(); err != nil {
			return k.wrap(-1, err)
		}
		part := recv[off : off+c]
		k.take(part, segView[T](s.Slot(0, half))[me*c:(me+1)*c])
		if err := k.combine(part, s, half, me*c, (me+1)*c, 0); err != nil {
			return err
		}
		// Nobody waits for this round's Done: the next In says it.
		if off += c; off >= m {
			return k.segFinish(&op)
		}
	}
}

// barrierShm exchanges empty fast lines: every rank waits for every other.
func barrierShm(k *call[uint8]) error {
	s := k.c.Segment()
	if s == nil {
		return nil
	}
	return k.overLines(s, nil, core.FromAll, func([][]byte) error { return nil })
}

// allgatherViews is an Allgather of mine, as many bytes from every rank,
// that hands every rank's part to use where it lies in the segment
// instead of copying it out: parts[r] is rank r's slot, this rank's
// included, valid until use returns, when the rank moves on and the
// others may write their slots again. The object helpers decode or fold
// the values there, which saves copying every part out of the slots and
// this rank's into the result. It runs only where c's Allgather goes
// through its segment and mine fits one of its rounds (a slot, at most
// gatherRound) but not a fast line, and reports whether it ran; every
// rank decides alike, by the length that all of them gather. What use
// finds wrong is its own to keep: the call's error is the Allgather's.
//
// Two ranks' AllreduceObjects took 6.15, 18.7 and 33.8 µs this way at
// 64, 256 and 512 KiB against 7.0, 22.7 and 49.9 through Allgather (the
// mean call, four alternating rounds, 2026-11-28, in the host's fast
// state); but 1 MiB ones 172-182 against 153-163, when the part filled a
// slot of 1 MiB: each rank's put and fold then no longer stayed in its
// caches.
func allgatherViews(ctx context.Context, c *comm.Comm, mine []byte, opts []Option, use func(parts [][]byte)) (ran bool, err error) {
	var k call[byte]
	if err := prepare(&k, ctx, c, wire.KindAllgather, codec.Op{}, c.Size()*len(mine), -1, opts); err != nil {
		return true, err
	}
	s := k.c.Segment()
	if k.me.Algorithm != Shm || s == nil || len(mine) <= core.FastBytes || len(mine) > min(s.SlotBytes(), gatherRound) {
		return false, nil
	}
	if err = k.start(); err != nil {
		return true, err
	}
	defer k.leave(&err)
	var op core.SegmentOp
	if err := k.segBeginDirect(&op, s, nil, nil, -1); err != nil {
		return true, err
	}
	defer k.endOp(&op)
	half, err := op.Next()
	if err != nil {
		return true, k.wrap(-1, err)
	}
	n := len(mine)
	k.put(s.Slot(s.Rank(), half)[:n], mine)
	op.In()
	if err := op.WaitIn(); err != nil {
		return true, k.wrap(-1, err)
	}
	parts := make([][]byte, s.Size())
	for r := range parts {
		parts[r] = s.Slot(r, half)[:n:n]
	}
	k.t.Received += uint64((len(parts) - 1) * n)
	use(parts)
	return true, k.segFinish(&op)
}
