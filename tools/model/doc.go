// Package model fits the Hockney (alpha-beta-gamma) cost model of
// collective algorithms to measured results and projects the algorithms'
// times to rank counts and message sizes that were not measured.
//
// # The model
//
// A call among p ranks on n bytes costs
//
//	T = α·m + β·b + γ·r
//
// where m is the number of messages on the critical path, b the bytes a
// rank on that path sends, r the bytes it reduces, α the latency of one
// message (µs), β the time per byte on a link (µs/byte, 1/bandwidth) and
// γ the time per byte of the reduction (µs/byte). The assumptions are the
// textbook ones (Hockney; Thakur, Rabenseifner and Gropp 2005; Chan et al.
// 2007): every pair of ranks has its own link (no contention), links are
// full duplex (a rank sends and receives a message at once, so a
// sendrecv costs one message), a rank sends one message at a time, and
// computation does not overlap communication. Let L = ⌈lg p⌉, q the
// largest power of two ≤ p, l = lg q, and f = 1 when p is not a power of
// two, else 0: the ranks beyond q first fold their data into a partner
// and get the result back at the end, which costs two more messages of n
// bytes and one more reduction of n.
//
// Allreduce (n = the vector's size):
//
//	recursive_doubling  m = l+2f       b = (l+2f)·n             r = (l+f)·n
//	ring                m = 2(p-1)     b = 2(p-1)/p·n           r = (p-1)/p·n
//	ring_chunked        m = 2(p-1)·k   b = 2(p-1)/p·n           r = (p-1)/p·n
//	                    with k = ⌈n/(p·c)⌉ chunks of c bytes per block
//	rabenseifner        m = 2l+2f      b = 2(q-1)/q·n + 2f·n    r = (q-1)/q·n + f·n
//	                    (reduce-scatter by recursive halving, then
//	                    allgather by recursive doubling)
//	tree                m = 2L         b = 2L·n                 r = L·n
//	                    (binomial reduce, then binomial bcast)
//
// Other collectives (n as package bench counts it: the broadcast buffer,
// the whole gathered or scattered buffer, reduce-scatter's input):
//
//	bcast tree               m = L               b = L·n
//	bcast chain              m = p-2+k           b = (p-2+k)·n/k, k = ⌈n/c⌉ chunks
//	bcast scatter_allgather  m = L+p-1           b = 2(p-1)/p·n
//	reduce tree              m = L               b = L·n               r = L·n
//	gather/scatter tree      m = L               b = (p-1)/p·n
//	gather/scatter linear    m = p-1             b = (p-1)/p·n
//	allgather ring           m = p-1             b = (p-1)/p·n
//	allgather bruck, recursive_doubling  m = L   b = (p-1)/p·n
//	reducescatter ring       m = p-1             b = (p-1)/p·n         r = (p-1)/p·n
//	reducescatter recursive_halving  m = l+2f    b = (q-1)/q·n + f·(n+n/p)  r = (q-1)/q·n + f·n
//	barrier dissemination    m = L
//
// A chunk size of 0 in a result means collective.DefaultChunkSize.
//
// # What is not modelled
//
// Points measured with an algorithm of no message formula are not fitted:
// "shm" and "hierarchical" (they work through a shared memory segment, not
// messages), "raw" or "gob" (the object collectives) and "auto" or an empty algo
// (files that do not record the algorithm that ran: other
// implementations', and gocoll's from before it recorded the selector's
// choice); so are points with a codec
// other than none (compression changes the bytes and adds work) and
// points of one rank. Package users may relabel auto points with the
// algorithm they know ran. Pipelining is not modelled either, so under
// this model ring_chunked never beats ring, and for a power-of-two p
// Rabenseifner never loses to ring (the same bytes in fewer messages):
// what makes the ring win on real machines, neighbour-only traffic on a
// contended network and transfer overlapped with reduction, is outside the
// model.
//
// # The fit
//
// Fit finds α, β, γ ≥ 0 that minimise the sum of squared relative errors
// (T - t)/t over the measured times t: plain least squares would let the
// millisecond points decide everything and leave α to chance. It solves
// every subset of the three parameters by Householder QR and keeps the
// best non-negative solution, which for three unknowns is exactly
// non-negative least squares. β and γ can only be told apart by points
// that reduce a different share of the bytes they move (recursive
// doubling beside ring, or any bcast or gather beside allreduce); where
// every point reduces the same share, γ is set to 0, β takes its part and
// Params.GammaFitted says so.
package model
