package collective

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
)

// The v-collectives through the segment: Allgatherv, Gatherv and
// Scatterv, whose counts a segment's call records do not hold, so that
// the ranks publish and compare them in the segment themselves.

// countBytesLine and countBytesSlot lead a rank's part of an Allgatherv
// through the segment, in its fast line or its slot of the first round:
// the rank's own count, a little-endian uint64, in as many bytes as keep
// the part aligned for any element type (a fast line's data area is
// 16-byte aligned, a slot page-aligned, and the slot's count has a cache
// line to itself).
const (
	countBytesLine = 16
	countBytesSlot = 64
)

// allgathervShm is gatherShm for Allgatherv: rank r's block has
// counts[r] elements and lands in recv after the blocks of the ranks
// before it. Every rank publishes its own count ahead of its first part
// and compares every other rank's with its counts before it reads a part
// (sameCounts), so that ranks that disagree about counts fail inside the
// call: the call record holds only their sum.
func allgathervShm[T codec.Elem](k *call[T], send, recv []T, counts []int) error {
	s := k.c.Segment()
	if s == nil {
		copy(recv, send)
		return nil
	}
	if len(recv)*k.size <= core.FastBytes-countBytesLine {
		return allgathervFast(k, s, send, recv, counts)
	}
	var op core.SegmentOp
	bufs, direct, err := k.segBegin(&op, s, send, recv, -1, 0)
	if err != nil {
		return err
	}
	defer k.endOp(&op)
	if direct {
		return allgathervDirect(k, bufs, send, recv, counts)
	}
	me, le := k.c.Rank(), binary.LittleEndian
	mineAt := countsBefore(counts, me)
	per := min(s.SlotBytes()-countBytesSlot, gatherRound) / k.size
	most := slices.Max(counts)
	for off := 0; ; off += per {
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		slot := s.Slot(me, half)
		if off == 0 {
			le.PutUint64(slot, uint64(len(send)))
		}
		lo, hi := min(off, len(send)), min(off+per, len(send))
		k.put(segView[T](slot[countBytesSlot:]), send[lo:hi])
		op.In()
		// A rank's own part needs no slot, and goes while the others
		// fill theirs.
		copy(recv[mineAt+lo:mineAt+hi], send[lo:hi])
		if err := op.WaitIn(); err != nil {
			return k.wrap(-1, err)
		}
		if off == 0 {
			if err := k.sameCounts(counts, func(r int) int { return int(le.Uint64(s.Slot(r, half))) }, sendDiffers); err != nil {
				return err
			}
		}
		at := 0
		for r, n := range counts {
			if lo, hi := min(off, n), min(off+per, n); r != me && lo < hi {
				k.take(recv[at+lo:at+hi], segView[T](s.Slot(r, half)[countBytesSlot:]))
			}
			at += n
		}
		if off+per >= most {
			return k.segFinish(&op)
		}
	}
}

// allgathervFast is allgathervShm through the fast lines, for calls
// whose whole recv fits one (so that every rank's part does, whatever
// the counts): each rank's line holds its own count, then its part.
func allgathervFast[T codec.Elem](k *call[T], s *core.Segment, send, recv []T, counts []int) error {
	var line [core.FastBytes]byte
	binary.LittleEndian.PutUint64(line[:], uint64(len(send)))
	n := copy(line[countBytesLine:], asBytes(send))
	return k.overLines(s, line[:countBytesLine+n], core.FromAll, func(lines [][]byte) error {
		if err := k.sameCounts(counts, func(r int) int { return int(binary.LittleEndian.Uint64(lines[r])) }, sendDiffers); err != nil {
			return err
		}
		at, me := 0, s.Rank()
		for r, n := range counts {
			if r == me {
				copy(recv[at:at+n], send)
			} else {
				k.take(recv[at:at+n], segView[T](lines[r][countBytesLine:]))
			}
			at += n
		}
		return nil
	})
}

// sameCounts compares the count that each other rank published for its
// own part, as published reads it, with counts, and fails the job naming
// the first rank whose count differs, as detail(rank, its count, counts'
// entry) says it.
func (k *call[T]) sameCounts(counts []int, published func(r int) int, detail func(r, got, want int) string) error {
	for r, n := range counts {
		if got := published(r); r != k.c.Rank() && got != n {
			return k.countsDiffer(r, detail(r, got, n))
		}
	}
	return nil
}

