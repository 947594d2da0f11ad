package tcp

import (
	"bufio"
	"io"

	"github.com/gocoll/gocoll/internal/transport/internal/linkerr"
	"github.com/gocoll/gocoll/internal/wire"
)

// streamReader reads the messages of a TLS connection, whose records only
// the tls package can take apart, through a bufio.Reader with blocking
// reads. Such a link is read by its reading goroutine only: it is no
// transport.Poller.
type streamReader struct {
	r         *bufio.Reader
	hdr       [wire.HeaderSize]byte
	remaining uint64 // unread payload bytes of the current message
}

func (s *streamReader) readHeader(h *wire.Header) error {
	for s.remaining > 0 {
		// In steps that fit an int on every platform.
		n, err := s.r.Discard(int(min(s.remaining, 1<<30)))
		s.remaining -= uint64(n)
		if err != nil {
			return midMessage(err)
		}
	}
	if _, err := io.ReadFull(s.r, s.hdr[:]); err != nil {
		return err
	}
	if err := h.Unmarshal(&s.hdr); err != nil {
		return err
	}
	s.remaining = h.Length
	return nil
}

func (s *streamReader) readPayload(p []byte) error {
	if uint64(len(p)) > s.remaining {
		return linkerr.Overrun("tcp", len(p), s.remaining)
	}
	n, err := io.ReadFull(s.r, p)
	s.remaining -= uint64(n)
	if err != nil {
		return midMessage(err)
	}
	return nil
}
