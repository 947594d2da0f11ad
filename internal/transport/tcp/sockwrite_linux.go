//go:build !netpoll

package tcp

import (
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/race"
)

// rawCallMax bounds the bytes one raw system call moves. The runtime does
// not know of raw calls, so a garbage collection that stops the world
// waits for one to end: a raw call that moves at most this much (about
// 100 µs of copying) keeps that wait short.
const rawCallMax = 1 << 20

// coalesceMax bounds the messages whose header and payload (both its
// parts, for WriteParts) are copied into one buffer and sent with
// send(2). A kernel takes one plain buffer faster than sendmsg's vector:
// it copies no msghdr and imports no iovec array, which is measurable on
// a message of a few bytes, and the copy costs less than that below this
// size.
const coalesceMax = 256

// sockWriter writes messages to a plain TCP connection with raw send and
// sendmsg system calls. The net package's writes are system calls the runtime
// sees; when one seems slow to the runtime's monitor (20 µs), it hands the
// thread's processor to another thread, which costs two context switches
// for a write that was never going to block: a socket write that finds no
// room returns EAGAIN, and then sockWriter parks until the socket has
// room (socket.writable).
type sockWriter struct {
	sock  *socket
	iov   [3]unix.Iovec
	small [coalesceMax]byte // a small message's header and payload, together
	todo  []unix.Iovec      // what is left to write, a slice of iov
	msg   unix.Msghdr
	sent  int64
	errno syscall.Errno
	call  string           // the system call that failed with errno
	done  bool             // fn wrote all of todo, or failed
	fn    func(fd uintptr) // the method value of send, made once

	// blocked, when set, runs each time a write finds the socket full,
	// before it parks: see transport.Poller.OnWriteBlock.
	blocked func()
}

func newSockWriter(sock *socket) *sockWriter {
	w := &sockWriter{sock: sock}
	w.fn = w.send
	return w
}

// write sends hdr, head and body, in this order, returning how many
// bytes went out. It does not retain any of them. A write whose wait for
// room is interrupted (socket.writable.interrupt) returns an error
// wrapping os.ErrDeadlineExceeded.
func (w *sockWriter) write(hdr, head, body []byte) (int64, error) {
	w.todo = w.iov[:0]
	if n := len(hdr) + len(head) + len(body); n > len(hdr) && n <= coalesceMax {
		k := copy(w.small[:], hdr)
		k += copy(w.small[k:], head)
		copy(w.small[k:], body)
		w.add(w.small[:n])
	} else {
		w.add(hdr)
		w.add(head)
		w.add(body)
		if race.Enabled {
			// send's system calls read them. All of them, sent or not:
			// the caller must leave them alone until write returns.
			race.ReadSlice(hdr)
			race.ReadSlice(head)
			race.ReadSlice(body)
		}
	}
	w.sent, w.errno = 0, 0
	var err error
	for {
		w.done = false
		if err = w.sock.raw.Control(w.fn); err != nil || w.done {
			break
		}
		if w.blocked != nil {
			w.blocked()
		}
		if err = w.sock.writable.wait(); err != nil {
			break
		}
	}
	w.iov, w.todo = [3]unix.Iovec{}, nil // do not retain head and body
	w.msg = unix.Msghdr{}
	if err == nil && w.errno != 0 {
		err = &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError(w.call, w.errno)}
	}
	return w.sent, err
}

// add appends p to what is left to write, unless it is empty: an iovec
// needs an address, which an empty slice may not have.
func (w *sockWriter) add(p []byte) {
	if len(p) > 0 {
		w.todo = append(w.todo, unix.Iovec{Base: &p[0]})
		w.todo[len(w.todo)-1].SetLen(len(p))
	}
}

// send writes what is left; it leaves done false, to be called again
// once the socket has room, when the socket took all it could. One
// buffer goes with send(2) (sendto without an address), several with
// sendmsg. MSG_NOSIGNAL: a peer that is gone is an error, not a SIGPIPE.
func (w *sockWriter) send(fd uintptr) {
	for len(w.todo) > 0 {
		// At most rawCallMax bytes a call: the call takes the first
		// iovecs that hold that many, the last of them cut short for
		// the call and restored after it.
		cnt, total := 0, uint64(0)
		for cnt < len(w.todo) && total < rawCallMax {
			total += uint64(w.todo[cnt].Len)
			cnt++
		}
		full := w.todo[cnt-1].Len
		if total > rawCallMax {
			w.todo[cnt-1].SetLen(int(uint64(full) - (total - rawCallMax)))
		}
		var n uintptr
		var errno syscall.Errno
		if cnt == 1 {
			w.call = "sendto"
			n, _, errno = unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(w.todo[0].Base)), uintptr(w.todo[0].Len), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		} else {
			w.call = "sendmsg"
			w.msg.Iov = &w.todo[0]
			w.msg.SetIovlen(cnt)
			n, _, errno = unix.RawSyscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&w.msg)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		}
		w.todo[cnt-1].Len = full
		switch errno {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return
		default:
			w.errno = errno
			w.done = true
			return
		}
		w.sent += int64(n)
		for len(w.todo) > 0 && n >= uintptr(w.todo[0].Len) {
			n -= uintptr(w.todo[0].Len)
			w.todo = w.todo[1:]
		}
		if n > 0 {
			w.todo[0].Base = (*byte)(unsafe.Add(unsafe.Pointer(w.todo[0].Base), n))
			w.todo[0].SetLen(int(w.todo[0].Len) - int(n))
		}
	}
	w.done = true
}
