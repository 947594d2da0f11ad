// Package auth is the challenge handshake that opens every byte-stream
// connection of a gocoll job: TCP links (transport/tcp) and connections to
// the rendezvous store. Both ends prove that they know the job's secret
// without sending it, and the connection is bound to one job, one service
// and one pair of ranks before any other byte is trusted.
//
// # Protocol
//
// All integers are little-endian; a rank travels as int64.
//
//	dialer   -> acceptor  hello:  "GCAUTH1" version service jobID from want nonceD[32]   (65 bytes)
//	acceptor -> dialer    reply:  status=0 rank jobID nonceA[32] macA[32]                (81 bytes)
//	                          or  status≠0 len reason[len]                               (refusal)
//	dialer   -> acceptor  proof:  status=0 macD[32]                                      (33 bytes)
//	                          or  status≠0 len reason[len]                               (refusal)
//	acceptor -> dialer    result: status=0                                               (1 byte)
//	                          or  status≠0 len reason[len]                               (refusal)
//
// with
//
//	macA = HMAC-SHA256(secret, "acceptor" | hello | rank jobID nonceA)
//	macD = HMAC-SHA256(secret, "dialer"   | hello | rank jobID nonceA)
//
// The two labels keep either MAC from being replayed as the other, and
// the two fresh nonces keep either from being replayed in another
// handshake. Each MAC covers everything that both ends said, so no field
// (ranks, job, service) can be altered in flight without detection. The
// acceptor checks the dialer's MAC before it looks at anything the dialer
// asks for; only then does it compare service, job and wanted rank and
// call the admit hook. A refusal carries a reason of at most 255 bytes of
// text, which the refused end reports inside an error wrapping
// transport.ErrRefused.
//
// With an empty secret the MACs still bind the fields together and to the
// nonces, but anyone can compute them: the handshake then only protects
// against mistakes (another job, another service, the wrong rank), not
// against an attacker.
//
// # Deadlines
//
// Client and Server do not set deadlines; the caller sets one on the
// connection (for example with net.Conn.SetDeadline) before calling them.
// Every read is of a fixed size or of a length bounded by 255 bytes, so
// a peer cannot make either side allocate.
package auth
