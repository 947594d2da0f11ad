package shmem

import "time"

// A SingleCopy chooses how the collectives of a segment move data
// between ranks' ordinary buffers: through the segment, copied into a
// slot and out again, or once, read straight out of the other rank's
// buffer with process_vm_readv (VM). Which is faster depends on
// the host and changes with its state: on this project's two-vCPU
// machine the two copies won in 2026-11-23's runs (a single copy made
// two-rank Bcast 1.3-3.5 times slower) and lost in 2026-11-28's, where a
// 64 KiB handoff through the segment took 8-11 µs and process_vm_readv
// of a warm 64 KiB of another process 2.4-2.8. So the rank that decides
// an operation times whole operations both ways, per kind and size
// class, as long as the slowest rank's part of them took, and copies
// once while that is faster. Timing an operation through the segment
// costs every rank two readings of the clock and the decider a look at
// every rank's call record, so only one in slotsTimedEvery is. Like a
// Copier, it tries the way it does not take now and then. Shared-memory
// links choose with one too, between their ring and a single copy of
// each large payload (transport/shm's WithCMAWhereFaster): the same two
// ways, a message for an operation.
//
// A SingleCopy is safe for concurrent use; its zero value is ready.
type SingleCopy struct{ ways twoWays }

// slotsTimedEvery: one operation through the segment in so many is timed,
// once each way has been timed twice.
const slotsTimedEvery = 4

// A Choice is what Choose decided for an operation, which Learn takes
// back with the operation's time.
type Choice struct {
	Single bool // copy once
	Timed  bool // time the operation, for Learn: one that copies once always is
	cold   bool // one of its way's first coldOps since the other's: its time is not learned
}

// Choose decides how an operation of the given kind and bytes copies.
// Kinds of one family, which the caller numbers, copy alike: a kind's
// first operation of a size class starts the way that the kinds of its
// family that have timed both ways of the class agree is faster, and
// tries the other at its first run (see borrow).
func (s *SingleCopy) Choose(kind, family, bytes int) Choice {
	single, ops, time, cold := s.ways.chooseWhole(kind, family, bytes)
	return Choice{Single: single, Timed: single || time || ops%slotsTimedEvery == 0, cold: cold}
}

// SetFirstReach tells s what a single copy's first reach of new
// buffers costs beyond later ones, per 4 KiB page of an operation's
// bytes (from FirstReach). Where that is more than nothing, a size
// class that has nothing to borrow does not try the single copy until
// its operations through the segment have cost as much, per KiB, as
// that first reach would: on a Zen 5 VM whose first reach costs 4-12 µs
// a page, two ranks' 16 MiB Bcasts took about 0.8 ms through the
// segment, and the first to copy once 18 ms, which a sweep's point of
// 22 operations paid in full.
func (s *SingleCopy) SetFirstReach(perPage time.Duration) {
	s.ways.mu.Lock()
	defer s.ways.mu.Unlock()
	s.ways.reach = float64(perPage) / 4
}

// LendAcrossSizes makes the kinds of family lend a clear loss of the
// single copy to their own larger size classes: a class with nothing to
// borrow from its family goes through the segment from its first
// operation where the nearest smaller class of its kind found copying
// once clearly slower, and tries copying once at its first run, the
// 32nd operation. It suits a family whose single copy wins or loses
// alike from one size to the next, as a kind's first operations of a
// size then need not time the way that loses.
func (s *SingleCopy) LendAcrossSizes(family int) {
	s.ways.mu.Lock()
	defer s.ways.mu.Unlock()
	if s.ways.lenders == nil {
		s.ways.lenders = make(map[int]bool)
	}
	s.ways.lenders[family] = true
}

// FirstReach is what SetFirstReach last set: 0 until it is called.
func (s *SingleCopy) FirstReach() time.Duration {
	s.ways.mu.Lock()
	defer s.ways.mu.Unlock()
	return time.Duration(s.ways.reach * 4)
}

// Learn records that an operation of the given kind and bytes, which
// went as c says, took nanos nanoseconds.
func (s *SingleCopy) Learn(kind, bytes int, c Choice, nanos int64) {
	if !c.cold {
		s.ways.learn(kind, bytes, c.Single, int64(bytes), nanos, true)
	}
}
