package collective

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/objcodec"
	"github.com/gocoll/gocoll/internal/wire"
)

// Objects point to point are for worker fleets: tasks and results that
// are Go values, sent to one rank and received from whichever sends. They
// use the object helpers' codec (WithObjectCodec, RawCodec by default).
// Unlike a collective's, a failure of theirs concerns two ranks only: a
// value that does not encode, or a message that does not decode, is the
// call's error and does not abort the job.

// SendObject sends v, encoded by the object codec, to rank dst with the
// given tag. It returns once the encoding, and v's memory, may be reused,
// as comm's Send does. A value that does not encode is an error wrapping
// codec.ErrInvalid that names the type.
//
// With RawCodec, a value whose encoding ends with a raw block of at least
// splitMin bytes (a slice of numbers, or a struct whose last field is
// one: see BcastObject) is sent from its own memory, behind the head of
// its encoding, without a copy into a buffer first; RecvObject and
// RecvObjectInto read such a block straight into the value they decode.
// The message is the encoding all the same: comm's Recv gets the same
// bytes either way.
func SendObject[T any](ctx context.Context, c *comm.Comm, dst, tag int, v T, opts ...Option) error {
	if err := nilComm(c, "SendObject"); err != nil {
		return err
	}
	oc, err := objectCodecOf(c, "SendObject", opts)
	if err != nil {
		return err
	}
	o := getP2PObject()
	defer putP2PObject(o)
	// The codec reflects on v through its address, which a local
	// variable's would move to the heap on every call: the box is pooled.
	box := boxOf(o, v)
	defer emptyBox(box)
	if _, raw := oc.(rawCodec); raw {
		head, body, ok, err := objcodec.Split(o.buf[:0], box)
		if err != nil {
			return sendEncodeFailed[T](c, err)
		}
		if ok {
			o.buf = head
			if len(body) >= splitMin && len(head) <= wire.MaxHead {
				return (*core.Comm)(c).SendSplit(ctx, dst, tag, head, body)
			}
			// A small block goes behind its head in one buffer, which is
			// what Append would encode, without encoding the head again.
			o.buf = append(head, body...)
			return c.Send(ctx, dst, tag, o.buf)
		}
	}
	b, err := oc.Append(o.buf[:0], box)
	if err != nil {
		return sendEncodeFailed[T](c, err)
	}
	o.buf = b
	return c.Send(ctx, dst, tag, b)
}

// splitMin is the smallest raw block that SendObject sends from the
// value's memory rather than copying it behind its head: below it the
// copy costs less than placing the block on the receiving side.
const splitMin = 1 << 10

func sendEncodeFailed[T any](c *comm.Comm, err error) error {
	return fmt.Errorf("%w: SendObject on rank %d: encoding %s: %w", codec.ErrInvalid, c.Rank(), reflect.TypeFor[T](), err)
}

// RecvObject receives a value sent with SendObject from rank src (or
// comm.AnySource) with the given tag (or comm.AnyTag), and returns it with
// the message's status. It receives into a pooled buffer, and when the
// message does not fit, learns its size with a probe and receives it
// again; where another goroutine receives from the same source and tag
// at once, it may then get the next one instead. A message
// that does not decode as T is an error wrapping comm.ErrMismatch that
// names the sender, the length and the type.
func RecvObject[T any](ctx context.Context, c *comm.Comm, src, tag int, opts ...Option) (T, comm.Status, error) {
	var v T
	st, err := recvObject(ctx, c, "RecvObject", src, tag, &v, opts)
	return v, st, err
}

// RecvObjectInto is RecvObject into *v: with RawCodec a slice of *v
// keeps its array where its capacity suffices, as a BcastObject
// receiver's does, so that a loop that receives values of one shape
// again and again decodes into the same memory instead of allocating
// each value anew. With GobCodec, fields the sender left at zero keep
// their old values (gob's rule); set *v to zero first where that
// matters.
func RecvObjectInto[T any](ctx context.Context, c *comm.Comm, src, tag int, v *T, opts ...Option) (comm.Status, error) {
	return recvObject(ctx, c, "RecvObjectInto", src, tag, v, opts)
}

