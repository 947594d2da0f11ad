package comm

import (
	"context"
	"unsafe"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/kernel"
)

// AnySource, as the source of a receive or a probe, matches a message
// from any rank of the communicator, as MPI_ANY_SOURCE does.
const AnySource = core.AnySource

// AnyTag, as the tag of a receive or a probe, matches a message with any
// tag, as MPI_ANY_TAG does. It never matches the library's own traffic
// (collectives use negative tags) or another communicator's.
const AnyTag = core.AnyTag

// Status describes a message: one received (Recv, Request.Wait, WaitAny),
// one a probe found (Probe, Iprobe), or one sent (a send's Request).
type Status struct {
	Source int // the sender's rank in the communicator; for a send, the destination
	Tag    int // the message's tag
	Bytes  int // its payload length in bytes
}

// Request is a send started with Isend or a receive posted with Irecv.
// Wait for it exactly once, with Wait, WaitAny or WaitAll; it must not be
// used afterwards.
type Request core.Request

// Send sends b to rank dst with the given tag. It returns once b may be
// reused, which for messages the peer has not yet asked for means once the
// bytes are handed to the transport. Tags are non-negative; messages with
// the same tag from one sender arrive in the order they were sent, also
// when some of them were sent with Isend.
func (c *Comm) Send(ctx context.Context, dst, tag int, b []byte) error {
	return c.core().Send(ctx, dst, tag, b)
}

// Recv receives a message with the given tag from rank src into b and
// returns its status. src may be AnySource and tag AnyTag; the status then
// says which rank sent the message, with which tag. As in MPI, a message
// goes to the earliest posted receive that matches it, named or not, a
// receive takes the earliest matching message that has arrived, and
// messages from one sender with one tag are received in the order they
// were sent. A message longer than b is an error wrapping ErrTruncated
// that names both sizes; the message is not consumed.
//
// Recv honours ctx and the communicator's timeout. A receive from a named
// rank that the timeout ends finds that rank silent and fails the
// communicator (see Failure); one from AnySource blames no rank, and
// fails alone with an error wrapping ErrTimeout, so a coordinator that
// waits for any worker may simply call it again.
func (c *Comm) Recv(ctx context.Context, src, tag int, b []byte) (Status, error) {
	st, err := c.core().Recv(ctx, src, tag, b)
	return Status(st), err
}

// Irecv posts a receive and returns at once; src may be AnySource and tag
// AnyTag. A message that arrives after the receive is posted is read
// straight into b; b must not be touched until the request completes.
func (c *Comm) Irecv(src, tag int, b []byte) (*Request, error) {
	r, err := c.core().Irecv(src, tag, b)
	return (*Request)(r), err
}

// Isend starts a send of b to rank dst with the given tag and returns at
// once; b must not be touched until the request completes. Sends to one
// rank go in the order they were started, Isend's and Send's alike. Each
// destination that Isend has sent to keeps one goroutine, which sends
// them, until the world communicator is closed or fails.
func (c *Comm) Isend(dst, tag int, b []byte) (*Request, error) {
	r, err := c.core().Isend(dst, tag, b)
	return (*Request)(r), err
}

// Wait blocks until the request completes and returns its status. It
// honours ctx and the communicator's timeout. A receive that no message
// matched yet is withdrawn, and a send that has not begun is dropped; the
// error then wraps ctx's error or ErrTimeout. A receive or send already
// under way is seen through first, since its buffer is in use.
func (r *Request) Wait(ctx context.Context) (Status, error) {
	st, err := (*core.Request)(r).Wait(ctx)
	return Status(st), err
}

// WaitAny waits until one of reqs completes and returns its index and
// status, as its Wait would; that entry of reqs is set to nil, so that
// WaitAny can be called again on the rest. Nil entries are skipped. When
// ctx ends first, the error wraps its cause and every request stays
// pending, and so it does when the communicator's timeout passes (the
// error then wraps ErrTimeout): a wait for any of several requests blames
// no rank.
func WaitAny(ctx context.Context, reqs []*Request) (int, Status, error) {
	i, st, err := core.WaitAny(ctx, coreRequests(reqs))
	return i, Status(st), err
}

// WaitAll waits for every request of reqs, in order, and returns their
// statuses (index for index) and the first error. Every entry of reqs is
// set to nil: each request is finished, also after an error.
func WaitAll(ctx context.Context, reqs []*Request) ([]Status, error) {
	sts := make([]Status, len(reqs))
	var first error
	for i, r := range reqs {
		if r == nil {
			continue
		}
		st, err := r.Wait(ctx)
		sts[i], reqs[i] = st, nil
		if err != nil && first == nil {
			first = err
		}
	}
	return sts, first
}

// coreRequests views reqs as the engine's requests, in place: a Request
// is a core.Request, so the two slices have one layout, and the engine's
// nil stores land in reqs.
func coreRequests(reqs []*Request) []*core.Request {
	return *(*[]*core.Request)(unsafe.Pointer(&reqs))
}

