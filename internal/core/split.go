package core

import (
	"context"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// Split messages. An object that collective.SendObject sends is a head
// that its codec encodes and a raw block that is the value's own memory
// (a []float32, say). SendSplit sends the two as one message without
// first copying them into one buffer, and its header says how long the
// head is (wire.Header.Head). A receive posted with a Placer reads the
// head, lets the Placer decode it and size the value, and reads the rest
// straight into the value's memory: the block is copied once, from the
// sender's value into the receiver's, as a typed slice is. Any other
// receive takes a split message as the one payload it is, head then
// block.

// A Placer says where the rest of a split message goes. Given the head,
// which it must not retain, and the length of the rest, it returns the
// slice of exactly that length that the rest is read into, or an error,
// which fails the receive (the rest is then read and dropped; the
// status still counts the whole payload). It runs
// on whichever goroutine reads the message, while the receive's waiter
// waits, and must not block.
type Placer func(head []byte, rest int) ([]byte, error)

// SendSplit is Send of a payload in two parts, head then body, which
// the receiver gets as one; a receive posted with a Placer (RecvPlaced)
// reads body straight into the memory the Placer gives for it. head
// must be at most wire.MaxHead bytes, and neither part may be touched
// until SendSplit returns.
func (c *Comm) SendSplit(ctx context.Context, dst, tag int, head, body []byte) error {
	if err := c.check("send", dst, tag); err != nil {
		return err
	}
	if len(head) > wire.MaxHead {
		return c.opError("send", dst, int64(tag), invalidf("a head of %d bytes exceeds %d", len(head), wire.MaxHead))
	}
	n := len(head) + len(body)
	h := wire.Header{Kind: wire.KindSend, DType: kernel.Uint8, Comm: c.id, Tag: int64(tag),
		Count: uint64(n), Length: uint64(n), Root: -1, Head: uint32(len(head))}
	return c.sendUser(ctx, dst, &h, head, body)
}

// RecvPlaced is Recv with a Placer: a split message (SendSplit) needs
// room in b for its head only, and its rest goes where place says; any
// other message is received into b as Recv receives it. The status's
// Bytes counts the whole payload.
func (c *Comm) RecvPlaced(ctx context.Context, src, tag int, b []byte, place Placer) (Status, error) {
	if err := c.checkRecv("recv", src, tag); err != nil {
		return Status{}, err
	}
	return c.post(src, int64(tag), b, place).Wait(ctx)
}

// fits reports whether r has room for the message of header h: for the
// whole payload, or for a placed receive of a split message, its head.
func (r *Request) fits(h *wire.Header) bool {
	if r.place != nil && h.Head > 0 {
		return int(h.Head) <= len(r.buf)
	}
	return h.Length <= uint64(len(r.buf))
}

// truncated completes r, which has no room for the message of header h
// (fits), with the error that says so.
func (r *Request) truncated(h *wire.Header) {
	r.complete(0, h, &TruncateError{Len: int(h.Length), Cap: len(r.buf)})
}

// deliver completes r, which fits it, with the message of header h whose
// payload is in memory: a, then b. A split message's head is within a.
func (r *Request) deliver(h *wire.Header, a, b []byte) {
	dst := r.buf
	if r.place != nil && h.Head > 0 {
		head := a[:h.Head]
		var err error
		if dst, err = r.placeRest(head, int(h.Length)-len(head)); err != nil {
			r.complete(int(h.Length), h, err)
			return
		}
		a = a[len(head):]
	}
	copy(dst[copy(dst, a):], b)
	r.complete(int(h.Length), h, nil)
}

// read reads the payload of the message of header h, which r fits, off
// l into r. It returns the link's error, after which r has not
// completed, and, with none, the error r completes with (a Placer's).
func (r *Request) read(l transport.Link, h *wire.Header) (linkErr, err error) {
	n := int(h.Length)
	if r.place == nil || h.Head == 0 {
		return l.ReadPayload(r.buf[:n]), nil
	}
	head := r.buf[:h.Head]
	if err := l.ReadPayload(head); err != nil {
		return err, nil
	}
	dst, err := r.placeRest(head, n-len(head))
	if err != nil {
		return discard(l, n-len(head)), err
	}
	return l.ReadPayload(dst), nil
}

// placeRest asks r's Placer where the rest of a split message goes.
func (r *Request) placeRest(head []byte, rest int) ([]byte, error) {
	dst, err := r.place(head, rest)
	if err == nil && len(dst) != rest {
		err = invalidf("the placer gave %d bytes for the %d after a message's head", len(dst), rest)
	}
	return dst, err
}

// discard reads n bytes of the current message's payload off l and drops
// them, so that a receive that fails on a split message's head leaves
// the link at the next message whoever reads it next. It runs only on
// such failures, which a program that sends and receives one type never
// meets.
func discard(l transport.Link, n int) error {
	scratch := make([]byte, min(n, 64<<10))
	for n > 0 {
		k := min(n, len(scratch))
		if err := l.ReadPayload(scratch[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}
