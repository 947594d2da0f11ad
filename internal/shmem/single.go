package shmem

// A SingleCopy chooses how the collectives of a segment move data
// between ranks' ordinary buffers: through the segment, copied into a
// slot and out again, or once, read straight out of the other rank's
// buffer with process_vm_readv (VMReader). Which is faster depends on
// the host and changes with its state: on this project's two-vCPU
// machine the two copies won in 2026-11-23's runs (a single copy made
// two-rank Bcast 1.3-3.5 times slower) and lost in 2026-11-28's, where a
// 64 KiB handoff through the segment took 8-11 µs and process_vm_readv
// of a warm 64 KiB of another process 2.4-2.8. So the rank that decides
// an operation times whole operations both ways, per kind and size
// class, from its start until every rank is done, and copies once while
// that is faster. An operation through the segment needs a wait for the
// slowest rank at its end only to be timed, so only one in slotsTimedEvery
// is. Like a Copier, it tries the way it does not take now and then.
//
// A SingleCopy is safe for concurrent use; its zero value is ready.
type SingleCopy struct{ ways twoWays }

// slotsTimedEvery: one operation through the segment in so many is timed,
// once each way has been timed twice.
const slotsTimedEvery = 4

// Choose reports whether an operation of the given kind and bytes should
// copy once, and whether it is to be timed (Learn): one that copies once
// always is.
func (s *SingleCopy) Choose(kind, bytes int) (single, timed bool) {
	single, ops := s.ways.choose(kind, bytes, 1)
	return single, single || ops <= exploreEarly || ops%slotsTimedEvery == 0
}

// Learn records that an operation of the given kind and bytes, copying
// once or through the segment, took nanos nanoseconds.
func (s *SingleCopy) Learn(kind, bytes int, single bool, nanos int64) {
	s.ways.learn(kind, bytes, single, int64(bytes), nanos, true)
}
