// Package tcp implements gocoll links over TCP: one connection per link,
// opened by the auth handshake (transport/auth) and then carrying
// messages back to back, each a 64-byte codec header followed by its
// payload.
//
// # Writing
//
// WriteMessage encodes the header into a buffer that belongs to the link
// and hands header and payload (WriteParts: header, head and body) to the
// kernel in one system call, so a message costs a system call per MiB
// and no copy in user space. Over plain TCP these are raw sendmsg calls
// on the socket, parking only when the socket is full: a system call the
// runtime sees hands the thread's processor to another thread when the
// runtime's monitor finds it slow, two context switches for a write that
// never blocks. Each raw call moves at most 1 MiB (rawCallMax), so that a
// garbage collection waits for none long. Over TLS, net.Buffers writes.
// Concurrent writers are serialised by a per-link lock that a writer
// stops waiting for when its context ends. TCP_NODELAY is on by default.
//
// # Reading
//
// A link over plain TCP reads its socket with non-blocking raw system
// calls through a buffer of its own (DefaultReadBufferSize), which serves
// headers and small payloads; a large payload is read from the socket
// straight into the caller's slice. Such a link is a transport.Poller:
// Poll tells, without blocking, whether the next message has arrived
// whole, so a goroutine waiting for a message can take it off the link
// itself, and WaitReadable parks without reading, so the link's reading
// goroutine can wait there while leaving the reading side to callers. With SetSpin, a read that waits for the rest of a message
// looks again, yielding to the process's other goroutines in between,
// for the spin window before it parks: a large message then flows
// without a thread sleeping and waking each time it outruns its reader
// (an allreduce of 4 to 16 MiB over loopback took 0.7 of the time). A
// link over TLS reads through a bufio.Reader with blocking
// reads and is no Poller.
//
// # Out of the netpoller
//
// A plain TCP link takes its socket out of the runtime's netpoller (see
// socket): the runtime would register it for every arrival for good, and
// then each arrival costs an epoll callback, and wakes a runtime thread
// whenever one sleeps in epoll_wait (at GOMAXPROCS above one, whenever a
// timer is pending or a goroutine waits for any descriptor), though a
// caller spinning on the link takes the message itself. The link keeps a
// duplicate of the descriptor in blocking mode, which the runtime leaves
// alone, and calls it only in ways that never block. To park, a reader or
// a writer arms an epoll set of the link's own, which holds only the
// socket, for one event, and waits for that set in the netpoller; the
// entry is disarmed again when the wait ends, so arrivals wake nobody
// while nobody waits. Each link holds three descriptors: the socket and
// its two sets, one to wait for bytes and one for room. OnWriteBlock
// tells the reading side's owner when a writer waits for room, so that
// it can have its links read (two ranks that write to each other wait
// for ever otherwise).
//
// That is Linux's (epoll). Elsewhere, and on Linux when built with the
// netpoll tag (how its tests run here), a plain TCP link reads and
// writes its net.Conn as a TLS link does: it is no transport.Poller, and
// a message goes from the link's reading goroutine to its caller. Before
// it closes, it still reads and drops what the socket holds, so that
// the close does not reset the connection.
//
// # Congestion control
//
// A link between hosts keeps the host's congestion control algorithm
// unless WithCongestionControl names one. A link over the loopback
// device uses reno: bbr, the default of some hosts, sizes its window from
// a round trip of microseconds there, and the window then holds less than
// one large message (see loopbackCongestion). Choosing it needs Linux;
// elsewhere WithCongestionControl makes every connection fail, saying so,
// and loopback links keep the host's.
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