// sendDiffers is sameCounts' detail for Allgatherv, whose ranks all pass
// counts.
func sendDiffers(r, got, want int) string {
	return fmt.Sprintf("rank %d's send has %d elements, but this rank's counts[%d] is %d", r, got, r, want)
}

// countsDiffer fails the job with a mismatch with peer over counts, which
// a segment's call records do not hold: both ranks made the same call as
// far as the records tell, and detail says how their counts differ.
func (k *call[T]) countsDiffer(peer int, detail string) error {
	err := &comm.MismatchError{Rank: k.c.Rank(), Peer: peer, Local: k.me, Remote: k.me, Detail: detail}
	k.c.Abort(err)
	return k.wrap(peer, err)
}

// Gatherv and Scatterv through the segment. Only root knows the counts
// (their calls record none), so in the first round root's slot holds,
// ahead of the data area, the number of rounds and every rank's count,
// and each other rank's slot its own count: root compares every rank's
// with its counts, and each rank root's count for it with its own, so
// that both sides of a disagreement fail inside the call. Every slot of
// every round keeps the same header room, whole lines, so that the data
// stay aligned. A call records no count, so none goes direct, and none
// through the fast lines, which would take every rank knowing the total.

// vHeader is the header room of a slot of a Gatherv or Scatterv of p
// ranks.
func vHeader(p int) int { return (8 + 8*p + 63) &^ 63 }

// vPart is the elements of size bytes that a Gatherv's or Scatterv's
// slot of slot bytes carries per round behind its header; 0 where the
// header of p ranks' counts leaves no room.
func vPart(slot, p, size int) int { return max(0, min(slot, gatherRound)-vHeader(p)) / size }

// vBegin starts a Gatherv's or Scatterv's operation on s and returns
// its slots' header room and the elements a slot carries per round. It
// refuses slots that the ranks' counts fill; on any error the operation
// is over, otherwise the caller ends it (endOp).
func (k *call[T]) vBegin(op *core.SegmentOp, s *core.Segment) (hdr, per int, err error) {
	if err := k.segBeginDirect(op, s, nil, nil, -1); err != nil {
		return 0, 0, err
	}
	p := s.Size()
	hdr, per = vHeader(p), vPart(s.SlotBytes(), p, k.size)
	if per == 0 {
		k.endOp(op)
		return 0, 0, k.invalid(fmt.Errorf("%w: %s with shm among %d ranks needs segment slots of more than %d bytes, not %d",
			codec.ErrInvalid, k.me.Kind, p, vHeader(p), s.SlotBytes()))
	}
	return hdr, per, nil
}

// vRounds is the number of rounds that move counts, per elements a slot.
func vRounds(counts []int, per int) int { return max(1, (slices.Max(counts)+per-1)/per) }

// publishCounts writes rounds and counts into root's slot header.
func publishCounts(slot []byte, rounds int, counts []int) {
	le := binary.LittleEndian
	le.PutUint64(slot, uint64(rounds))
	for r, n := range counts {
		le.PutUint64(slot[8+8*r:], uint64(n))
	}
}

// rootCounts reads the number of rounds and root's count for rank r from
// root's slot header.
func rootCounts(slot []byte, r int) (rounds, count int) {
	le := binary.LittleEndian
	return int(le.Uint64(slot)), int(le.Uint64(slot[8+8*r:]))
}

