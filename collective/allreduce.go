package collective

import (
	"context"
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// Allreduce combines buf of every rank with op and leaves the result in
// every rank's buf, bitwise identical on all ranks. Algorithms:
// RecursiveDoubling (lg p steps; the default for small buffers and for
// non-commutative ops), Ring (reduce-scatter then allgather, each byte
// sent about twice), RingChunked (the ring with each block pipelined in
// WithChunkSize chunks; the default for large buffers), Rabenseifner
// (recursive halving then doubling) and Tree (binomial reduce then
// bcast). A non-commutative op is applied in rank order, r0∘r1∘…; the
// ring algorithms refuse it.
func Allreduce[T codec.Elem](ctx context.Context, c *comm.Comm, buf []T, op codec.Op, opts ...Option) (err error) {
	var k call[T]
	if err = begin(&k, ctx, c, wire.KindAllreduce, op, len(buf), -1, opts); err != nil {
		return err
	}
	defer k.leave(&err)
	return k.allreduce(buf, buf)
}

// AllreduceInto is Allreduce out of place, as MPI_Allreduce with a send
// and a receive buffer: it combines send of every rank with op into recv
// of every rank and leaves send as it was. send and recv have the same
// length, and are either one slice (then it is Allreduce on it) or do not
// overlap. Each rank chooses for itself: some may call Allreduce and
// others AllreduceInto in the same collective.
//
// It is what copying send into recv and calling Allreduce on recv
// computes, but cheaper where it matters: through shared memory (Shm,
// Hierarchical) the algorithms read send where they would have read recv
// and never copy it whole, and with both buffers from Alloc on every rank
// each element of send is read once by the rank that combines it and the
// result written once into each recv. Over links, Ring, RingChunked and
// Rabenseifner send this rank's data from send and receive the first
// partial sums straight into recv, and Tree combines send with what it
// receives, so send is never copied whole either; RecursiveDoubling, made
// for small buffers, copies send into recv first.
func AllreduceInto[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, op codec.Op, opts ...Option) (err error) {
	var k call[T]
	if err = prepare(&k, ctx, c, wire.KindAllreduce, op, len(recv), -1, opts); err != nil {
		return err
	}
	if err = k.checkApart("AllreduceInto", "recv", send, recv); err != nil {
		return err
	}
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	return k.allreduce(send, recv)
}

// checkApart refuses, as the call's invalid input, a send and recv of fn
// that differ in length or overlap without being one slice; recvName is
// how the messages name recv.
func (k *call[T]) checkApart(fn, recvName string, send, recv []T) error {
	if len(send) != len(recv) {
		return k.invalid(fmt.Errorf("%w: %s's send has %d elements and %s %d; they must be equal",
			codec.ErrInvalid, fn, len(send), recvName, len(recv)))
	}
	if overlapApart(send, recv) {
		return k.invalid(fmt.Errorf("%w: %s's send and %s (%d elements) overlap without being one slice",
			codec.ErrInvalid, fn, recvName, len(recv)))
	}
	return nil
}

// allreduce runs the chosen algorithm, from send (buf itself in place)
// into buf, and finishes the op (Avg divides).
func (k *call[T]) allreduce(send, buf []T) error {
	var err error
	switch k.me.Algorithm {
	case Shm:
		err = reduceShm(k, k.c.Segment(), send, buf, -1, nil)
	case Hierarchical:
		// Inside each host through its segment, across hosts over links:
		// each host sends each byte across once per share owner instead
		// of once per rank.
		h := k.c.Hierarchy()
		err = reduceShm(k, h.Node.Segment(), send, buf, -1, h)
	default:
		err = k.allreduceLinks(send, buf)
	}
	if err != nil {
		return err
	}
	kernel.Finish(k.op, buf, k.c.Size())
	return nil
}

// allreduceLinks runs the chosen algorithm over links, from send into
// buf. The ring, Rabenseifner and Tree read send where they first need
// this rank's data and never copy it whole; recursive doubling, made for
// small buffers, copies it into buf first.
func (k *call[T]) allreduceLinks(send, buf []T) error {
	switch k.me.Algorithm {
	case Ring:
		return allreduceRing(k, send, buf, len(buf))
	case RingChunked:
		return allreduceRing(k, send, buf, k.cfg.chunkElems(k.size))
	case Rabenseifner:
		k.keep = false
		lo, hi, err := reduceScatterHalving(k, send, buf, 0)
		if err != nil {
			return err
		}
		k.keep = true
		return allgatherDoubling(k, buf, lo, hi, halvingSteps)
	case Tree:
		k.keep = false
		if err := reduceTree(k, send, buf, 0, 0); err != nil {
			return err
		}
		k.keep = true
		return bcastTree(k, buf, 0, phaseSteps)
	}
	copyApart(buf, send)
	return allreduceDoubling(k, buf)
}

// allreduceDoubling is recursive doubling. With p not a power of two, the
// first 2·rem ranks pair up (even into odd) before and after, so that the
// ranks that remain each stand for a contiguous range of ranks and every
// combination keeps rank order. Both partners of a step compute lower ∘
// upper, so they hold the same bits.
func allreduceDoubling[T codec.Elem](k *call[T], buf []T) error {
	p, me := k.c.Size(), k.c.Rank()
	pof2 := 1
	for pof2*2 <= p {
		pof2 *= 2
	}
	rem := p - pof2
	tmp, sb := scratch[T](len(buf))
	defer sb.release()

	// Fold: in the first 2·rem ranks, each even rank hands its data to the
	// odd rank above it and sits out the doubling.
	newRank := me - rem
	if me < 2*rem {
		if me%2 == 0 {
			if err := k.send(me+1, 0, buf, 0); err != nil {
				return err
			}
			newRank = -1
		} else {
			if err := k.recvReduce(me-1, 0, buf, buf, 0, false); err != nil {
				return err
			}
			newRank = me / 2
		}
	}
	if newRank >= 0 {
		step := 1
		for mask := 1; mask < pof2; mask <<= 1 {
			partnerNew := newRank ^ mask
			partner := partnerNew + rem
			if partnerNew < rem {
				partner = partnerNew*2 + 1
			}
			if err := k.sendRecv(partner, step, buf, 0, partner, step, tmp, 0); err != nil {
				return err
			}
			if err := k.reduce(buf, tmp, partner > me); err != nil {
				return err
			}
			step++
		}
	}
	// The partners of the last exchange each hold lower ∘ upper, the same
	// bits, but with a lossy codec not yet rounded as the result that
	// the unfold sends; rounding it here makes every rank's the same.
	if p > 1 {
		kernel.Round(k.cfg.codec, buf)
	}
	// Unfold: the odd ranks hand the result back to their even partners.
	if me < 2*rem {
		last := phaseSteps - 1
		if me%2 == 1 {
			return k.send(me-1, last, buf, 0)
		}
		return k.recv(me+1, last, buf, 0)
	}
	return nil
}

// allreduceRing is the ring: p-1 steps of reduce-scatter, after which
// rank r holds the reduced block r+1, then p-1 steps of allgather. Each
// block moves in chunks of at most chunk elements, all of a step's
// receives posted before its sends, so a chunk is reduced while the next
// one is still on the wire. Every block is reduced once, in one fixed
// order, and then copied, so all ranks end with the same bits. This
// rank's data are in from, which is buf itself or a send buffer the ring
// only reads: each block's first sum lands in buf.
//
// The last reduce-scatter step and the first allgather step run as one:
// each chunk of the block this rank reduces goes on to the right as soon
// as it is reduced, while it is still in the cache (with a lossy codec,
// in the wire bytes made as it was reduced), instead of being read back
// from memory a step later.
func allreduceRing[T codec.Elem](k *call[T], from, buf []T, chunk int) error {
	p, me := k.c.Size(), k.c.Rank()
	if p == 1 {
		copyApart(buf, from)
		return nil
	}
	right, left := (me+1)%p, (me+p-1)%p
	n := len(buf)
	maxBlock := (n + p - 1) / p
	chunk = capChunk(chunk, maxBlock)
	var tmp []T
	var sb scratchBuf
	if sameSlice(from, buf) {
		tmp, sb = scratch[T](maxBlock)
	}
	defer sb.release()
	// With a lossy codec each allgather step after the first forwards
	// the bytes the step before received, unchanged: two block-sized wire
	// buffers alternate, a step receiving into one and sending from the
	// other. The last step forwards nothing, so its receives take pooled
	// buffers, as do all of a two-rank ring's. The reduce-scatter steps
	// but the last encode their sums into the same two as they make them
	// (sumWire), and the step after sends those bytes, instead of reading
	// the sums back from memory to encode them (rounding the sums in buf
	// meanwhile, which the allgather then overwrites).
	var wires [2][]byte
	var wireBufs [2]scratchBuf
	lossy := k.cfg.codec.Lossy()
	if lossy && p > 2 {
		wires[0], wireBufs[0] = scratch[byte](2 * maxBlock)
		wires[1], wireBufs[1] = scratch[byte](2 * maxBlock)
	}
	defer wireBufs[0].release()
	defer wireBufs[1].release()
	k.keep = false
	for s := range p - 1 {
		st := ringStepOf(n, p, me, s, chunk)
		if lossy && p > 2 {
			// Step s's sums go where step s+1 sends them from; the
			// last reduce-scatter step's (p-3's) into wires[0], since
			// the allgather's first step receives into wires[1].
			if s > 0 {
				st.sendWire = wires[(p-2-s)%2]
			}
			if s < p-2 {
				st.sumWire = wires[(p-3-s)%2]
			}
		}
		var then *ringBlocks
		if s == p-2 {
			// The allgather's first step sends this rank's own reduced
			// block: with a lossy codec in the wire bytes made as it is
			// reduced, so nothing is rounded again (k.keep stays false);
			// without one there is nothing to round.
			first := ringStepOf(n, p, me+1, 0, chunk)
			first.recvWire = lastRecvWire(wires[1], p, 0)
			then = &first
		}
		if err := ringStep(k, from, buf, tmp, s, right, left, st, true, then); err != nil {
			return err
		}
	}
	for s := 1; s < p-1; s++ {
		st := ringStepOf(n, p, me+1, s, chunk)
		st.sendWire, st.recvWire = wires[s%2], lastRecvWire(wires[(s+1)%2], p, s)
		if err := ringStep(k, from, buf, tmp, p-1+s, right, left, st, false, nil); err != nil {
			return err
		}
	}
	return nil
}

// lastRecvWire is w, the wire buffer allgather step s of a ring of p
// ranks receives into, or nil at the last step, whose bytes go nowhere.
func lastRecvWire(w []byte, p, s int) []byte {
	if s == p-2 {
		return nil
	}
	return w
}

// ringBlocks is what one ring step moves: block [sendLo, sendHi) of buf
// to the right, [recvLo, recvHi) from the left, in chunks of chunk
// elements. With a lossy codec, sendWire holds the send block's wire
// bytes ready, recvWire, when set, receives the receive block's, for the
// next step to forward, and sumWire, when set, takes the encoding of the
// receive block's sums, for the next step to send.
type ringBlocks struct {
	sendLo, sendHi, recvLo, recvHi int
	chunk                          int
	sendWire, recvWire, sumWire    []byte
}

// chunks is how many messages a block of m elements takes; an empty block
// still sends one empty message, so that a peer with a different count is
// told rather than left waiting.
func (st *ringBlocks) chunks(m int) int { return max(1, (m+st.chunk-1)/st.chunk) }

// ringStepOf is step s of a ring whose rank me sends block me-s and
// receives block me-s-1 (the allgather passes me+1 as me).
func ringStepOf(n, p, me, s, chunk int) ringBlocks {
	sendLo, sendHi := block(n, p, (me-s+2*p)%p)
	recvLo, recvHi := block(n, p, (me-s-1+2*p)%p)
	return ringBlocks{sendLo: sendLo, sendHi: sendHi, recvLo: recvLo, recvHi: recvHi, chunk: chunk}
}

// wireOf is the part of a block's wire bytes w, the block starting at
// element base, that holds elements [lo, hi): a lossy codec sends two
// bytes an element. A nil w stays nil.
func wireOf(w []byte, base, lo, hi int) []byte {
	if w == nil {
		return nil
	}
	return w[2*(lo-base) : 2*(hi-base)]
}

// ringRecvs are the receives of one ring step's block from the left, one
// a chunk, up to ringWindow posted ahead of the chunk awaited. Chunk i
// of the block, elements [lo, hi), lands in into[lo-base:hi-base] (and,
// with a lossy codec, its wire bytes in st.recvWire's, or a pooled
// buffer).
type ringRecvs[T codec.Elem] struct {
	ins  [ringWindow]inbound
	st   ringBlocks
	step int // the step number of chunk 0
	n    int // chunks
	into []T
	base int
}

// start posts the first receives of st's receive block, sent as step
// step, landing in into from element base on.
func (r *ringRecvs[T]) start(k *call[T], left, step int, st ringBlocks, into []T, base int) error {
	r.st, r.step, r.n, r.into, r.base = st, step*ringMaxChunks, st.chunks(st.recvHi-st.recvLo), into, base
	for i := range min(r.n, ringWindow) {
		if err := r.post(k, left, i); err != nil {
			return err
		}
	}
	return nil
}

// chunk is chunk i of the block: its elements [lo, hi) of buf, and the
// slice they land in.
func (r *ringRecvs[T]) chunk(i int) (dst []T, lo, hi int) {
	lo, hi = chunkBounds(r.st.recvLo, r.st.recvHi, r.st.chunk, i)
	return r.into[lo-r.base : hi-r.base], lo, hi
}

// post posts the receive of chunk i.
func (r *ringRecvs[T]) post(k *call[T], left, i int) (err error) {
	dst, lo, hi := r.chunk(i)
	r.ins[i%ringWindow], err = k.irecvInto(left, r.step+i, dst, wireOf(r.st.recvWire, r.st.recvLo, lo, hi))
	return err
}

// next posts the receive ringWindow chunks after chunk i, once chunk i
// has been taken, if the block has one.
func (r *ringRecvs[T]) next(k *call[T], left, i int) error {
	if i+ringWindow < r.n {
		return r.post(k, left, i+ringWindow)
	}
	return nil
}

// in is the receive of chunk i.
func (r *ringRecvs[T]) in(i int) *inbound { return &r.ins[i%ringWindow] }

// withdraw withdraws every receive still posted.
func (r *ringRecvs[T]) withdraw() { withdrawAll(r.ins[:]) }

// ringStep sends st's send block to right and receives its receive block
// from left, chunk by chunk, with up to ringWindow receives posted ahead:
// chunk i is sent, then chunk i is received (and, with reduce, combined
// with this rank's own elements of it, from from, into buf) while later
// chunks are still on the wire. Each rank sends its first chunk without
// waiting, so the ring always moves, and no more than ringWindow chunks
// per link arrive before their receive. The blocks sent come from buf,
// but for the first step's, this rank's own block, from from. In place
// (from is buf) a chunk to be reduced lands in tmp, otherwise in buf.
//
// With then set, the step reduces (the reduce-scatter's last) and also
// runs then, the allgather's first step, whose send block is the block
// it reduces: each chunk goes on to the right as soon as it is reduced,
// and then's chunks are received as this step's are.
func ringStep[T codec.Elem](k *call[T], from, buf, tmp []T, step, right, left int, st ringBlocks, reduce bool, then *ringBlocks) error {
	nSend := st.chunks(st.sendHi - st.sendLo)
	out := buf
	if step == 0 {
		out = from
	}
	into, base := buf, 0
	if reduce && tmp != nil {
		into, base = tmp, st.recvLo
	}
	var recvs, thens ringRecvs[T] // thens receives nothing without then
	defer recvs.withdraw()
	defer thens.withdraw()
	if err := recvs.start(k, left, step, st, into, base); err != nil {
		return err
	}
	if then != nil {
		if err := thens.start(k, left, step+1, *then, buf, 0); err != nil {
			return err
		}
	}
	for i := range max(nSend, recvs.n, thens.n) {
		if i < nSend {
			lo, hi := chunkBounds(st.sendLo, st.sendHi, st.chunk, i)
			var err error
			if st.sendWire != nil {
				err = k.sendWire(right, step*ringMaxChunks+i, hi-lo, lo, k.cfg.codec, wireOf(st.sendWire, st.sendLo, lo, hi))
			} else {
				err = k.send(right, step*ringMaxChunks+i, out[lo:hi], lo)
			}
			if err != nil {
				return err
			}
		}
		if i < recvs.n {
			got, lo, hi := recvs.chunk(i)
			var err error
			switch {
			case then != nil:
				err = k.reduceOn(recvs.in(i), left, right, (step+1)*ringMaxChunks+i, buf[lo:hi], lo, from[lo:hi], got)
			case reduce:
				err = k.awaitSendSums(recvs.in(i), left, buf[lo:hi], lo, from[lo:hi], got, wireOf(st.sumWire, st.recvLo, lo, hi))
			default:
				err = k.await(recvs.in(i), left, got, lo)
			}
			if err == nil {
				err = recvs.next(k, left, i)
			}
			if err != nil {
				return err
			}
		}
		if i < thens.n {
			got, lo, _ := thens.chunk(i)
			if err := k.await(thens.in(i), left, got, lo); err != nil {
				return err
			}
			if err := thens.next(k, left, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// reduceOn is awaitReduce of a ring's chunk, from left, into dst (the
// elements at offset off), which then goes on to right as step step:
// with a lossy codec in the wire bytes made as it was reduced, in a
// pooled buffer, else straight from dst.
func (k *call[T]) reduceOn(in *inbound, left, right, step int, dst []T, off int, mine, got []T) error {
	if !k.cfg.codec.Lossy() {
		if err := k.awaitReduce(in, left, dst, off, mine, got, true, nil); err != nil {
			return err
		}
		return k.send(right, step, dst, off)
	}
	w, wb := scratch[byte](2 * len(dst))
	defer wb.release()
	if err := k.awaitReduce(in, left, dst, off, mine, got, true, w); err != nil {
		return err
	}
	return k.sendWire(right, step, len(dst), off, k.cfg.codec, w)
}

// ringWindow bounds the receives a ring step keeps posted at once.
const ringWindow = 8

// ringMaxChunks spaces the steps of the ring in the tag space: step s's
// chunk i has step number s·ringMaxChunks + i; a block has at most
// MaxChunks chunks.
const ringMaxChunks = MaxChunks

// chunkBounds is chunk i of the range [lo, hi) cut in chunks of size chunk.
func chunkBounds(lo, hi, chunk, i int) (int, int) {
	a := lo + i*chunk
	return min(a, hi), min(a+chunk, hi)
}
