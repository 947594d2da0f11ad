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
// the message's status. It learns the message's size with a probe and
// then receives that message; where another goroutine receives from the
// same source and tag at once, it may get the next one instead. A message
// that does not decode as T is an error wrapping comm.ErrMismatch that
// names the sender, the length and the type.
func RecvObject[T any](ctx context.Context, c *comm.Comm, src, tag int, opts ...Option) (T, comm.Status, error) {
	var v T
	if err := nilComm(c, "RecvObject"); err != nil {
		return v, comm.Status{}, err
	}
	oc, err := objectCodecOf(c, "RecvObject", opts)
	if err != nil {
		return v, comm.Status{}, err
	}
	buf := getObjectBuf()
	defer putObjectBuf(buf)
	for {
		st, err := c.Probe(ctx, src, tag)
		if err != nil {
			return v, st, err
		}
		*buf = grow((*buf)[:0], st.Bytes)
		st, err = c.Recv(ctx, st.Source, st.Tag, *buf)
		if errors.Is(err, comm.ErrTruncated) {
			continue // another receive took the probed message
		}
		if err != nil {
			return v, st, err
		}
		if err := oc.Decode((*buf)[:st.Bytes], &v); err != nil {
			return v, st, fmt.Errorf("%w: RecvObject on rank %d: the %d bytes from rank %d with tag %d do not decode as %s (does the sender send that type, with that codec?): %w",
				comm.ErrMismatch, c.Rank(), st.Bytes, st.Source, st.Tag, reflect.TypeFor[T](), err)
		}
		return v, st, nil
	}
}