// gathervShm collects counts[r] elements of each rank r's send into
// root's recv, in rank order, through the segment's slots: per round each
// rank copies the next part of its send into its slot.
func gathervShm[T codec.Elem](k *call[T], send, recv []T, counts []int, root int) error {
	s := k.c.Segment()
	if s == nil {
		copy(recv, send)
		return nil
	}
	me, le := k.c.Rank(), binary.LittleEndian
	var op core.SegmentOp
	hdr, per, err := k.vBegin(&op, s)
	if err != nil {
		return err
	}
	defer k.endOp(&op)
	// A rank chooses how to copy by what it puts, as Gather's ranks do.
	// Root knows the number of rounds from the start, the others from
	// root's first slot.
	k.chooseCopy(s, len(send)*k.size)
	rounds := 1
	if me == root {
		rounds = vRounds(counts, per)
	}
	for g, off := 0, 0; g < rounds; g, off = g+1, off+per {
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		slot := s.Slot(me, half)
		if me != root {
			if g == 0 {
				le.PutUint64(slot, uint64(len(send)))
			}
			k.put(segView[T](slot[hdr:]), send[min(off, len(send)):min(off+per, len(send))])
			op.In()
			if g == 0 {
				if err := op.WaitInOf(root); err != nil {
					return k.wrap(root, err)
				}
				var want int
				if rounds, want = rootCounts(s.Slot(root, half), me); want != len(send) {
					return k.countsDiffer(root, k.partDiffers(root, want, len(send)))
				}
			}
			continue
		}
		if g == 0 {
			publishCounts(slot, rounds, counts)
		}
		op.In()
		if g == 0 {
			at := countsBefore(counts, root)
			copy(recv[at:at+len(send)], send)
		}
		if err := op.WaitIn(); err != nil {
			return k.wrap(-1, err)
		}
		if g == 0 {
			if err := k.sameCounts(counts, func(r int) int { return int(le.Uint64(s.Slot(r, half))) }, k.partDiffers); err != nil {
				return err
			}
		}
		at := 0
		for r, n := range counts {
			if lo, hi := min(off, n), min(off+per, n); r != me && lo < hi {
				k.take(recv[at+lo:at+hi], segView[T](s.Slot(r, half)[hdr:]))
			}
			at += n
		}
	}
	return k.segFinish(&op)
}

// scattervShm sends counts[r] elements of root's send to each rank r
// through the segment's slots: per round root copies the next part of
// each rank's elements into that rank's slot. Root waits for every rank
// in the first round, to compare the count each published in its slot.
func scattervShm[T codec.Elem](k *call[T], send []T, counts []int, recv []T, root int) error {
	s := k.c.Segment()
	if s == nil {
		copy(recv, send)
		return nil
	}
	me, le := k.c.Rank(), binary.LittleEndian
	var op core.SegmentOp
	hdr, per, err := k.vBegin(&op, s)
	if err != nil {
		return err
	}
	defer k.endOp(&op)
	rounds := 1
	if me == root {
		k.chooseCopy(s, len(send)*k.size)
		rounds = vRounds(counts, per)
	}
	for g, off := 0, 0; g < rounds; g, off = g+1, off+per {
		half, err := op.Next()
		if err != nil {
			return k.wrap(-1, err)
		}
		if me != root {
			if g == 0 {
				// Its own slot's header; root writes only the data area.
				le.PutUint64(s.Slot(me, half), uint64(len(recv)))
			}
			op.In()
			if err := op.WaitInOf(root); err != nil {
				return k.wrap(root, err)
			}
			if g == 0 {
				var want int
				if rounds, want = rootCounts(s.Slot(root, half), me); want != len(recv) {
					return k.countsDiffer(root, k.partDiffers(root, want, len(recv)))
				}
			}
			if lo, hi := min(off, len(recv)), min(off+per, len(recv)); lo < hi {
				k.take(recv[lo:hi], segView[T](s.Slot(me, half)[hdr:]))
			}
			continue
		}
		if g == 0 {
			publishCounts(s.Slot(me, half), rounds, counts)
		}
		at := 0
		for r, n := range counts {
			if lo, hi := min(off, n), min(off+per, n); r != me && lo < hi {
				k.put(segView[T](s.Slot(r, half)[hdr:]), send[at+lo:at+hi])
			}
			at += n
		}
		op.In()
		if g > 0 {
			continue
		}
		at = countsBefore(counts, root)
		copy(recv, send[at:at+len(recv)])
		if err := op.WaitIn(); err != nil {
			return k.wrap(-1, err)
		}
		if err := k.sameCounts(counts, func(r int) int { return int(le.Uint64(s.Slot(r, half))) }, k.partDiffers); err != nil {
			return err
		}
	}
	return k.segFinish(&op)
}
