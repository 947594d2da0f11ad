// Package handshakes keeps the connections a listener holds in their
// handshake, so that it can bound them: when one more arrives than the
// bound allows, the listener cuts the one that has waited longest. A
// flood of connections that never finish their handshake then costs a
// bounded number of goroutines and descriptors, and a real peer, whose
// handshake takes a round trip or two, is not starved: only the flood's
// own connections grow old enough to be cut. The links' listeners and the
// rendezvous server both keep one.
package handshakes

import "net"

// A Set holds connections by arrival. The zero Set is empty and ready;
// its owner's mutex guards it.
type Set struct {
	conns map[net.Conn]uint64 // by arrival number
	seq   uint64              // the last arrival number
}

// Add adds c, the latest arrival.
func (s *Set) Add(c net.Conn) {
	if s.conns == nil {
		s.conns = make(map[net.Conn]uint64)
	}
	s.seq++
	s.conns[c] = s.seq
}

// Remove removes c and reports whether it was there: false when it was
// cut.
func (s *Set) Remove(c net.Conn) bool {
	_, ok := s.conns[c]
	delete(s.conns, c)
	return ok
}

// Len is the number of connections held.
func (s *Set) Len() int { return len(s.conns) }

// CutOldest closes and removes the connection that arrived first, and
// returns it; its handshake then fails. The Set must not be empty.
func (s *Set) CutOldest() net.Conn {
	var oldest net.Conn
	var first uint64
	for c, seq := range s.conns {
		if oldest == nil || seq < first {
			oldest, first = c, seq
		}
	}
	delete(s.conns, oldest)
	oldest.Close()
	return oldest
}

// CloseAll closes every connection held, which ends their handshakes.
func (s *Set) CloseAll() {
	for c := range s.conns {
		c.Close()
	}
}
