// Package transport defines the links that carry gocoll's messages between
// two ranks, and nothing about collectives.
//
// It is internal: a Link speaks wire.Header, the library's own frame
// format, so a transport outside this module could not be written against
// a stable contract. Users choose among the built-in transports by name
// (comm.WithTransport, GOCOLL_TRANSPORT); their tuning knobs are set by
// the communicator.
//
// A Link moves messages: a fixed wire.Header followed by a payload. The
// reader sees the header first and then chooses where the payload goes,
// which is what makes zero-copy receives possible: the communicator reads
// a payload straight into the slice of a posted receive and only buffers
// messages that arrive before their receive.
//
// # Implementations
//
//   - internal/transport/tcp: one TCP connection per link, header and payload in one
//     writev, payload read straight into the destination.
//   - internal/transport/shm: links between processes of one host: a
//     single-producer, single-consumer ring per direction in shared memory
//     that the dialer passes to the acceptor over a Unix socket in the
//     abstract namespace ("@name"), and large payloads copied once, out of
//     the writer's memory, with process_vm_readv where the kernel allows
//     it (Linux only).
//   - internal/transport/mem: links between goroutines of one process; a payload is
//     copied once, from the writer's slice into the reader's.
//
// # Writing a transport
//
// A transport implements Transport, Listener and Link. Run the conformance
// suite in transport/linktest against it: it checks ordering, partial and
// skipped payloads, payloads in two parts, concurrent writers, Close
// unblocking both sides, the errors at end of stream and the refusal of
// a wrong secret. A Link must be indistinguishable from the others by its
// errors: io.EOF at a clean end, io.ErrUnexpectedEOF mid-message,
// net.ErrClosed after Close, ErrRefused for a refused handshake.
//
// A transport over a byte stream shares the rest with tcp and shm:
// transport/internal/accept is the listener (the accept loop, a goroutine
// per handshake, Accept and Close), transport/internal/handshake connects
// under one deadline and the caller's context and runs the acceptor's
// side of the auth handshake, and transport/internal/writelock starts
// every write (WriteMessage, WriteParts): it checks the message and takes
// the link's write lock, which a writer stops waiting for when its
// context ends or the link closes. linktest.Config and linktest.Pair set
// up the links of a transport's own tests.
package transport
