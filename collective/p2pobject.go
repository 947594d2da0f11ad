package collective

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// Objects point to point are for worker fleets: tasks and results that
// are Go values, sent to one rank and received from whichever sends. They
// use the object helpers' codec (WithObjectCodec, RawCodec by default).
// Unlike a collective's, a failure of theirs concerns two ranks only: a
// value that does not encode, or a message that does not decode, is the
// call's error and does not abort the job.

// SendObject sends v, encoded by the object codec, to rank dst with the
// given tag. It returns once the encoding may be reused, as comm's Send
// does. A value that does not encode is an error wrapping
// codec.ErrInvalid that names the type.
func SendObject[T any](ctx context.Context, c *comm.Comm, dst, tag int, v T, opts ...Option) error {
	if err := nilComm(c, "SendObject"); err != nil {
		return err
	}
	oc, err := objectCodecOf(c, "SendObject", opts)
	if err != nil {
		return err
	}
	buf := getObjectBuf()
	defer putObjectBuf(buf)
	b, err := oc.Append((*buf)[:0], &v)
	if err != nil {
		return fmt.Errorf("%w: SendObject on rank %d: encoding %s: %w", codec.ErrInvalid, c.Rank(), reflect.TypeFor[T](), err)
	}
	*buf = b
	return c.Send(ctx, dst, tag, b)
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
	buf := getObjectBuf()
	defer putObjectBuf(buf)
	for {
		// A receive posted at once into the pooled buffer, which
		// usually has room, lets the transport write the message there
		// instead of buffering it until a probe has sized it; a message
		// that does not fit stays queued, and a probe sizes it.
		*buf = (*buf)[:cap(*buf)]
		st, err := c.Recv(ctx, src, tag, *buf)
		if errors.Is(err, comm.ErrTruncated) {
			if st, err = c.Probe(ctx, src, tag); err != nil {
				return st, err
			}
			*buf = grow((*buf)[:0], st.Bytes)
			continue
		}
		if err != nil {
			return st, err
		}
		if err := oc.Decode((*buf)[:st.Bytes], v); err != nil {
			return st, fmt.Errorf("%w: %s on rank %d: the %d bytes from rank %d with tag %d do not decode as %s (does the sender send that type, with that codec?): %w",
				comm.ErrMismatch, call, c.Rank(), st.Bytes, st.Source, st.Tag, reflect.TypeFor[T](), err)
		}
		return st, nil
	}
}
