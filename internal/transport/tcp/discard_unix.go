//go:build unix

package tcp

import (
	"net"
	"syscall"
)

// discardUnread reads and drops what c's socket holds, without blocking,
// up to discardMax bytes, before the link closes it, as the polled
// socket's reader does (sockReader.discardUnread): a TCP socket closed
// with bytes it has not read resets the connection, and a reset throws
// away what this end has not sent yet.
func discardUnread(c *net.TCPConn) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	// Control, not Read: a reader blocked on the connection holds its
	// read lock until the close this precedes. The runtime keeps the
	// descriptor non-blocking, so a read finds what is there or nothing.
	buf := make([]byte, 64<<10)
	_ = raw.Control(func(fd uintptr) {
		for range discardMax / len(buf) {
			if n, err := syscall.Read(int(fd), buf); err != nil && err != syscall.EINTR || err == nil && n == 0 {
				return
			}
		}
	})
}

// discardMax bounds what discardUnread drops: more than a socket's receive
// buffer holds.
const discardMax = 64 << 20
