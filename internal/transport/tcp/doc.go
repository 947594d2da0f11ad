// Package tcp implements gocoll links over TCP: one connection per link,
// opened by the auth handshake (transport/auth) and then carrying
// messages back to back, each a 64-byte codec header followed by its
// payload.
//
// # Writing
//
// WriteMessage encodes the header into a buffer that belongs to the link
// and hands header and payload to the kernel in one writev system call
// (net.Buffers on the *net.TCPConn itself), so a message costs one system
// call and no copy in user space. Concurrent writers are serialised by a
// per-link lock that a writer stops waiting for when its context ends.
// TCP_NODELAY is on by default.
//
// # Reading
//
// Each link reads through a buffer (DefaultReadBufferSize), which serves
// headers and small payloads; ReadPayload of more than the buffer holds
// reads from the socket straight into the caller's slice. There is no
// readv, so a header and a large payload take at least two reads.
//
// # Listening
//
// Listener runs the handshake of every incoming connection in its own
// goroutine, bounded by transport.Config.HandshakeTimeout. A connection
// that fails it (wrong secret, another job, the wrong rank, or bytes that
// are not a handshake at all) is logged through Config.Logger with its
// remote address and reason and closed; the listener keeps serving, and
// Accept returns only admitted links. Close stops all of it and waits for
// the listener's goroutines.
//
// # Performance
//
// The benchmarks in this package (go test -bench . ./transport/tcp)
// measure ping-pong latency of 8-byte messages and one-way bandwidth of
// 1 MiB and 16 MiB messages over loopback. WriteMessage with a
// non-cancellable context allocates nothing; with a cancellable one it
// allocates the context.AfterFunc registration that interrupts a write
// when the context ends.
package tcp
