// Package linktest is the conformance suite of gocoll transports, in the
// manner of golang.org/x/net/nettest.TestConn: a transport's tests call
//
//	func TestConformance(t *testing.T) {
//		linktest.TestTransport(t, func(t *testing.T) transport.Transport { return &tcp.Transport{} })
//	}
//
// and the suite checks, through the transport.Transport, Listener and
// Link interfaces only, what every link must do:
//
//   - messages with payloads of 0 bytes to 16 MiB arrive intact, in order,
//     header fields unchanged;
//   - a payload given in two parts (WriteParts) arrives as if it were
//     one, also read in pieces that do not end where the parts meet, and
//     by turns with whole ones; parts whose lengths do not add up to the
//     header's are refused, and nothing goes out;
//   - a payload read in part, or not at all, is skipped by the next
//     ReadHeader; a ReadPayload of more than remains fails and reads
//     nothing;
//   - concurrent writers never interleave messages; both directions run
//     at once;
//   - Close unblocks a blocked ReadHeader and a blocked write; a
//     peer's Close ends the stream with io.EOF at a message boundary and
//     io.ErrUnexpectedEOF inside one; a closed link answers net.ErrClosed;
//   - a context that is done before a write leaves the link usable, one
//     that ends mid-write closes it, whether the payload is whole or in
//     parts;
//   - a wrong secret, job or rank is refused with transport.ErrRefused,
//     logged by the listener, and the listener keeps serving; with
//     WithRawDial, so are connections that send bytes which are not a
//     handshake.
//
// Each case runs under a watchdog (Timeout, or WithTimeout) that turns a
// hang into a failure by closing every link and listener of the case, and
// the suite fails if goroutines of the transport outlive it
// (CheckGoroutines).
package linktest
