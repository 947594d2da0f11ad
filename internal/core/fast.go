package core

// Fast lines. A small operation moves its data with its call: each rank
// has two lines of its own in the segment (segLine bytes, the two cache
// lines that the adjacent-line prefetcher fetches together), used by
// turns (the ticket's parity), into which it writes its data and then
// its call, the ticket last; the others wait for that ticket in the line
// and find the call and the data in the line they polled, one cache-line
// transfer per rank instead of a step, a record and a slot. A line is
// written again two operations later, by which time every rank has read
// it: a rank begins an operation only once every rank has begun the one
// before it, so that none still reads the operation before that. An
// operation that waits for every rank's line (Exchange with FromAll), or
// for every rank's step or record (Finish, Direct), ends only after every
// rank has begun it; after one that did not, the next operation's Begin
// waits until every rank has begun it and compares its calls (settle).
// Those are an Exchange from one rank or from none, and a rank's part of
// a single copy that waited for its root only: a Gather's sender or a
// Scatter's receiver that copied once and left. Before settle
// covered the latter, a rank of four on two CPUs that was slow in a
// Barrier read another's line of the Barrier two operations on, past a
// Gather whose sender had copied once, as its line of the Barrier it was
// in, and failed the job with a mismatch (2026-11-30); a line that
// carried data would have given the later operation's data.
//
//	0    the ticket (stored last), then the call as a record has it
//	32   the data, at most FastBytes
const fastData = 32

// FastBytes is the most data a rank can put in its fast line (Exchange).
const FastBytes = segLine - fastData

// fastLine is rank r's line for the operation with ticket t.
func (s *Segment) fastLine(r int, t uint64) []byte {
	at := segFastAt(s.ranks) + (2*r+int(t%2))*segLine
	return s.mem[at : at+segLine : at+segLine]
}

// Whose lines an operation through the fast lines waits for (Exchange):
// every rank's, or none but this rank's own, or else one rank's.
const (
	FromAll  = -1
	FromNone = -2
)

// Exchange runs the operation through the fast lines: it writes data (at
// most FastBytes) and the call into this rank's line, waits until the
// ranks that from names (FromAll, FromNone or one rank) have written
// their lines for the operation, compares their calls with this rank's,
// and returns every rank's line data: lines[r] is rank r's data area,
// FastBytes long, of which the caller knows how much the call filled, and
// which it may read for the ranks waited for only. The lines stay valid
// until this rank's next operation but one.
//
// An operation that does not wait for every rank returns as soon as the
// ranks it needs have written, and the calls of the others are compared
// when this rank begins its next operation, before it writes anything:
// a rank that only sends (a Bcast's root, say) then learns of a
// disagreement in its next call, as without receipts over links.
func (op *SegmentOp) Exchange(data []byte, from int) ([][]byte, error) {
	s, me := op.s, op.s.c.rank
	mine := s.fastLine(me, op.ticket)
	copy(mine[fastData:], data)
	putCall(mine, op.ticket, op.seq, op.call)
	s.bell().Ring()
	for r := range s.ranks {
		line := s.fastLine(r, op.ticket)
		s.lines[r] = line[fastData:]
		if r == me || from != FromAll && r != from {
			continue
		}
		if w := recordTicket(line); w.Load() < op.ticket {
			if err := op.spin(r, w, op.ticket); err != nil {
				return nil, err
			}
		}
		// The line holds the call: when every earlier operation was
		// compared with r, comparing this one reads nothing more.
		if theirs, seq, _ := getCall(line); s.seen[r]+1 == op.ticket && seq == op.seq && theirs == op.call {
			s.seen[r] = op.ticket
		} else if err := op.compare(r); err != nil {
			return nil, err
		}
	}
	op.allBegun = from == FromAll
	return s.lines, nil
}

// settle waits until every rank has begun the operation before this one,
// which ended without this rank seeing every rank begin it, and compares
// their calls of it with this rank's: it runs before this operation
// writes anything. A rank has begun an operation once its line of it
// (through the fast lines) or its record of it (through the segment)
// holds its ticket or a later one; either way its call is there until
// it writes its line or record of the operation after this one, which it
// cannot do before this rank has begun this one. A rank whose call of
// that operation differs from this rank's may have run it the other way,
// so both are looked at: the comparison then fails the job.
func (op *SegmentOp) settle() error {
	s, t := op.s, op.ticket-1
	for r := range s.ranks {
		if r == s.c.rank || s.seen[r] >= t {
			continue
		}
		rec, line := recordTicket(s.record(r, t)), recordTicket(s.fastLine(r, t))
		if rec.Load() < t && line.Load() < t {
			if err := op.spinOr(r, rec, line, t); err != nil {
				return err
			}
		}
		if err := op.compareThrough(r, t); err != nil {
			return err
		}
	}
	return nil
}
