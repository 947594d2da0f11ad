//go:build linux

package shm

import (
	"errors"
	"io"
	"time"

	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// Polling (transport.Poller). A link is read by one goroutine at a time,
// and that need not be a goroutine that does nothing else: a caller that
// waits for a message can look at the ring itself, as it reads its tcp
// socket, and take what has arrived. That leaves one goroutine of the
// process polling the link instead of two, the link's reader and the
// caller that waits for what the reader hands it: with two processes of
// two links each on two CPUs, four pollers took 40 % of both CPUs in a
// 1 MiB ping-pong (2026-11-28), and every message paid a goroutine's
// wake-up on the way to its caller.

var _ transport.Poller = (*link)(nil)

// errWoken ends a WaitReadable that Wake interrupted.
var errWoken = errors.New("woken")

// Poll tells how much of the next message has arrived, without blocking;
// see transport.Poller. A message whose ring bytes have all arrived is
// Whole, its part in the writer's memory (CMA) included, which
// process_vm_readv reads at once; one whose first chunks have is
// Streaming.
func (l *link) Poll(h *wire.Header) (transport.Arrival, error) {
	if !l.enter(&l.rusers) {
		return transport.Nothing, l.closedErr("read")
	}
	defer l.exit(&l.rusers)
	l.sawTail(l.in.tail.Load())
	if l.remaining > 0 {
		// The rest of the message before, which ReadHeader skips first:
		// at once where its ring bytes are all there.
		if l.rtail-l.rhead < l.inline {
			return transport.Partial, nil
		}
		if err := l.skip(); err != nil {
			return transport.Nothing, err
		}
	}
	avail := l.rtail - l.rhead
	if avail < recordSize {
		if l.theirs.Load() != sideOpen && l.in.tail.Load() == l.rtail {
			// What ReadHeader would return: the peer published its last
			// bytes before it went.
			if avail == 0 {
				return transport.Nothing, io.EOF
			}
			return transport.Nothing, io.ErrUnexpectedEOF
		}
		return transport.Nothing, nil
	}
	l.in.get(l.rhead, l.rrec[:])
	_, inline, err := l.decodeRecord(h)
	switch {
	case err != nil:
		return transport.Partial, nil // ReadHeader fails on it
	case avail >= recordSize+inline:
		return transport.Whole, nil
	case recordSize+inline > l.size:
		return transport.Large, nil
	}
	// The writer publishes what it has copied every chunk: it is at it.
	return transport.Streaming, nil
}

// Holds reports whether bytes of a next message are in the ring, which
// a look finds without a system call; see transport.Poller.
func (l *link) Holds() bool { return l.in.tail.Load() != l.rhead }

// WaitReadable waits until bytes arrive that the reading side has not
// seen, Wake is called, or the link fails; see transport.Poller. It
// polls for the reader's spin window, then parks until the writer
// knocks. When the peer is gone it returns nil: the next Poll says how.
func (l *link) WaitReadable() error {
	if !l.enter(&l.rusers) {
		return l.closedErr("read")
	}
	defer l.exit(&l.rusers)
	// The reading side's own fields belong to whoever reads (a caller
	// may be at it): seen is their copy of what it saw last. Bytes that
	// a spinning caller has seen, it takes; waking for them would only
	// have the reading goroutine contend with it for the link.
	_, err := l.pwait.Wait(l.in.tail, l.seen.Load(), 1, l.in.consumer, shmem.ToGoroutines, l.readableStop)
	// A Wake is spent once a wait returns, whatever ended it: the
	// reading side looks at the ring next. (The Waiter may ask stop
	// more than once before it returns, so stop leaves the mark.)
	l.woken.Store(false)
	if err == errLocalClosed {
		return l.closedErr("read")
	}
	return nil
}

// stopReadable is what ends a WaitReadable besides an arrival.
func (l *link) stopReadable() error {
	if l.woken.Load() {
		return errWoken
	}
	return l.stopped(nil)
}

// Wake makes a WaitReadable in progress, or the next one, return.
func (l *link) Wake() {
	l.woken.Store(true)
	l.knocks.readable.Wake()
}

// OnWriteBlock sets a function that a write calls each time it parks,
// waiting for the reader: for room in the ring, or to be done with a CMA
// payload.
func (l *link) OnWriteBlock(f func()) { l.onWriteBlock = f }

// SetSpin sets how long a read that waits for more of a message, and
// WaitReadable, poll before they park: never less than the link's own spinFor, the
// microseconds in which a running peer answers. The Waiter finds out by
// itself whether it must yield the CPU to other processes.
func (l *link) SetSpin(d time.Duration, yield bool) {
	l.rwait.SetSpin(max(d, spinFor))
	l.pwait.SetSpin(max(d, spinFor))
}
