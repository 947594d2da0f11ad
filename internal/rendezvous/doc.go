// Package rendezvous is the control plane of a gocoll job: a small
// key-value store that rank 0 serves and every rank (rank 0 too, in
// process) uses, plus the job's membership.
//
// # Why it exists
//
// Bootstrap. Ranks start knowing only their rank, the job's size and one
// address: rank 0's. Each rank listens for links, publishes its address
// and host identity under a key with Set, and learns everybody else's with
// Get, which blocks until the key is set. So ranks may start in any order
// and no rank needs a list of hosts.
//
// Failure. Links between ranks are made lazily, on first use, so that a
// job of thousands of ranks does not open N² sockets. The price is that a
// rank learns of a peer's death from its link only if it has one. The
// store closes that gap: every rank keeps a connection to it for the whole
// job, so when a rank's connection drops without a clean Close, or a rank
// calls Abort, the store tells every other rank (Events), and a rank that
// waits on a peer it never talked to fails fast instead of hanging. A
// rank whose own connection to the store breaks hears of it the same way,
// as the loss of rank 0. TCP keepalive on these connections notices a
// host that vanished without closing its sockets.
//
// # Protocol
//
// A connection opens with the job's auth handshake (package
// transport/auth, service ServiceStore), which proves that the client
// knows the job's secret, tells it the job id and lets the store refuse a
// rank that is outside the job or already joined. The client then sends
// its idea of the job's size, which the store refuses if it differs. After
// that both sides exchange length-prefixed frames (wire.go), bounded per
// type: requests carry ids, so several Gets may wait at once, and the
// store pushes events between answers. A frame that breaks the protocol
// closes the connection; the store logs it and keeps serving the others.
//
// # Shutdown
//
// Close on a client is a clean leave, never reported as a loss. Close on
// the server tells every client that the store is gone (StoreGone, not a
// failure), which fails their pending calls with ErrStoreGone. Rank 0
// calls WaitLeft before it closes the server, so the store outlives the
// ranks that still need it.
package rendezvous
