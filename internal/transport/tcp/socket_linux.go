//go:build !netpoll

package tcp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/transport/internal/handshake"
)

// A socket is a plain TCP connection taken out of the runtime's
// netpoller. The runtime registers every socket it knows for every
// arrival, for good: each arrival then costs an epoll callback in the
// kernel, and once any timer is pending or any goroutine waits in the
// netpoller, a runtime thread sleeps in epoll_wait, which every arrival
// wakes, though the caller that spins on the link has taken the message
// already. Two Go processes playing ping-pong over loopback at the
// default GOMAXPROCS took 25-36 µs a round trip that way, and 10.7 µs with
// the sockets out of the netpoller; C takes 9.8.
//
// So a link duplicates the connection's descriptor, closes the
// connection, and keeps the duplicate in blocking mode, which os.NewFile
// leaves out of the netpoller. Every system call on it polls or passes
// MSG_DONTWAIT, so none blocks. To park, a goroutine arms an epoll set
// of the link's own, which holds only the socket, for one arrival
// (EPOLLONESHOT) and waits for that set in the netpoller: the socket's
// arrivals wake nobody except while someone waits for them.
type socket struct {
	file *os.File        // the socket, in blocking mode
	raw  syscall.RawConn // file's: Control holds the descriptor for one call

	// readable and writable are what a reader and a writer park on, each
	// used by one goroutine at a time.
	readable, writable *readiness
}

// detach takes c's socket out of the netpoller; c is closed, also when
// detach fails.
func detach(c *net.TCPConn) (*socket, error) {
	s := &socket{}
	name := "tcp " + c.LocalAddr().String() + "->" + c.RemoteAddr().String()
	raw, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	fd := -1
	cerr := raw.Control(func(orig uintptr) {
		fd, err = unix.FcntlInt(orig, unix.F_DUPFD_CLOEXEC, 0)
	})
	// The duplicate holds the connection open: closing c takes its
	// descriptor out of the netpoller and sends nothing to the peer.
	c.Close()
	if cerr != nil || err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("tcp: duplicating the socket: %w", errors.Join(cerr, err))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tcp: detaching the socket: %w", err)
	}
	s.file = os.NewFile(uintptr(fd), name)
	if s.raw, err = s.file.SyscallConn(); err != nil {
		s.file.Close()
		return nil, err
	}
	if s.readable, err = newReadiness(fd, unix.EPOLLIN|unix.EPOLLRDHUP); err != nil {
		s.file.Close()
		return nil, err
	}
	if s.writable, err = newReadiness(fd, unix.EPOLLOUT); err != nil {
		s.readable.close()
		s.file.Close()
		return nil, err
	}
	return s, nil
}

// close closes the socket and its epoll sets; goroutines parked on them
// return. The descriptor itself closes when the last system call that
// holds it returns.
func (s *socket) close() error {
	s.readable.close()
	s.writable.close()
	return s.file.Close()
}

// A readiness is an epoll set that holds one socket, disarmed but while a
// goroutine waits for the socket to become ready for reading (or
// writing). The set is a pollable file in the netpoller: the goroutine
// arms the socket's entry for one event and parks in the netpoller until
// the set has it, a deadline passes (how Wake and a write's interruption
// end a wait) or the set is closed.
type readiness struct {
	file     *os.File
	raw      syscall.RawConn
	sock     int // the socket's descriptor, valid while the socket is open
	arm, off unix.EpollEvent
	got      [1]unix.EpollEvent
	armErr   syscall.Errno
	looks    int                   // ready's calls in this wait
	fired    bool                  // the set reported the event, which disarmed the entry
	armFn    func(fd uintptr)      // the method value of rearm, made once
	disarmFn func(fd uintptr)      // the method value of disarm, made once
	readyFn  func(fd uintptr) bool // the method value of ready, made once
}

func newReadiness(sock int, events uint32) (*readiness, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("tcp: epoll_create1: %w", err)
	}
	r := &readiness{
		sock: sock,
		arm:  unix.EpollEvent{Events: events | unix.EPOLLONESHOT, Fd: int32(sock)},
		// A one-shot entry with no events reports nothing until rearm
		// gives it some.
		off: unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: int32(sock)},
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, sock, &r.off); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("tcp: epoll_ctl: %w", err)
	}
	// Non-blocking, so that os.NewFile puts the set in the netpoller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	r.file = os.NewFile(uintptr(epfd), "tcp readiness")
	if r.raw, err = r.file.SyscallConn(); err != nil {
		r.file.Close()
		return nil, err
	}
	r.armFn = r.rearm
	r.disarmFn = r.disarm
	r.readyFn = r.ready
	return r, nil
}

// rearm arms the socket's entry for one event. The kernel checks the
// socket as it arms it, so an event that has happened already is not
// missed.
func (r *readiness) rearm(epfd uintptr) {
	_, _, r.armErr = unix.RawSyscall6(unix.SYS_EPOLL_CTL, epfd, unix.EPOLL_CTL_MOD, uintptr(r.sock),
		uintptr(unsafe.Pointer(&r.arm)), 0, 0)
}

// disarm takes the events away from the socket's entry.
func (r *readiness) disarm(epfd uintptr) {
	unix.RawSyscall6(unix.SYS_EPOLL_CTL, epfd, unix.EPOLL_CTL_MOD, uintptr(r.sock),
		uintptr(unsafe.Pointer(&r.off)), 0, 0)
}

// ready takes the set's event, if it has one, without blocking. It
// reports whether the wait is over: when the event came, and on any
// look after the first, which follows a wake-up.
func (r *readiness) ready(epfd uintptr) bool {
	r.looks++
	for {
		// epoll_pwait with no signal mask is epoll_wait, which arm64,
		// riscv64 and loong64 do not have.
		n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, epfd, uintptr(unsafe.Pointer(&r.got[0])), 1, 0, 0, 0)
		if errno != unix.EINTR {
			r.fired = r.fired || errno == 0 && n > 0
			return errno != 0 || n > 0 || r.looks > 1 // an error: the caller looks at the socket
		}
	}
}

// wait arms the socket's entry and parks until the event comes, a
// deadline passes (an error wrapping os.ErrDeadlineExceeded) or the set
// is closed (os.ErrClosed). It may also return when nothing came: the
// set woke its waiter, but the socket no longer had what the event
// said when the set looked (a caller that spins on the link took it).
// It returns the entry disarmed, so that what arrives next wakes nobody
// until the next wait.
func (r *readiness) wait() error {
	if err := r.raw.Control(r.armFn); err != nil {
		return err
	}
	if r.armErr != 0 {
		// The socket is closed: its entry left the set with it.
		return os.ErrClosed
	}
	r.looks, r.fired = 0, false
	err := r.raw.Read(r.readyFn)
	if !r.fired {
		// An entry disarms itself only when the set reports its event.
		r.raw.Control(r.disarmFn)
	}
	return err
}

// interrupt ends a wait in progress, or else the next one, with
// os.ErrDeadlineExceeded, until clear.
func (r *readiness) interrupt() { r.file.SetReadDeadline(handshake.Past) }

// clear undoes interrupt.
func (r *readiness) clear() error { return r.file.SetReadDeadline(time.Time{}) }

func (r *readiness) close() { r.file.Close() }
