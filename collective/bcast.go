package collective

import (
	"context"
	"math/bits"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/wire"
)

// Bcast copies root's buf into buf of every other rank. Algorithms: Tree
// (binomial tree, lg p steps; the default for small buffers, and for
// every size where all ranks run on one host: it moves the fewest bytes
// in all), Linear (root sends to every rank itself, one step; the default
// for small buffers and at most 4 ranks without receipts, see
// WithReceipts), Chain (a pipelined chain root → root+1 → …, cut in
// WithChunkSize chunks; the default for large buffers) and
// ScatterAllgather (root scatters one block to each rank down a binomial
// tree, then a ring allgather; the default in between, as it sends each
// byte about twice whatever p).
func Bcast[T codec.Elem](ctx context.Context, c *comm.Comm, buf []T, root int, opts ...Option) (err error) {
	var k call[T]
	if err = begin(&k, ctx, c, wire.KindBcast, codec.Op{}, len(buf), root, opts); err != nil {
		return err
	}
	defer k.leave(&err)
	switch k.me.Algorithm {
	case Chain:
		return bcastChain(&k, buf, root, 0)
	case ScatterAllgather:
		return bcastScatterAllgather(&k, buf, root, 0)
	case Shm:
		return bcastShm(&k, buf, root)
	case Linear:
		return bcastLinear(&k, buf, root)
	}
	return bcastTree(&k, buf, root, 0)
}

// bcastLinear: root sends buf to every other rank in turn, which receive
// it straight into buf.
func bcastLinear[T codec.Elem](k *call[T], buf []T, root int) error {
	if k.c.Size() == 1 {
		return nil
	}
	if k.c.Rank() != root {
		if err := k.ack(root); err != nil {
			return err
		}
		return k.recv(root, 0, buf, 0)
	}
	payload, c, wire := k.encode(buf) // once, for every rank
	defer wire.release()
	for r := range k.c.Size() {
		if r != root {
			if err := k.sendWire(r, 0, len(buf), 0, c, payload); err != nil {
				return err
			}
		}
	}
	return awaitAcks(k, root)
}

