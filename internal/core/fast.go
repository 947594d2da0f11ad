package core

// Fast lines. A small operation moves its data with its call: each rank
// has two lines of its own in the segment (segLine bytes, the two cache
// lines that the adjacent-line prefetcher fetches together), used by
// turns (the ticket's parity), into which it writes its data and then
// its call, the ticket last; the others wait for that ticket in the line
// and find the call and the data in the line they polled, one cache-line
// transfer per rank instead of a step, a record and a slot. A line is
// written again two operations later, by which time every rank has read
// it: no operation ends on a rank before every rank has begun it
// (Exchange waits for every line, Finish and Direct for every rank), so
// a rank that begins the operation after next has seen every rank begin
// the next one, done with this one.
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

// Exchange runs the operation through the fast lines: it writes data (at
// most FastBytes) and the call into this rank's line, waits until every
// rank has written its line for the operation, compares their calls with
// this rank's, and returns every rank's line data: lines[r] is rank r's
// data area, FastBytes long, of which the caller knows how much the call
// filled. The lines stay valid until this rank's next operation but one.
func (op *SegmentOp) Exchange(data []byte) ([][]byte, error) {
	s, me := op.s, op.s.c.rank
	mine := s.fastLine(me, op.ticket)
	copy(mine[fastData:], data)
	putCall(mine, op.ticket, op.seq, op.call)
	s.bell().Ring()
	for r := range s.ranks {
		line := s.fastLine(r, op.ticket)
		s.lines[r] = line[fastData:]
		if r == me {
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
	return s.lines, nil
}
