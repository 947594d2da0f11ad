package tcp

import (
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawCallMax bounds the bytes one raw system call moves. The runtime does
// not know of raw calls, so a garbage collection that stops the world
// waits for one to end: a raw call that moves at most this much (about
// 100 µs of copying) keeps that wait short.
const rawCallMax = 1 << 20

// sockWriter writes messages to a plain TCP connection with raw writev
// system calls. The net package's writes are system calls the runtime
// sees; when one seems slow to the runtime's monitor (20 µs), it hands the
// thread's processor to another thread, which costs two context switches
// for a write that was never going to block: a socket write that finds no
// room returns EAGAIN, and then sockWriter parks in the netpoller as the
// net package does.
type sockWriter struct {
	raw   syscall.RawConn
	iov   [2]unix.Iovec
	todo  []unix.Iovec // what is left to write, a slice of iov
	sent  int64
	errno syscall.Errno
	fn    func(fd uintptr) bool // the method value of writev, made once
}

func newSockWriter(raw syscall.RawConn) *sockWriter {
	w := &sockWriter{raw: raw}
	w.fn = w.writev
	return w
}

// write sends hdr and then payload, returning how many bytes went out.
// It does not retain either.
func (w *sockWriter) write(hdr, payload []byte) (int64, error) {
	w.iov[0] = unix.Iovec{Base: &hdr[0]}
	w.iov[0].SetLen(len(hdr))
	w.todo = w.iov[:1]
	if len(payload) > 0 {
		w.iov[1] = unix.Iovec{Base: &payload[0]}
		w.iov[1].SetLen(len(payload))
		w.todo = w.iov[:2]
	}
	w.sent, w.errno = 0, 0
	err := w.raw.Write(w.fn)
	w.iov, w.todo = [2]unix.Iovec{}, nil // do not retain payload
	if err == nil && w.errno != 0 {
		err = &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("writev", w.errno)}
	}
	return w.sent, err
}

func iovLen(iov []unix.Iovec) uint64 {
	var n uint64
	for i := range iov {
		n += uint64(iov[i].Len)
	}
	return n
}

// writev writes what is left; it reports false, to be called again once
// the socket has room, when the socket took all it could.
func (w *sockWriter) writev(fd uintptr) bool {
	for len(w.todo) > 0 {
		// At most rawCallMax bytes a call: the last iovec is cut short
		// for the call and restored after it.
		cnt, full := len(w.todo), w.todo[len(w.todo)-1].Len
		if total := iovLen(w.todo); total > rawCallMax {
			w.todo[cnt-1].SetLen(int(full - (total - rawCallMax)))
		}
		n, _, errno := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.todo[0])), uintptr(cnt))
		w.todo[cnt-1].Len = full
		switch errno {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			w.errno = errno
			return true
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
	return true
}