// Probe waits until a receive from src with tag (AnySource and AnyTag
// allowed) would take a message, and returns the message's status
// without receiving it: a receive from that status's Source and Tag then
// takes it, unless another goroutine's receive takes it first. It honours
// ctx and the communicator's timeout as Recv does.
func (c *Comm) Probe(ctx context.Context, src, tag int) (Status, error) {
	st, err := c.core().Probe(ctx, src, tag)
	return Status(st), err
}

// Iprobe is Probe that does not wait: it reports whether a matching
// message has arrived, and its status when one has.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	st, ok, err := c.core().Iprobe(src, tag)
	return Status(st), ok, err
}

// Sendrecv sends send to rank dst with sendTag and receives a message from
// rank src (or AnySource) with recvTag (or AnyTag) into recv, at once, as
// MPI_Sendrecv does: the receive is posted before the send starts, so two
// ranks that exchange with each other do not wait for one another.
func (c *Comm) Sendrecv(ctx context.Context, send []byte, dst, sendTag int, recv []byte, src, recvTag int) (Status, error) {
	r, err := c.Irecv(src, recvTag, recv)
	if err != nil {
		return Status{}, err
	}
	return c.finishSendrecv(ctx, r, c.Send(ctx, dst, sendTag, send))
}

// finishSendrecv finishes a Sendrecv whose receive r was posted and whose
// send ended with sendErr.
func (c *Comm) finishSendrecv(ctx context.Context, r *Request, sendErr error) (Status, error) {
	if sendErr != nil {
		// The receive must not outlive the call with recv in use.
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		_, _ = r.Wait(cancelled) // the send's error is the call's
		return Status{}, sendErr
	}
	return r.Wait(ctx)
}

// Send sends data to rank dst with the given tag, as Comm.Send does with
// its bytes; the message says its element type, which Recv checks. On
// little-endian hosts the slice's own memory is sent, without a copy.
func Send[T codec.Elem](ctx context.Context, c *Comm, dst, tag int, data []T) error {
	return c.core().SendTyped(ctx, dst, tag, codec.Bytes(data), kernel.DTypeOf[T](), len(data))
}

// Recv receives a message from rank src (or AnySource) with the given tag
// (or AnyTag) into data, as Comm.Recv does, and returns its status; the
// elements received are st.Bytes divided by the size of T. A message of
// another element type (sent with Send of another T) or of a length that
// is not a whole number of elements is an error wrapping ErrMismatch. On
// little-endian hosts the message is read straight into data.
func Recv[T codec.Elem](ctx context.Context, c *Comm, src, tag int, data []T) (Status, error) {
	r, err := Irecv(c, src, tag, data)
	if err != nil {
		return Status{}, err
	}
	return r.Wait(ctx)
}

// Isend starts a send of data to rank dst with the given tag, as
// Comm.Isend does with its bytes, and returns at once; the message says
// its element type, as Send's does. data must not be touched until the
// request completes. On little-endian hosts the slice's own memory is
// sent, without a copy.
func Isend[T codec.Elem](c *Comm, dst, tag int, data []T) (*Request, error) {
	r, err := c.core().IsendTyped(dst, tag, codec.Bytes(data), kernel.DTypeOf[T](), len(data))
	return (*Request)(r), err
}

// Irecv posts a receive of a message from rank src (or AnySource) with
// the given tag (or AnyTag) into data, as Comm.Irecv does, and returns at
// once; waiting for it (Wait, WaitAny, WaitAll) fails as Recv does on a
// message of another element type or of a part of an element. data must
// not be touched until the request completes. On little-endian hosts the
// message is read straight into data.
func Irecv[T codec.Elem](c *Comm, src, tag int, data []T) (*Request, error) {
	b := codec.Bytes(data)
	var finish func([]byte)
	if !codec.Aliasing {
		finish = func(got []byte) { codec.Store(data, got) }
	}
	dt := kernel.DTypeOf[T]()
	r, err := c.core().IrecvTyped(src, tag, b, dt, dt.Size(), finish)
	return (*Request)(r), err
}

// Sendrecv is Comm.Sendrecv of typed slices, whose element types may
// differ, as MPI_Sendrecv's may: it sends send to rank dst with sendTag
// and receives into recv from rank src (or AnySource) with recvTag (or
// AnyTag), at once, checking the message received as Recv does.
func Sendrecv[S, R codec.Elem](ctx context.Context, c *Comm, send []S, dst, sendTag int, recv []R, src, recvTag int) (Status, error) {
	r, err := Irecv(c, src, recvTag, recv)
	if err != nil {
		return Status{}, err
	}
	return c.finishSendrecv(ctx, r, Send(ctx, c, dst, sendTag, send))
}
