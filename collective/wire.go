package collective

import (
	"errors"
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// Every message of a call goes through send and irecv/await, which is
// where the call's wire codec (WithCompression) applies: without one a
// payload is the elements' own bytes, sent from and received into the
// caller's slices; with one, each message is encoded into a pooled wire
// buffer as it is sent and decoded out of one as it is received. The
// algorithms send a chunk or a block per message, so the pipelined ones
// encode chunk i+1 while chunk i is on the wire, and the scratch a link
// needs is one message per receive in flight.

// send sends s, the elements at offset off of the operation's buffer, to
// peer as step step of the algorithm. With a lossy codec and a call that
// keeps what it sends (k.keep), s is replaced by the values the peer
// decodes, so that both hold the same bits.
func (k *call[T]) send(peer, step int, s []T, off int) error {
	payload, c, wire := k.encode(s)
	err := k.sendWire(peer, step, len(s), off, c, payload)
	wire.release()
	return err
}

// encode returns s as the call sends it: its payload, in the codec it is
// in, and the pooled wire buffer holding it, for the caller to release
// once sent. With a lossy codec and a call that keeps what it sends
// (k.keep), s is replaced by the values the receivers decode.
func (k *call[T]) encode(s []T) ([]byte, codec.ID, scratchBuf) {
	c := k.cfg.codec
	if c == codec.None {
		return codec.Bytes(s), c, scratchBuf{}
	}
	k.t.Mark()
	defer k.t.Lap(core.PartCodec)
	w, wire := scratch[byte](kernel.EncodeScratchLen(c, k.me.DType, len(s)))
	if k.keep {
		payload, c := kernel.EncodeRounding(c, w, s)
		return payload, c, wire
	}
	payload, c := kernel.Encode(c, w, s)
	return payload, c, wire
}

// sendPayload sends the message of header h, its payload ready.
func (k *call[T]) sendPayload(peer int, h *wire.Header, payload []byte) error {
	if sentHook != nil {
		sentHook()
	}
	k.t.Mark()
	start := k.t.Marked()
	err := k.c.SendHeader(k.ctx, peer, h, payload)
	k.t.Lap(core.PartWire)
	if err != nil {
		return k.sendFailed(peer, err)
	}
	k.t.Sent += uint64(len(payload))
	k.span("send", start, k.t.Marked(), peer, core.StepOf(h.Tag), len(payload))
	return nil
}

// forward sends on, as step step of the algorithm, what arrived in in
// (awaitForward): n elements at offset off, in the codec and bytes they
// came in. A lossy codec's bytes decode to the received elements exactly,
// and encoding those again would only make the same bytes; a lossless
// one's would be compressed again for nothing.
func (k *call[T]) forward(peer, step int, in *inbound, n, off int) error {
	return k.sendWire(peer, step, n, off, in.codec, in.payload)
}

// sendWire sends, as step step, n elements at offset off already encoded
// with c in payload.
func (k *call[T]) sendWire(peer, step, n, off int, c codec.ID, payload []byte) error {
	h := k.header(step, n, off)
	h.Codec, h.Length = c, uint64(len(payload))
	return k.sendPayload(peer, &h, payload)
}

// sentHook, when set (by tests), is called for every message a call
// sends over a link.
var sentHook func()

// keepsRounded reports whether a collective keeps in its result buffer
// the values it sends, so that every rank ends with them: the sender's
// copy must then be rounded as the receivers' is. The others send from
// scratch or from buffers that are theirs to read only, and each of their
// results lives on one rank. Bcast's and Allgather's forwarders send
// values they received, which are rounded already; rounding them again
// changes nothing.
func keepsRounded(kind wire.Kind) bool {
	switch kind {
	case wire.KindAllreduce, wire.KindBcast, wire.KindAllgather, wire.KindAllgatherv:
		return true
	}
	return false
}

// sendFailed wraps a send's error. A send refused as invalid (a header
// this call built wrong) sent nothing, and the peer would wait for it, so
// the job is aborted.
func (k *call[T]) sendFailed(peer int, err error) error {
	if errors.Is(err, codec.ErrInvalid) {
		err = k.wrap(peer, err)
		k.c.Abort(err)
		return err
	}
	return k.wrap(peer, err)
}

// inbound is a posted receive of a call. Its payload lands in b: the
// destination's own bytes when the call sends raw, a pooled wire buffer
// (wire) when it compresses, or the caller's wire bytes (irecvInto).
type inbound struct {
	req  *core.Request
	b    []byte
	wire scratchBuf

	// Set by awaitForward: the payload as it arrived, and its codec.
	payload []byte
	codec   codec.ID
}

// irecv posts the receive of step step from peer, for the elements dst.
func (k *call[T]) irecv(peer, step int, dst []T) (inbound, error) {
	return k.irecvInto(peer, step, dst, nil)
}

// irecvInto is irecv with the wire bytes of a compressing call received
// into w instead of a pooled buffer, where they stay for the caller to
// forward; nil w is irecv.
func (k *call[T]) irecvInto(peer, step int, dst []T, w []byte) (inbound, error) {
	var in inbound
	switch c := k.cfg.codec; {
	case c == codec.None:
		in.b = codec.Bytes(dst)
	case w != nil:
		in.b = w
	default:
		in.b, in.wire = scratch[byte](kernel.MaxWireLen(c, k.me.DType, len(dst)))
	}
	req, err := k.c.IrecvHeader(peer, k.tag(step), in.b, k.t.Timed())
	if err != nil {
		in.wire.release()
		return inbound{}, k.wrap(peer, err)
	}
	in.req = req
	return in, nil
}

// await waits for in, the receive from peer, checks the message against
// this rank's call and leaves its elements in dst, the elements at
// offset off of the operation's buffer.
func (k *call[T]) await(in *inbound, peer int, dst []T, off int) error {
	defer in.withdraw()
	return k.awaitForward(in, peer, dst, off)
}

// awaitForward is await for a rank that passes what it receives on
// (forward): it keeps in's buffer, which the caller withdraws once it has
// forwarded the payload.
func (k *call[T]) awaitForward(in *inbound, peer int, dst []T, off int) error {
	n, h, err := k.arrive(in, peer, len(dst), off)
	if err != nil {
		return err
	}
	in.payload, in.codec = in.b[:n], h.Codec
	if err := k.decodeArrived(in, n, h.Codec, dst); err != nil {
		return k.mismatch(peer, &h, fmt.Sprintf("its %s payload of %d bytes at offset %d does not decode to the %d elements expected (different chunk sizes?): %v",
			h.Codec, n, h.Offset, len(dst), err))
	}
	return nil
}

// decodeArrived leaves the n payload bytes that arrived in in, coded by
// c, in dst: in place when the call sends raw elements, else decoded,
// which the tally times; around the caches in a large operation
// (receivesAround).
func (k *call[T]) decodeArrived(in *inbound, n int, c codec.ID, dst []T) error {
	if k.cfg.codec == codec.None {
		codec.Store(dst, in.b)
		return nil
	}
	k.t.Mark()
	var err error
	if k.receivesAround() {
		err = kernel.DecodeAround(c, dst, in.b[:n])
	} else {
		err = kernel.Decode(c, dst, in.b[:n])
	}
	k.t.Lap(core.PartCodec)
	return err
}

// receivesAround reports whether the call writes what it receives into
// its result around the caches, with non-temporal stores: the decoded
// payloads of a compressing call (kernel.DecodeAround) and what it takes
// out of the segment's slots (copyOut). It does in operations of
// receiveAroundMin bytes and more.
func (k *call[T]) receivesAround() bool { return k.me.Count*k.size >= receiveAroundMin }

// receiveAroundMin is the smallest operation, in bytes, that receives
// around the caches. Out of the caches, a store through them first reads
// its line from memory; around them it is one write. But a result that
// the caches still hold is written faster through them, and is there for
// the caller to read. On an Intel Xeon host with 2 MiB of second-level
// cache a core (docs/performance.md, 2026-11-30), two ranks' Allreduces
// of 16 and 64 MiB took 10-20 % less time through the segment and 12-14
// % less in BF16 over tcp, as did 64 MiB Bcasts, Gathers and Allgathers
// through the slots; at 4 to 12 MiB the two ways were within a few
// percent, mostly in favour of the caches (Allgathers of 12 MiB 6 %).
// On an AMD EPYC Zen 3 VM, whose decoding kernel alone had been a tenth
// slower with non-temporal stores even at 32 MiB, whole operations were
// level or faster around the caches (2026-11-30, against a build that
// never goes around, median ms of 6-10 alternating rounds): two ranks'
// BF16 Allreduces over tcp 6.1-6.2 against 6.3-7.0 at 16 MiB and
// 26.5-27.6 against 28.6-31.7 at 64 MiB, four ranks' 19.7 against 21.2
// at 16 MiB; through the segment 16 and 64 MiB within the host's swings
// both ways. A Receiver that timed each way's copies was tried and
// dropped: a store through the caches pays for its line's write-back
// later, when the line is evicted, not in the copy that timing sees,
// and with it two ranks' 64 MiB Allreduces through the segment took as
// long as without stores around the caches (20154 µs against 20077;
// this rule 17147, three alternating rounds). Tests lower it.
var receiveAroundMin = 16 << 20

// arrive waits for in, the receive from peer of want elements at offset
// off, and checks what arrived: its payload's length and header.
func (k *call[T]) arrive(in *inbound, peer, want, off int) (int, wire.Header, error) {
	n, h, err := k.waitArrival(in, peer)
	return n, h, k.check(peer, n, &h, want, off, err)
}

// waitArrival waits for in, the receive from peer, and accounts for
// what arrived (the tally's wait and bytes, the timeline's spans),
// before anything checks it.
func (k *call[T]) waitArrival(in *inbound, peer int) (int, wire.Header, error) {
	k.t.Mark()
	start := k.t.Marked()
	n, h, arrived, err := in.req.WaitHeader(k.ctx)
	k.t.LapArrival(arrived)
	in.req = nil
	if err == nil {
		k.t.Received += uint64(n)
		if k.t.Traced() {
			step, got := core.StepOf(h.Tag), max(start, arrived)
			k.span("wait", start, got, peer, step, 0)
			k.span("recv", got, k.t.Marked(), peer, step, n)
		}
	}
	return n, h, err
}

// awaitReduce waits for in, the receive from peer posted for got, checks
// it, and combines its elements with mine into dst (see reduceMine): the
// elements at offset off of the operation's buffer; dst is mine or got,
// all three of one length. With encode set (a lossy codec's wire bytes
// for dst's elements), the reduced elements are also encoded into encode
// and rounded to what they decode to: the bytes a ring sends its reduced
// block in, and the block as every rank will hold it. A sum whose peer's
// data is its right operand takes one pass over its operands where a
// kernel fuses decoding, adding and encoding (kernel.SumDecoded: BF16 or
// FP16 on float32). Otherwise a lossy codec's payload is decoded a few
// KiB at a time, each piece reduced, and encoded, while it is still in
// the cache, instead of decoding it all and reading it back.
func (k *call[T]) awaitReduce(in *inbound, peer int, dst []T, off int, mine, got []T, peerIsRight bool, encode []byte) error {
	return k.awaitReduceKept(in, peer, dst, off, mine, got, peerIsRight, encode, true)
}

// awaitSendSums is awaitReduce for sums that are not kept, only sent on
// in encode (a ring's reduce-scatter steps before the last, whose sums
// the allgather overwrites): where kernel.SumEncoded runs, it stores no
// sum into dst.
func (k *call[T]) awaitSendSums(in *inbound, peer int, dst []T, off int, mine, got []T, encode []byte) error {
	return k.awaitReduceKept(in, peer, dst, off, mine, got, true, encode, false)
}

// awaitReduceKept is awaitReduce, and with kept false awaitSendSums.
func (k *call[T]) awaitReduceKept(in *inbound, peer int, dst []T, off int, mine, got []T, peerIsRight bool, encode []byte, kept bool) error {
	if !k.cfg.codec.Lossy() {
		if err := k.await(in, peer, got, off); err != nil {
			return err
		}
		return k.reduceMine(dst, mine, got, peerIsRight)
	}
	defer in.withdraw()
	_, h, err := k.arrive(in, peer, len(dst), off)
	if err != nil {
		return err
	}
	// The whole step is timed as codec work, which most of it is:
	// timing each piece apart would read the clock several times for
	// every few KiB.
	k.t.Mark()
	defer k.t.Lap(core.PartCodec)
	if peerIsRight && (k.op == codec.Sum || k.op == codec.Avg) {
		// mine + got in one pass (BF16 or FP16 on float32)
		payload := in.b[:2*len(dst)]
		if !kept && encode != nil && kernel.SumEncoded(h.Codec, encode, mine, payload) ||
			kernel.SumDecoded(h.Codec, dst, mine, payload, encode) {
			return nil
		}
	}
	var blk []T
	var sb scratchBuf
	if !sameSlice(dst, got) {
		blk, sb = scratch[T](decodeBlock)
	}
	defer sb.release()
	for lo := 0; lo < len(dst); lo += decodeBlock {
		hi := min(lo+decodeBlock, len(dst))
		piece := dst[lo:hi]
		if blk != nil {
			piece = blk[:hi-lo]
		}
		// check has held the payload to 2 bytes an element, so Decode
		// cannot fail.
		_ = kernel.Decode(h.Codec, piece, in.b[2*lo:2*hi])
		if err := k.reduceMineUntimed(dst[lo:hi], mine[lo:hi], piece, peerIsRight); err != nil {
			return err
		}
		if encode != nil {
			kernel.EncodeRounding(h.Codec, encode[2*lo:2*hi], dst[lo:hi])
		}
	}
	return nil
}

// decodeBlock is the elements awaitReduce decodes at a time: 16 KiB of
// float64, which stays in a core's first-level cache.
const decodeBlock = 2048

// withdraw cancels in if it is still posted and returns its wire buffer.
func (in *inbound) withdraw() {
	if in.req != nil {
		in.req.WaitHeader(canceled)
		in.req = nil
	}
	in.wire.release()
	in.wire, in.payload = scratchBuf{}, nil
}

// withdrawAll withdraws every receive of ins.
func withdrawAll(ins []inbound) {
	for i := range ins {
		ins[i].withdraw()
	}
}

// recv receives step step from peer into dst, the elements at offset off.
func (k *call[T]) recv(peer, step int, dst []T, off int) error {
	in, err := k.irecv(peer, step, dst)
	if err != nil {
		return err
	}
	return k.await(&in, peer, dst, off)
}

// sendRecvReduce is sendRecv with peer both ways whose received
// elements, landing in got, are combined with mine into dst as
// recvReduce combines them (awaitReduce: with a lossy codec a piece at a
// time, or in one fused pass).
func (k *call[T]) sendRecvReduce(peer, step int, s []T, soff int, dst, mine, got []T, off int, peerIsRight bool) error {
	in, err := k.postAndSend(peer, step, s, soff, peer, step, got)
	if err != nil {
		return err
	}
	return k.awaitReduce(&in, peer, dst, off, mine, got, peerIsRight, nil)
}

// sendRecv sends s to rank to and receives into r from rank from at
// once.
func (k *call[T]) sendRecv(to, sendStep int, s []T, soff int, from, recvStep int, r []T, roff int) error {
	in, err := k.postAndSend(to, sendStep, s, soff, from, recvStep, r)
	if err != nil {
		return err
	}
	return k.await(&in, from, r, roff)
}

// postAndSend posts the receive into r from rank from and then sends s
// to rank to, the receive first so that neither side waits for the
// other's send. It returns the receive, for the caller to await; it is
// withdrawn when the send fails.
func (k *call[T]) postAndSend(to, sendStep int, s []T, soff int, from, recvStep int, r []T) (inbound, error) {
	in, err := k.irecv(from, recvStep, r)
	if err != nil {
		return inbound{}, err
	}
	if err := k.send(to, sendStep, s, soff); err != nil {
		in.withdraw()
		return inbound{}, err
	}
	return in, nil
}

// check turns the outcome of a receive into this call's error: a sender
// whose message differs from what this rank's call expects is a mismatch,
// which aborts the job. comm compares the calls of every frame as it
// arrives; this check adds what a call does not describe (codecs,
// lengths and offsets, which chunk sizes decide) and covers operations
// too old for comm to remember.
func (k *call[T]) check(peer, n int, h *wire.Header, want, off int, err error) error {
	if err != nil {
		if te := new(comm.TruncateError); errors.As(err, &te) {
			if k.codecDiffers(h) {
				return k.codecMismatch(peer, h)
			}
			return k.mismatch(peer, h, fmt.Sprintf("it sent %d bytes where %d were expected", te.Len, te.Cap))
		}
		return k.wrap(peer, err)
	}
	if h.Call() != k.me {
		return k.mismatch(peer, h, "")
	}
	if k.codecDiffers(h) {
		return k.codecMismatch(peer, h)
	}
	// Raw and lossy payloads take a fixed number of bytes per element; a
	// lossless one's length is checked by decoding it.
	per := kernel.MaxWireLen(h.Codec, k.me.DType, 1)
	fixed := h.Codec == codec.None || h.Codec.Lossy()
	if (fixed && n != want*per) || int(h.Offset) != off {
		return k.mismatch(peer, h, fmt.Sprintf("it sent %d elements at offset %d where %d at offset %d were expected (different chunk sizes?)",
			n/per, h.Offset, want, off))
	}
	return nil
}

// codecDiffers reports whether h's payload is in a codec this call does
// not send. A lossless codec's payload that did not shrink goes raw; any
// other difference is two ranks passing different codecs.
func (k *call[T]) codecDiffers(h *wire.Header) bool {
	mine := k.cfg.codec
	return h.Codec != mine && !(h.Codec == codec.None && !mine.Lossy())
}

func (k *call[T]) codecMismatch(peer int, h *wire.Header) error {
	return k.mismatch(peer, h, fmt.Sprintf("it sent %s-coded data where this rank's call uses %s", h.Codec, k.cfg.codec))
}

// A rank that receives nothing in a call (a Bcast's or Scatter's root, a
// leaf of a Reduce or Gather) has compared its call with nobody's, and
// would return as if every rank agreed. The rank it sends to therefore
// acknowledges with a header that carries its own call (ack), which the
// sender awaits before it returns (awaitAck). The acknowledging rank sends
// it as soon as its call starts, before it waits for the data: the
// acknowledgement then travels while the data does, and the sender waits
// for it no longer than the data takes to arrive, instead of for a round
// trip. In a loop of calls it arrives before the sender even looks.
// Its Offset carries the length of the acknowledging rank's pieces
// (call.pieceLen), the one thing about its call that a pipelined
// algorithm's sender could not tell otherwise. These acknowledgements are
// the receipts of WithReceipts: a call without receipts neither sends nor
// awaits one.

// ackStep is the step of acknowledgements, above every step an algorithm
// of a rooted collective uses.
const ackStep = core.MaxTagStep

// ack acknowledges peer's part of the call.
func (k *call[T]) ack(peer int) error { return k.ackCount(peer, k.me.Count) }

// ackCount is ack with count in the header's Count: the call's count, or
// for Gatherv and Scatterv, whose calls record none, the elements of
// peer's part as this rank counts them (see sendPart).
func (k *call[T]) ackCount(peer, count int) error {
	if k.me.NoReceipts {
		return nil
	}
	h := k.header(ackStep, 0, k.pieceLen)
	h.Codec, h.Count = k.cfg.codec, uint64(count)
	if err := k.c.SendHeader(k.ctx, peer, &h, nil); err != nil {
		return k.sendFailed(peer, err)
	}
	return nil
}

// awaitAck waits for peer's acknowledgement and checks the call it
// carries against this rank's.
func (k *call[T]) awaitAck(peer int) error {
	if k.me.NoReceipts {
		return nil
	}
	in, err := k.irecv(peer, ackStep, nil)
	if err != nil {
		return err
	}
	defer in.withdraw()
	_, _, err = k.arrive(&in, peer, 0, k.pieceLen)
	return err
}

// treeLeaf reports whether virtual rank v > 0 of a binomial tree of p
// ranks (Reduce's, Gather's) has no children: v+1 would be its first.
func treeLeaf(v, p int) bool { return v&1 == 1 || v+1 >= p }