// bcastTree broadcasts root's buf down a binomial tree, using steps step0
// to step0+63: virtual rank v = rank - root mod p receives from v minus
// its lowest set bit, then sends to v+2^j for every 2^j below that bit,
// farthest first, so that the largest subtree starts soonest. Root
// encodes its buf once for all its children; a rank other than root
// forwards what it received in the bytes it arrived in.
func bcastTree[T codec.Elem](k *call[T], buf []T, root, step0 int) error {
	p, me := k.c.Size(), k.c.Rank()
	v := (me - root + p) % p
	if v != 0 && v&(v-1) == 0 && k.me.Kind == wire.KindBcast {
		// Root's child. (Allreduce's root heard in its reduce.)
		if err := k.ack(root); err != nil {
			return err
		}
	}
	mask := 1
	var in inbound // what this rank received, which it forwards
	defer in.withdraw()
	if v == 0 && p > 1 {
		// Root sends its buf, encoded once, to every child.
		var wire scratchBuf
		in.payload, in.codec, wire = k.encode(buf)
		defer wire.release()
	}
	for ; mask < p; mask <<= 1 {
		if v&mask != 0 {
			parent := (v - mask + root) % p
			var err error
			if in, err = k.irecv(parent, step0+bits.TrailingZeros(uint(mask)), buf); err != nil {
				return err
			}
			if err := k.awaitForward(&in, parent, buf, 0); err != nil {
				return err
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask >= p {
			continue
		}
		child, step := (v+mask+root)%p, step0+bits.TrailingZeros(uint(mask))
		if err := k.forward(child, step, &in, len(buf), 0); err != nil {
			return err
		}
	}
	if v == 0 && k.me.Kind == wire.KindBcast {
		for mask := 1; mask < p; mask <<= 1 {
			if err := k.awaitAck((mask + root) % p); err != nil {
				return err
			}
		}
	}
	return nil
}

// chainWindow bounds the chunks a chain rank keeps posted receives for:
// enough that the next chunks land straight in buf while this one is
// forwarded.
const chainWindow = 8

// bcastChain broadcasts root's buf along the chain root → root+1 → … →
// root-1 (mod p), in chunks of the configured size, using steps step0 to
// step0+MaxChunks-1. Each rank keeps receives posted for the next
// chainWindow chunks, so chunks land straight in buf, and forwards chunk
// i as soon as it has it while later chunks are still arriving: after
// the first chunk crosses the chain, every link carries data at once.
// It forwards a chunk in the bytes it arrived in, compressed or not.
func bcastChain[T codec.Elem](k *call[T], buf []T, root, step0 int) error {
	p, me := k.c.Size(), k.c.Rank()
	if p == 1 {
		return nil
	}
	v := (me - root + p) % p
	next, prev := (me+1)%p, (me-1+p)%p
	n := len(buf)
	chunk := capChunk(k.cfg.chunkElems(k.size), n)
	// An empty buffer still goes down the chain as one empty message, so
	// that a rank with a different count is told instead of left waiting.
	nc := max(1, (n+chunk-1)/chunk)
	k.pieceLen = min(chunk, n)

	if v == 0 {
		for i := range nc {
			lo, hi := chunkBounds(0, n, chunk, i)
			if err := k.send(next, step0+i, buf[lo:hi], lo); err != nil {
				return err
			}
		}
		return k.awaitAck(next)
	}
	if v == 1 {
		// Root hears from nobody else.
		if err := k.ack(prev); err != nil {
			return err
		}
	}
	var ins [chainWindow]inbound
	defer withdrawAll(ins[:])
	post := func(i int) (err error) {
		lo, hi := chunkBounds(0, n, chunk, i)
		ins[i%chainWindow], err = k.irecv(prev, step0+i, buf[lo:hi])
		return err
	}
	for i := range min(nc, chainWindow) {
		if err := post(i); err != nil {
			return err
		}
	}
	for i := range nc {
		lo, hi := chunkBounds(0, n, chunk, i)
		// Take chunk i out of its slot, which the receive of chunk
		// i+chainWindow takes over, and forward it as it came.
		in := ins[i%chainWindow]
		ins[i%chainWindow] = inbound{}
		err := k.awaitForward(&in, prev, buf[lo:hi], lo)
		if err == nil && i+chainWindow < nc {
			err = post(i + chainWindow)
		}
		if err == nil && v < p-1 {
			err = k.forward(next, step0+i, &in, hi-lo, lo)
		}
		in.withdraw()
		if err != nil {
			return err
		}
	}
	return nil
}

// bcastScatterAllgather broadcasts root's buf in two phases: root
// scatters block(n, p, r) to each rank r down a binomial tree (each rank
// receives its subtree's blocks and passes them on, so root sends
// n(p-1)/p elements in lg p messages), then a ring allgather brings every
// block to every rank. Each byte crosses about two links instead of lg p,
// which is what makes it beat the tree for mid-size buffers.
func bcastScatterAllgather[T codec.Elem](k *call[T], buf []T, root, step0 int) error {
	p := k.c.Size()
	if p == 1 {
		return nil
	}
	if err := scatterBlocksTree(k, buf, root, step0); err != nil {
		return err
	}
	return allgatherBlocksRing(k, buf, step0+phaseSteps)
}

// scatterBlocksTree leaves block(n, p, r) of root's buf in rank r's buf,
// using steps step0 to step0+127. Virtual rank v = rank - root mod p
// heads the subtree of virtual ranks [v, v+size); its parent sends it
// those ranks' blocks, at most two messages since the ranks wrap past p-1
// at most once (rankRuns), straight into buf.
func scatterBlocksTree[T codec.Elem](k *call[T], buf []T, root, step0 int) error {
	p, me := k.c.Size(), k.c.Rank()
	n := len(buf)
	v := (me - root + p) % p
	mask := 1
	for ; mask < p; mask <<= 1 {
		if v&mask != 0 {
			parent := (v - mask + root) % p
			step := step0 + 2*bits.TrailingZeros(uint(mask))
			a0, a1, b1 := rankRuns(p, root, v, min(v+mask, p))
			lo, hi := blockSpan(n, p, a0, a1)
			if err := k.recv(parent, step, buf[lo:hi], lo); err != nil {
				return err
			}
			if b1 > 0 {
				lo, hi = blockSpan(n, p, 0, b1)
				if err := k.recv(parent, step+1, buf[lo:hi], lo); err != nil {
					return err
				}
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		child := v + mask
		if child >= p {
			continue
		}
		step := step0 + 2*bits.TrailingZeros(uint(mask))
		a0, a1, b1 := rankRuns(p, root, child, min(child+mask, p))
		lo, hi := blockSpan(n, p, a0, a1)
		to := (child + root) % p
		if err := k.send(to, step, buf[lo:hi], lo); err != nil {
			return err
		}
		if b1 > 0 {
			lo, hi = blockSpan(n, p, 0, b1)
			if err := k.send(to, step+1, buf[lo:hi], lo); err != nil {
				return err
			}
		}
	}
	return nil
}

// allgatherBlocksRing completes buf on every rank when rank i holds
// block(n, p, i) of it, using steps step0 to step0+p-2: in step s each
// rank passes the block it received last (its own, at first) to the
// next rank and receives the previous rank's, straight into buf.
func allgatherBlocksRing[T codec.Elem](k *call[T], buf []T, step0 int) error {
	p, me := k.c.Size(), k.c.Rank()
	n := len(buf)
	right, left := (me+1)%p, (me-1+p)%p
	for s := range p - 1 {
		slo, shi := block(n, p, (me-s+p)%p)
		rlo, rhi := block(n, p, (me-s-1+2*p)%p)
		if err := k.sendRecv(right, step0+s, buf[slo:shi], slo, left, step0+s, buf[rlo:rhi], rlo); err != nil {
			return err
		}
	}
	return nil
}

// rankRuns maps the ranks [vlo, vhi) counted from root (virtual rank v is
// rank root+v mod p), with 0 <= vlo < vhi <= p, to runs of real ranks:
// [a0, a1) and, when the range wraps past rank p-1, [0, b1); b1 is 0
// when it does not. Whether it wraps depends on ranks only, never on
// element counts, so sender and receiver always agree on the messages.
func rankRuns(p, root, vlo, vhi int) (a0, a1, b1 int) {
	switch {
	case root+vlo >= p:
		return root + vlo - p, root + vhi - p, 0
	case root+vhi <= p:
		return root + vlo, root + vhi, 0
	}
	return root + vlo, p, root + vhi - p
}

// blockSpan is the element range of blocks [a, b) of n elements cut in p
// blocks.
func blockSpan(n, p, a, b int) (lo, hi int) {
	lo, _ = block(n, p, a)
	_, hi = block(n, p, b-1)
	return lo, hi
}
