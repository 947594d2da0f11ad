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
//	dialer   -> acceptor  hello:     "GCAUTH2" version service nonceD[32]              (41 bytes)
//	acceptor -> dialer    challenge: status=0 nonceA[32] macC[32]                      (65 bytes)
//	dialer   -> acceptor  proof:     status=0 from want jobID macD[32]                 (57 bytes)
//	acceptor -> dialer    reply:     status=0 rank jobID macA[32]                      (49 bytes)
//	dialer   -> acceptor  result:    status=0                                          (1 byte)
//
// where any message after the hello may instead be a refusal,
// status≠0 len reason[len], and
//
//	macC = HMAC-SHA256(secret, "acceptor challenge" | hello | nonceA)
//	macD = HMAC-SHA256(secret, "dialer"   | hello | nonceA macC | from want jobID)
//	macA = HMAC-SHA256(secret, "acceptor" | hello | nonceA macC | proof | rank jobID)
//
// The acceptor proves the secret first and says nothing else, so a dialer
// without the secret learns no rank and no job id: it can only give up.
// The dialer checks macC before it says who it is, so a stranger posing
// as an acceptor learns nothing either. The acceptor checks macD before it
// looks at anything the dialer asks for; only then does it compare
// service, job and wanted rank and call the admit hook, and only then
// does it answer with its own rank and the job id. The distinct labels
// keep any MAC from being replayed as another, and the two fresh nonces
// keep one from being replayed in another handshake. Each MAC covers
// everything said before it, so no field can be altered in flight. A
// refusal carries a reason of at most 255 bytes of text, which the refused
// end reports inside an error wrapping transport.ErrRefused.
//
// With an empty secret the MACs still bind the fields together and to the
// nonces, but anyone can compute them: the handshake then only protects
// against mistakes (another job, another service, the wrong rank), not
// against an attacker. Package comm never passes the bare secret: it
// passes a key derived from the secret and the job's identity, so jobs
// without a secret are still told apart.
//
// The handshake authenticates the connection, not the bytes that follow:
// frames after it carry no MAC, and nothing is encrypted. Where the
// network between hosts is not trusted, run the job over TLS.
//
// # Deadlines
//
// Client and Server do not set deadlines; the caller sets one on the
// connection (for example with net.Conn.SetDeadline) before calling them.
// Every read is of a fixed size or of a length bounded by 255 bytes, so
// a peer cannot make either side allocate.
package auth
