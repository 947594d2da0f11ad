// Package mem implements gocoll links between goroutines of one process,
// for tests and for jobs whose ranks all live in one process
// (comm.NewLocal).
//
// A mem link behaves like a tcp link with no buffering at all, in the
// manner of net.Pipe: WriteMessage hands the reader its own payload slice
// (WriteParts its two) and waits until the reader has copied it
// (straight into the slice the reader passes to ReadPayload: one copy, no
// intermediate buffer) or skipped it. Steady-state traffic allocates nothing.
//
// # Addresses and handshake
//
// A Network is an address space of named listeners; NewNetwork makes
// one, and Network.Transport (or New) returns the Transport that listens
// and dials on it. Dial applies the same rules as the tcp handshake
// without exchanging bytes: the secrets must be equal (compared in
// constant time), the job IDs must agree (a dialer's 0 means any), the
// acceptor must be the rank that was dialed and the dialer must have a
// rank. A refusal is a *auth.RefusedError wrapping transport.ErrRefused
// for the dialer and is logged through the listener's Config.Logger, as
// tcp does.
//
// # Errors
//
// The errors are those of a tcp link: io.EOF when the peer closed at a
// message boundary, io.ErrUnexpectedEOF inside a message, errors
// wrapping net.ErrClosed after Close, syscall.EPIPE for a write whose
// peer is gone, syscall.ECONNREFUSED for a dial without listener and
// transport.ErrRefused for a refused handshake.
//
// # Fault injection
//
// Break makes one link fail as if the peer process had died (both ends
// see the other vanish), Network.Disconnect does so for every link of a
// listener and closes it, and Network.Kill for every link and listener of
// a rank. Network.NumLinks counts live links, for leak checks.
package mem