func recvObject[T any](ctx context.Context, c *comm.Comm, call string, src, tag int, v *T, opts []Option) (comm.Status, error) {
	if err := nilComm(c, call); err != nil {
		return comm.Status{}, err
	}
	if v == nil {
		return comm.Status{}, fmt.Errorf("%w: %s on rank %d: nil value", codec.ErrInvalid, call, c.Rank())
	}
	oc, err := objectCodecOf(c, call, opts)
	if err != nil {
		return comm.Status{}, err
	}
	o := getP2PObject()
	defer putP2PObject(o)
	// A split message (SendObject) goes into *v through o.place: its
	// head is decoded as it arrives and its raw block read straight into
	// the memory the head sizes in *v. Where *v cannot take the block so,
	// the whole encoding is assembled in o.buf for Decode, which names why.
	var place core.Placer
	if _, raw := oc.(rawCodec); raw {
		o.into, place = v, o.place
	}
	for {
		// A receive posted at once into the pooled buffer, which
		// usually has room, lets the transport write the message there
		// instead of buffering it until a probe has sized it; a message
		// that does not fit stays queued, and a probe sizes it.
		o.buf = o.buf[:cap(o.buf)]
		cs, err := (*core.Comm)(c).RecvPlaced(ctx, src, tag, o.buf, place)
		st := comm.Status(cs)
		if errors.Is(err, comm.ErrTruncated) {
			if st, err = c.Probe(ctx, src, tag); err != nil {
				return st, err
			}
			o.buf = grow(o.buf[:0], st.Bytes)
			continue
		}
		if o.placeErr != nil {
			err = o.placeErr
		} else if err != nil {
			return st, err
		} else if !o.placed {
			err = oc.Decode(o.buf[:st.Bytes], v)
		}
		if err != nil {
			return st, fmt.Errorf("%w: %s on rank %d: the %d bytes from rank %d with tag %d do not decode as %s (does the sender send that type, with that codec?): %w",
				comm.ErrMismatch, call, c.Rank(), st.Bytes, st.Source, st.Tag, reflect.TypeFor[T](), err)
		}
		return st, nil
	}
}

// p2pObject is what a SendObject or a RecvObject needs beside the value,
// pooled so that a steady loop of them allocates nothing: the buffer an
// encoding is made or assembled in, the box a send's value is encoded
// from, and a receive's Placer, bound to it once.
type p2pObject struct {
	buf []byte
	box any // a *T, for the T of the last send that used it

	into     any // the *T a receive decodes into
	placed   bool
	placeErr error
	place    core.Placer // placeHead
}

var p2pObjects = sync.Pool{New: func() any {
	o := new(p2pObject)
	o.place = o.placeHead
	return o
}}

func getP2PObject() *p2pObject { return p2pObjects.Get().(*p2pObject) }

func putP2PObject(o *p2pObject) {
	if cap(o.buf) > maxPooledObjectBuf {
		o.buf = nil
	}
	o.buf, o.into, o.placed, o.placeErr = o.buf[:0], nil, false, nil
	p2pObjects.Put(o)
}

// boxOf returns o's box for a T, set to v; a box of another type is
// replaced.
func boxOf[T any](o *p2pObject, v T) *T {
	box, ok := o.box.(*T)
	if !ok {
		box = new(T)
		o.box = box
	}
	*box = v
	return box
}

// emptyBox zeroes a box once its send is done, so that a pooled box keeps
// no value's memory alive.
func emptyBox[T any](box *T) {
	var zero T
	*box = zero
}

// placeHead is a receive's Placer (core.Placer): it decodes the head of
// a split message into o.into and returns the memory there that the raw
// block goes to, or, where o.into cannot take the block so, room behind
// the head in o.buf to assemble the whole encoding in.
func (o *p2pObject) placeHead(head []byte, rest int) ([]byte, error) {
	dst, ok, err := objcodec.Place(head, rest, o.into)
	switch {
	case err != nil:
		o.placeErr = err
		return nil, err
	case ok:
		o.placed = true
		return dst, nil
	}
	o.buf = grow(o.buf[:0], len(head)+rest)
	copy(o.buf, head)
	return o.buf[len(head):], nil
}
