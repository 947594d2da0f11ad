package core

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/gocoll/gocoll/internal/regmem"
)

// Direct operations. Where every rank's buffers of a segment operation lie
// in registered memory (package regmem), each rank can map the others'
// and the collective can move data straight between them, without
// copying through the segment's slots. Each rank records, with its call,
// where its buffers are (Begin); the ranks whose own buffers are
// registered wait for every rank's record and go direct when all are,
// the others take the slots at once, so all of them choose alike.
//
// A call record is followed by the extents of its rank's buffers and a
// word that says whether all of them are registered, then what a single
// copy needs (single.go):
//
//	32 + 56·i  extent i (i < 2): serial, descriptor, device, inode,
//	           file size, offset, length; serial 0: no buffer
//	144        1 when every buffer of the rank is registered
//	152 + 16·i buffer i's address in its rank's process, and length
//	184        the way the deciding rank chose (its record only)
//	192        how long the rank's part of a timed operation took, in
//	           nanoseconds; 0 until it is over (single.go)
const (
	recExtents = 32
	recExtent  = 56
	recDirect  = recExtents + 2*recExtent
	recAddrs   = recDirect + 8
	recWay     = recAddrs + 2*16
	recTook    = recWay + 8
)

// recordTicket is the ticket word of a call record, which its rank
// stores last.
func recordTicket(b []byte) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&b[0])) }

// recordTook is the word of a call record that says how long its rank's
// part of a timed operation took (single.go).
func recordTook(b []byte) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&b[recTook])) }

// putBuffers finds this rank's buffers in its registered memory, pins
// them, and records where they are in rec.
func (op *SegmentOp) putBuffers(rec []byte, bufs [2][]byte) {
	le := binary.LittleEndian
	for i, b := range bufs {
		le.PutUint64(rec[recAddrs+16*i:], uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
		le.PutUint64(rec[recAddrs+16*i+8:], uint64(len(b)))
	}
	op.direct = len(bufs[0]) > 0 || len(bufs[1]) > 0
	var ext [2]regmem.Extent
	for i, b := range bufs {
		if len(b) == 0 {
			continue
		}
		e, pin, ok := regmem.Find(b)
		if !ok {
			op.direct = false
			break
		}
		ext[i], op.pins[i] = e, pin
	}
	if !op.direct {
		// Nobody reads the extents of a rank that does not go direct.
		op.unpin()
		le.PutUint64(rec[recDirect:], 0)
		return
	}
	op.own = bufs
	for i, e := range ext {
		b := rec[recExtents+i*recExtent : recExtents+(i+1)*recExtent]
		le.PutUint64(b[0:], e.Serial)
		le.PutUint64(b[8:], uint64(e.FD))
		le.PutUint64(b[16:], e.ID.Dev)
		le.PutUint64(b[24:], e.ID.Ino)
		le.PutUint64(b[32:], uint64(e.Size))
		le.PutUint64(b[40:], uint64(e.Off))
		le.PutUint64(b[48:], uint64(e.Len))
	}
	le.PutUint64(rec[recDirect:], 1)
}

// getBuffer reads extent i of a call record.
func getBuffer(rec []byte, i int) regmem.Extent {
	le := binary.LittleEndian
	b := rec[recExtents+i*recExtent : recExtents+(i+1)*recExtent]
	var e regmem.Extent
	e.Serial = le.Uint64(b[0:])
	e.FD = int(int32(le.Uint64(b[8:])))
	e.ID.Dev, e.ID.Ino = le.Uint64(b[16:]), le.Uint64(b[24:])
	e.Size, e.Off, e.Len = int(le.Uint64(b[32:])), int(le.Uint64(b[40:])), int(le.Uint64(b[48:]))
	return e
}

// Direct reports whether every rank's buffers of the operation lie in
// registered memory and, if they do, returns those of the ranks this
// rank uses, peer's or with peer -1 everyone's: bufs[r][i] is rank r's
// buffer i, mapped into this process (this rank's as given to
// Begin), until End. Every rank gets the same answer. A rank whose
// own buffers are not all registered answers at once; the others wait
// until every rank has recorded its call, compare the calls, and map the
// buffers. A rank whose buffers others use must stay in the operation
// until they are done with them (WaitDone); a rank that uses nobody's
// may be gone, and its memory with it, once it has published its record.
func (op *SegmentOp) Direct(peer int) (bufs [][2][]byte, ok bool, err error) {
	if !op.direct {
		return nil, false, nil
	}
	s, me := op.s, op.s.c.rank
	for r := range s.ranks {
		if r == me {
			continue
		}
		if err := op.waitRecord(r); err != nil {
			return nil, false, err
		}
		if binary.LittleEndian.Uint64(s.record(r, op.ticket)[recDirect:]) != 1 {
			return nil, false, nil
		}
	}
	op.allBegun = true
	op.mapped = true
	s.directOps.Add(1)
	for r := range s.ranks {
		rec := s.record(r, op.ticket)
		for i := range 2 {
			e := getBuffer(rec, i)
			switch {
			case e.Serial == 0 || peer >= 0 && r != peer && r != me:
				s.direct[r][i] = nil
			case r == me:
				s.direct[r][i] = op.own[i]
			default:
				b, v, err := regmem.Map(s.pids[r], e)
				if err != nil {
					// The others go direct and would wait for this rank.
					err = fmt.Errorf("rank %d's buffer of the shared-memory %s: %w", s.c.group[r], op.call, err)
					s.c.ep.abort(err)
					return nil, false, err
				}
				s.direct[r][i], s.views[r][i] = b, v
			}
		}
	}
	return s.direct, true, nil
}

// waitRecord waits until rank r has recorded its call of the operation,
// and compares it with this rank's.
func (op *SegmentOp) waitRecord(r int) error {
	if w := recordTicket(op.s.record(r, op.ticket)); w.Load() < op.ticket {
		if err := op.spin(r, w, op.ticket); err != nil {
			return err
		}
	}
	return op.compare(r)
}

// unpin releases this rank's pins and the mappings Direct made.
func (op *SegmentOp) unpin() {
	for i := range op.pins {
		op.pins[i].Release()
		op.pins[i] = regmem.Pin{}
	}
	if !op.mapped {
		return
	}
	op.mapped, op.own = false, [2][]byte{}
	s := op.s
	for r := range s.views {
		for i, v := range s.views[r] {
			if v != nil {
				v.Release()
				s.views[r][i] = nil
			}
			s.direct[r][i] = nil
		}
	}
}

// DirectOps is how many of the segment's operations went direct.
func (s *Segment) DirectOps() uint64 { return s.directOps.Load() }
