//go:build !netpoll

package tcp

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/race"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/internal/linkerr"
	"github.com/gocoll/gocoll/internal/wire"
)

// sockReader reads the messages of a plain TCP connection with
// non-blocking system calls on its socket, through a buffer of its own.
// Whoever holds the link's reading side can therefore look for a message
// and take it without parking (poll). Reads park only in the wait their
// caller passes, and waitReadable parks reading nothing, so the link's
// reading goroutine can wait there without holding the reading side.
//
// The system calls go through the socket's RawConn.Control, which holds
// a reference to the descriptor: it cannot be closed and reused under
// the call.
type sockReader struct {
	sock      *socket
	buf       []byte // buf[r:w] arrived and not yet taken
	r, w      int
	remaining uint64 // payload bytes of the current message not yet taken
	err       error  // the first error the stream gave; every later read returns it

	// The header at buf[peekedAt:], decoded by a peek (Poll) that did
	// not take it; peekedAt is -1 when there is none. ReadHeader then
	// takes it without decoding it again. Moving the unread bytes (fill)
	// moves r, which then no longer matches.
	peekedHdr wire.Header
	peekedAt  int

	// The system calls' argument and results, and the callbacks that make
	// them, bound once so that a read allocates nothing.
	dst     []byte
	n       int
	errno   syscall.Errno
	pfd     unix.PollFd
	zero    unix.Timespec
	readFn  func(fd uintptr)
	checkFn func(fd uintptr) // the method value of check
	ready   bool             // check's result
	countFn func(fd uintptr) // the method value of countQueued
	inq     int32            // countQueued's result
}

// errWouldBlock says that a non-blocking read found nothing.
var errWouldBlock = errors.New("tcp: nothing to read yet")

func newSockReader(sock *socket, size int) *sockReader {
	s := &sockReader{sock: sock, buf: make([]byte, size), peekedAt: -1}
	s.readFn = s.readNow
	s.checkFn = s.check
	s.countFn = s.countQueued
	return s
}

func (s *sockReader) check(fd uintptr) { s.ready = s.readable(fd) }

// countQueued stores in inq how many bytes the socket holds (SIOCINQ).
func (s *sockReader) countQueued(fd uintptr) {
	s.inq = 0
	if _, _, errno := unix.RawSyscall(unix.SYS_IOCTL, fd, unix.SIOCINQ, uintptr(unsafe.Pointer(&s.inq))); errno != 0 {
		s.inq = 0
	}
}

// queued returns how many bytes the socket holds that the buffer has not
// taken yet; 0 when it cannot tell.
func (s *sockReader) queued() uint64 {
	if s.sock.raw.Control(s.countFn) != nil {
		return 0
	}
	return uint64(max(s.inq, 0))
}

// readableNow reports, without blocking, whether the socket holds
// something (bytes, its end, an error).
func (s *sockReader) readableNow() bool {
	s.ready = false
	if err := s.sock.raw.Control(s.checkFn); err != nil {
		return true // the read that follows reports it
	}
	return s.ready
}

// readNow reads without blocking (the socket is in blocking mode: see
// socket). It uses a raw system call, which the
// runtime does not see: a read that cannot block never takes long, and a
// system call the runtime sees hands the processor to another thread
// when the read seems slow to the runtime's monitor, which costs two
// context switches.
func (s *sockReader) readNow(fd uintptr) {
	var p unsafe.Pointer
	if len(s.dst) > 0 {
		p = unsafe.Pointer(&s.dst[0])
	}
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(p), uintptr(len(s.dst)), unix.MSG_DONTWAIT, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		s.n, s.errno = int(n), errno
		if errno != 0 {
			s.n = 0
		}
		if race.Enabled {
			race.WriteSlice(s.dst[:s.n]) // what recvfrom wrote
		}
		return
	}
}

// readable reports whether the socket holds bytes, its end or an error,
// asking poll(2) with a zero timeout.
func (s *sockReader) readable(fd uintptr) bool {
	s.pfd = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&s.pfd)), 1,
			uintptr(unsafe.Pointer(&s.zero)), 0, 0, 0)
		if errno != unix.EINTR {
			return errno != 0 || n > 0 // an error: the read that follows reports it
		}
	}
}

// read reads what the socket holds into p, up to rawCallMax bytes, without
// blocking: errWouldBlock when it holds nothing, io.EOF at its end.
func (s *sockReader) read(p []byte) (int, error) {
	s.dst = p[:min(len(p), rawCallMax)]
	err := s.sock.raw.Control(s.readFn)
	s.dst = nil
	switch {
	case err != nil:
		return 0, err
	case s.errno == unix.EAGAIN:
		return 0, errWouldBlock
	case s.errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", s.errno)}
	case s.n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return s.n, nil
}

// discardUnread reads and drops what the socket holds, without blocking,
// up to discardMax bytes, before the link closes it: a TCP socket closed
// with bytes it has not read resets the connection, and a reset throws
// away what this end has not sent yet (a goodbye, the end of a large
// message), where closing it empty sends all of that and then its end. A
// reader busy on the socket at the same time may take some of the bytes;
// it fails anyway once the link is closed. It uses its own buffer, not
// the reader's.
func (s *sockReader) discardUnread() {
	buf := make([]byte, 64<<10)
	_ = s.sock.raw.Control(func(fd uintptr) {
		for range discardMax / len(buf) {
			n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
				unix.MSG_DONTWAIT, 0, 0)
			if errno != 0 && errno != unix.EINTR || errno == 0 && n == 0 {
				return
			}
		}
	})
}

