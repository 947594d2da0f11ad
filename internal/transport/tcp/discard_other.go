//go:build !unix

package tcp

import "net"

// discardUnread does nothing where the socket cannot be read through its
// descriptor without blocking: Windows keeps sockets for overlapped I/O,
// where a read waits for data. A link closed there with bytes unread may
// reset the connection and lose what this end had not sent yet, such as
// its goodbye; the peer then learns of the close as a lost connection.
func discardUnread(*net.TCPConn) {}
