//go:build !linux || netpoll

package tcp

import (
	"errors"
	"net"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// Outside Linux (or built with the netpoll tag) a plain TCP link reads
// and writes its connection as a TLS link does, through the runtime's netpoller: a received message
// then goes from the link's reading goroutine to its caller, which costs
// a goroutine hand-off that Linux's polled sockets avoid. No link has
// the socket types below; they let link.go compile.

// polled says that plain TCP links are polled (pollLink).
const polled = false

func newPollLink(l *link, tc *net.TCPConn, readBuf int) (transport.Link, error) {
	return l.overStream(tc, readBuf), nil
}

type (
	socket     struct{ writable readiness }
	readiness  struct{}
	sockReader struct{}
	sockWriter struct{}
)

var errNoSocket = errors.New("tcp: no polled socket outside Linux")

func (*socket) close() error                                    { return errNoSocket }
func (readiness) interrupt()                                    {}
func (readiness) clear() error                                  { return errNoSocket }
func (*sockReader) readHeader(*wire.Header, func() error) error { return errNoSocket }
func (*sockReader) readPayload([]byte, func() error) error      { return errNoSocket }
func (*sockReader) discardUnread()                              {}
func (*sockWriter) write(hdr, head, body []byte) (int64, error) { return 0, errNoSocket }
