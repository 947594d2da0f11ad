//go:build !netpoll

package tcp

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// polled says that plain TCP links are polled (pollLink).
const polled = true

// newPollLink makes l a link over tc's socket, taken out of the
// netpoller, which l reads itself: a pollLink.
func newPollLink(l *link, tc *net.TCPConn, readBuf int) (transport.Link, error) {
	sock, err := detach(tc)
	if err != nil {
		return nil, err
	}
	l.sock = sock
	l.sockr = newSockReader(sock, readBuf)
	l.sockw = newSockWriter(sock)
	l.sockw.blocked = l.writeBlocked
	l.wait = l.waitMore
	return pollLink{l}, nil
}

// writeBlocked runs each time a write over plain TCP finds the socket
// full, before it parks: from then on the end of the write's context
// interrupts the write.
func (l *link) writeBlocked() {
	if l.writeCtx != nil && l.stopWatch == nil {
		l.stopWatch = context.AfterFunc(l.writeCtx, l.interrupt)
	}
	if l.onWriteBlock != nil {
		l.onWriteBlock()
	}
}

// waitMore waits until the socket may have more of the message being
// read. The rest is on its way, so for the spin window it lets this
// process's other goroutines run (a writer among them) and looks again,
// before it parks.
func (l *link) waitMore() error {
	until := time.Now().Add(l.spin)
	for time.Now().Before(until) {
		runtime.Gosched()
		if l.yield {
			transport.YieldCPU()
		}
		if l.sockr.readableNow() {
			return nil
		}
	}
	return l.park()
}

// park parks until the socket may have more for the reader. A Wake ends
// it like an arrival: the caller looks again.
func (l *link) park() error {
	err := l.sockr.waitReadable()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = l.sock.readable.clear()
	}
	if err != nil {
		return l.ifClosed("read", err)
	}
	return nil
}

// pollLink is a link over plain TCP, whose messages can be polled for.
type pollLink struct{ *link }

var _ transport.Poller = pollLink{}

// Holds reports whether the link's buffer holds bytes of a next message;
// see transport.Poller.
func (l pollLink) Holds() bool { return l.sockr.buffered() > 0 }

// Poll tells how much of the next message has arrived without blocking;
// see transport.Poller.
func (l pollLink) Poll(h *wire.Header) (transport.Arrival, error) {
	if err := l.checkOpen(); err != nil {
		return transport.Nothing, err
	}
	a, err := l.sockr.poll(h)
	return a, l.readFailed(err)
}

// SetSpin sets how long a read that waits for more of a message looks
// again before it parks, and whether it yields the CPU between looks; see
// transport.Poller.
func (l pollLink) SetSpin(d time.Duration, yield bool) { l.spin, l.yield = d, yield }

// WaitReadable parks until bytes may have arrived, Wake is called or the
// link fails; see transport.Poller.
func (l pollLink) WaitReadable() error {
	if err := l.checkOpen(); err != nil {
		return err
	}
	return l.park()
}

// Wake makes a WaitReadable in progress, or the next one, return: it
// interrupts the wait, which park then clears.
func (l pollLink) Wake() { l.sock.readable.interrupt() }

// OnWriteBlock sets a function that a write calls whenever it finds the
// socket full, before it parks; see transport.Poller.
func (l pollLink) OnWriteBlock(f func()) { l.onWriteBlock = f }