// fill reads what the socket holds into the free end of the buffer,
// first moving the unread bytes to its front when that makes room.
func (s *sockReader) fill() error {
	if s.r > 0 && (s.w == len(s.buf) || s.r == s.w) {
		s.w = copy(s.buf, s.buf[s.r:s.w])
		s.r = 0
	}
	if s.w == len(s.buf) {
		return nil
	}
	n, err := s.read(s.buf[s.w:])
	s.w += n
	return err
}

func (s *sockReader) buffered() int { return s.w - s.r }

// fail records err as the stream's error: the first one stands.
func (s *sockReader) fail(err error) error {
	if s.err == nil {
		s.err = err
	}
	return s.err
}

// skip discards what is left of the current message's payload, without
// blocking: errWouldBlock when some of it has not arrived.
func (s *sockReader) skip() error {
	for s.remaining > 0 {
		if s.buffered() == 0 {
			if err := s.fill(); err != nil {
				return err
			}
			continue
		}
		n := int(min(s.remaining, uint64(s.buffered())))
		s.r += n
		s.remaining -= uint64(n)
	}
	return nil
}

// peekHeader decodes the next header into h without taking it, reading
// without blocking: errWouldBlock when it has not all arrived.
func (s *sockReader) peekHeader(h *wire.Header) error {
	if err := s.skip(); err != nil {
		return err
	}
	for s.buffered() < wire.HeaderSize {
		if err := s.fill(); err != nil {
			return err
		}
	}
	if s.peekedAt == s.r {
		*h = s.peekedHdr
		return nil
	}
	if err := h.Unmarshal((*[wire.HeaderSize]byte)(s.buf[s.r : s.r+wire.HeaderSize])); err != nil {
		return err
	}
	s.peekedHdr, s.peekedAt = *h, s.r
	return nil
}

// poll is Poller.Poll, less the link's checks: closed or not, and naming
// a bad header's peer.
func (s *sockReader) poll(h *wire.Header) (transport.Arrival, error) {
	if s.err != nil {
		return transport.Nothing, s.err
	}
	switch err := s.peekHeader(h); {
	case err == errWouldBlock:
		return transport.Nothing, nil
	case err != nil:
		return transport.Nothing, err
	}
	size := wire.HeaderSize + h.Length
	if size > uint64(len(s.buf)) {
		// Larger than the buffer: whole when the rest waits in the
		// socket, so that reading it cannot block.
		if uint64(s.buffered())+s.queued() >= size {
			return transport.Whole, nil
		}
		return transport.Large, nil
	}
	if uint64(s.buffered()) < size {
		if err := s.fill(); err != nil && err != errWouldBlock {
			return transport.Nothing, err
		}
		if uint64(s.buffered()) < size {
			return transport.Partial, nil
		}
	}
	return transport.Whole, nil
}

// atEnd turns the end of the stream into io.ErrUnexpectedEOF unless it
// came at a message boundary.
func (s *sockReader) atEnd(err error) error {
	if err == io.EOF && (s.buffered() > 0 || s.remaining > 0) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readHeader is ReadHeader: peekHeader, waiting in wait whenever the
// socket has nothing more yet.
func (s *sockReader) readHeader(h *wire.Header, wait func() error) error {
	if s.err != nil {
		return s.err
	}
	for {
		err := s.peekHeader(h)
		switch {
		case err == nil:
			s.r += wire.HeaderSize
			s.remaining = h.Length
			s.peekedAt = -1
			return nil
		case err != errWouldBlock:
			if errors.Is(err, wire.ErrBadHeader) {
				return err // the link names it, and closes
			}
			return s.fail(s.atEnd(err))
		}
		if err := wait(); err != nil {
			return err
		}
	}
}

// readPayload is ReadPayload: the buffered bytes first, then large reads
// straight into p, small ones through the buffer so that they pick up
// what follows too, waiting in wait whenever the socket has nothing more
// yet.
func (s *sockReader) readPayload(p []byte, wait func() error) error {
	if s.err != nil {
		return s.err
	}
	if uint64(len(p)) > s.remaining {
		return linkerr.Overrun("tcp", len(p), s.remaining)
	}
	for len(p) > 0 {
		if s.buffered() > 0 {
			n := copy(p, s.buf[s.r:s.w])
			s.r += n
			s.remaining -= uint64(n)
			p = p[n:]
			continue
		}
		var err error
		if len(p) >= len(s.buf)/2 {
			var n int
			n, err = s.read(p)
			s.remaining -= uint64(n)
			p = p[n:]
		} else {
			err = s.fill()
		}
		switch {
		case err == errWouldBlock:
			if err := wait(); err != nil {
				return err
			}
		case err == io.EOF:
			return s.fail(io.ErrUnexpectedEOF)
		case err != nil:
			return s.fail(err)
		}
	}
	return nil
}

// waitReadable parks until the socket holds something (bytes, its end, an
// error) or its wait is interrupted, which is how Wake ends it.
func (s *sockReader) waitReadable() error { return s.sock.readable.wait() }
