package core

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// Comm is a communicator: a group of ranks that exchange messages. The
// world communicator that Init and NewLocal return holds every rank of the
// job; Split makes smaller ones. Its methods may be called from several
// goroutines at once, but blocking collectives of one communicator may
// not overlap (see EnterCall and the package doc's Concurrency section).
type Comm struct {
	ep     *endpoint
	id     uint64
	rank   int
	group  []int      // world rank of each rank of this communicator
	calls  *callTable // the operations of this communicator on this rank
	seq    atomic.Uint64
	closed atomic.Bool
	seg    *Segment   // shared memory of a communicator on one host
	hier   *Hierarchy // levels of a communicator across hosts
	// members is set by the first wildcard receive or probe (memberList).
	members atomic.Pointer[members]
	// oneHost: every rank runs on one host, whatever links join them.
	oneHost bool
	// localRank and localSize: this rank's index among the ranks of c
	// on its host, in rank order, and how many they are (LocalRank).
	localRank, localSize int

	busy atomic.Uint32 // the blocking call running (EnterCall)

	// What every call's tally reads (StartTally), copied from the
	// endpoint: its options sit on cache lines that a small call would
	// otherwise miss.
	sampling uint64 // Options.statsSampling
	traced   bool   // the rank keeps a timeline
	stats    statsTable
}

// worldID is the id of the world communicator. Split derives the ids of
// the others from their parent's, so every member computes the same id.
const worldID = 1

// splitEntry is the size of one rank's (color, key) in Split's table.
const splitEntry = 16

func newWorld(ep *endpoint) *Comm {
	group := make([]int, ep.size)
	for i := range group {
		group[i] = i
	}
	return ep.bind(&Comm{ep: ep, id: worldID, rank: ep.rank, group: group})
}

// bind attaches c, its group and rank set, to its call table on ep, and
// works out what c's ranks' hosts say of it (OneHost, LocalRank).
func (ep *endpoint) bind(c *Comm) *Comm {
	c.calls = ep.calls(c.id)
	c.calls.bind(c)
	c.sampling, c.traced = uint64(ep.opts.statsSampling), ep.timeline != nil
	c.oneHost = true
	own := ep.hosts[c.group[c.rank]]
	for r, w := range c.group {
		c.oneHost = c.oneHost && ep.hosts[w] == ep.hosts[c.group[0]]
		if ep.hosts[w] == own {
			if r < c.rank {
				c.localRank++
			}
			c.localSize++
		}
	}
	return c
}

// Logger is the logger of c's rank (comm.WithLogger), which names the
// rank in every record.
func (c *Comm) Logger() *slog.Logger { return c.ep.log }

// OneHost reports whether every rank of c runs on one host. Links
// between them, tcp ones too, then cost CPU time of that host rather
// than time on a wire.
func (c *Comm) OneHost() bool { return c.oneHost }

// LocalRank is comm.Comm.LocalRank: c.Rank's index among the ranks of c
// whose host identity equals its own, counted in rank order.
func (c *Comm) LocalRank() int { return c.localRank }

// LocalSize is comm.Comm.LocalSize: the number of ranks of c whose host
// identity equals this rank's, this rank among them.
func (c *Comm) LocalSize() int { return c.localSize }

// Rank is comm.Comm.Rank.
func (c *Comm) Rank() int { return c.rank }

// Size is comm.Comm.Size.
func (c *Comm) Size() int { return len(c.group) }

// ID identifies the communicator within the job; it is the same on every
// member.
func (c *Comm) ID() uint64 { return c.id }

// WorldRank is the rank in the job (the world communicator) of rank r of c.
func (c *Comm) WorldRank(r int) int { return c.group[r] }

func (c *Comm) opError(op string, peer int, tag int64, err error) error {
	return &OpError{Op: op, Comm: c.id, Rank: c.rank, Peer: peer, Tag: tag, Err: err}
}

// check validates a peer rank and tag of a point-to-point call.
func (c *Comm) check(op string, peer, tag int) error {
	switch {
	case c.closed.Load():
		return c.opError(op, peer, int64(tag), ErrClosed)
	case peer < 0 || peer >= len(c.group):
		return c.opError(op, -1, int64(tag), invalidf("rank %d is outside the communicator of %d ranks", peer, len(c.group)))
	case tag < 0:
		return c.opError(op, peer, int64(tag), invalidf("tag %d is negative; negative tags are reserved for collectives", tag))
	}
	return nil
}

// Send is comm.Comm.Send.
func (c *Comm) Send(ctx context.Context, dst, tag int, b []byte) error {
	return c.SendTyped(ctx, dst, tag, b, kernel.Uint8, len(b))
}

// SendTyped is Send of b, the bytes of count elements of type dt, which
// the message's header names (comm.Send[T]).
func (c *Comm) SendTyped(ctx context.Context, dst, tag int, b []byte, dt kernel.DType, count int) error {
	if err := c.check("send", dst, tag); err != nil {
		return err
	}
	h := userHeader(c, tag, b, dt, count)
	return c.sendUser(ctx, dst, &h, b, nil)
}

// sendUser sends the point-to-point message of header h, whose payload is
// b then body, to rank dst.
func (c *Comm) sendUser(ctx context.Context, dst int, h *wire.Header, b, body []byte) error {
	if c.ep.peers[c.group[dst]].isends.n.Load() != 0 {
		// Behind the sends queued to dst, which it must not overtake.
		_, err := c.isend(dst, h, b, body).Wait(ctx)
		return err
	}
	h.Comm = c.id
	if err := c.ep.send(ctx, c.group[dst], h, b, body); err != nil {
		return c.opError("send", dst, h.Tag, err)
	}
	return nil
}

// Recv is comm.Comm.Recv.
func (c *Comm) Recv(ctx context.Context, src, tag int, b []byte) (Status, error) {
	r, err := c.Irecv(src, tag, b)
	if err != nil {
		return Status{}, err
	}
	return r.Wait(ctx)
}

// IrecvTyped is Irecv into b, the bytes of elements of type dt and size
// bytes each (comm.Irecv[T], comm.Recv[T]): its wait fails a message
// that is not whole elements sent as bytes or as elements of type dt,
// and hands the bytes of one that is to finish, when set (where
// elements are not stored as their little-endian bytes, finish copies
// them into place).
func (c *Comm) IrecvTyped(src, tag int, b []byte, dt kernel.DType, size int, finish func([]byte)) (*Request, error) {
	r, err := c.Irecv(src, tag, b)
	if err != nil {
		return nil, err
	}
	r.dt, r.size, r.finish = dt, size, finish
	return r, nil
}

// typedMismatch says why the message of header h and status st is not
// what a typed receive of elements of type dt, of size bytes, takes; nil
// when it is.
func typedMismatch(st *Status, h *wire.Header, dt kernel.DType, size int) error {
	switch {
	case h.DType != kernel.Uint8 && h.DType != dt:
		return fmt.Errorf("%w: rank %d sent %d %v elements where this rank receives %v", ErrMismatch, st.Source, h.Count, h.DType, dt)
	case st.Bytes%size != 0:
		return fmt.Errorf("%w: rank %d sent %d bytes, not a whole number of %d-byte %v elements", ErrMismatch, st.Source, st.Bytes, size, dt)
	}
	return nil
}

// Irecv is comm.Comm.Irecv.
func (c *Comm) Irecv(src, tag int, b []byte) (*Request, error) {
	if err := c.checkRecv("recv", src, tag); err != nil {
		return nil, err
	}
	return c.post(src, int64(tag), b, nil), nil
}

// Wait is comm.Request.Wait.
func (r *Request) Wait(ctx context.Context) (Status, error) {
	st, _, _, err := r.wait(ctx)
	return st, err
}

// wait completes a request: a receive's status, the header of the
// message received and, for a stamped receive, when it arrived; or a
// send's status.
func (r *Request) wait(ctx context.Context) (Status, wire.Header, int64, error) {
	var n int
	var err error
	op, tag := "recv", r.key.tag
	if r.isSend {
		op = "send"
		n, err = r.ep.waitSend(ctx, r)
	} else {
		n, err = r.ep.wait(ctx, r)
		if tag == AnyTag && r.hdr.Comm != 0 {
			tag = r.hdr.Tag // the header of the message matched
		}
	}
	h, c, peer, arrived := r.hdr, r.comm, r.peer, r.arrived
	dt, size, finish, buf := r.dt, r.size, r.finish, r.buf
	*r = Request{done: r.done}
	requestPool.Put(r)
	st := Status{Source: peer, Tag: int(tag), Bytes: n}
	if err == nil && size > 0 {
		err = typedMismatch(&st, &h, dt, size)
	}
	if err != nil {
		return st, h, arrived, c.opError(op, peer, tag, err)
	}
	if finish != nil {
		finish(buf[:n])
	}
	return st, h, arrived, nil
}

// SendHeader sends payload to rank dst of c with a header the caller fills
// in; Comm is set to c's id. It is the primitive that collectives build
// on: they choose the kind, element type, count, op, root and sequence
// number that the receiver checks.
func (c *Comm) SendHeader(ctx context.Context, dst int, h *wire.Header, payload []byte) error {
	switch {
	case c.closed.Load():
		return ErrClosed
	case dst < 0 || dst >= len(c.group):
		return invalidf("rank %d is outside the communicator of %d ranks", dst, len(c.group))
	}
	h.Comm = c.id
	return c.ep.send(ctx, c.group[dst], h, payload, nil)
}

// RecvHeader receives the message with tag from rank src of c into b and
// returns its length and header, so that a collective can compare what the
// sender sent with what it expected. Unlike Recv it accepts the library's
// negative tags (InternalTag).
func (c *Comm) RecvHeader(ctx context.Context, src int, tag int64, b []byte) (int, wire.Header, error) {
	r, err := c.IrecvHeader(src, tag, b, false)
	if err != nil {
		return 0, wire.Header{}, err
	}
	n, h, _, err := r.WaitHeader(ctx)
	return n, h, err
}

// IrecvHeader is Irecv for any tag, including InternalTag's; wait for it
// with WaitHeader to see the header of the message received. A stamped
// receive notes when the header of its message arrived, on Now's clock,
// which tells a timed call's wait for its peer from its wait for the
// bytes (Tally.LapArrival).
func (c *Comm) IrecvHeader(src int, tag int64, b []byte, stamped bool) (*Request, error) {
	switch {
	case c.closed.Load():
		return nil, c.opError("recv", src, tag, ErrClosed)
	case src < 0 || src >= len(c.group):
		return nil, c.opError("recv", -1, tag, invalidf("rank %d is outside the communicator of %d ranks", src, len(c.group)))
	}
	return c.ep.post(c, c.group[src], src, matchKey{comm: c.id, tag: tag}, b, stamped, nil), nil
}

// WaitHeader is Wait that also returns the header of the message
// received and, for a stamped receive (IrecvHeader) whose message was
// matched as its header arrived, when that was; 0 otherwise. On a
// truncation error the header is that of the message that did not fit,
// so the caller can say what the sender sent.
func (r *Request) WaitHeader(ctx context.Context) (int, wire.Header, int64, error) {
	st, h, arrived, err := r.wait(ctx)
	return st.Bytes, h, arrived, err
}

// StartCall begins this rank's next operation on c, the collective call
// given (its Kind, DType, Op, Count, Root and Algorithm), and returns the
// operation's sequence number, which every member gets for the same call
// because members call collectives in the same order. Tags derived from
// the number (InternalTag) keep operations in flight at once apart.
//
// From then on every frame of the operation that arrives from a peer, on
// any link and at any time, is checked against the call. A peer's frame
// that shows a different call, whether it arrived before StartCall or
// comes later, aborts the job with a *MismatchError naming both ranks and
// both calls; StartCall returns it when the frame came first. Like
// SendHeader, StartCall leaves naming the call in its errors to the
// caller.
func (c *Comm) StartCall(call wire.Call) (uint64, error) {
	seq, err := c.NextSeq()
	if err != nil {
		return 0, err
	}
	return seq, c.RecordCall(seq, call)
}

// NextSeq is StartCall for an operation that records its call itself,
// with RecordCall, once it must: one on the communicator's segment, where
// every rank compares every rank's call in the segment, needs the call
// table only for frames that a rank making another call sends it over a
// link, and those keep it waiting (Segment.BeginLines).
func (c *Comm) NextSeq() (uint64, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	return c.seq.Add(1), nil
}

// RecordCall records this rank's call of operation seq in the call table
// (see StartCall), and returns the mismatch with a call a peer's frame
// showed before, having aborted the job with it.
func (c *Comm) RecordCall(seq uint64, call wire.Call) error {
	if m := c.calls.start(seq, call); m != nil {
		c.ep.abort(m)
		return m
	}
	return nil
}

// Internal tags are negative, so they never match a user's message. Each
// collective (and Split) owns the tags of its sequence number: one per
// step of its algorithm.
const (
	tagStepBits = 24
	// MaxTagStep is the highest step number InternalTag accepts.
	MaxTagStep = 1<<tagStepBits - 1
)

// InternalTag is the tag of step step of the operation with sequence
// number seq (from StartCall). Operations in flight at once never share a
// tag, because they never share a sequence number.
func InternalTag(seq uint64, step int) int64 {
	return -1 - int64(seq<<tagStepBits|uint64(step&MaxTagStep))
}

// seqOf is the sequence number of an InternalTag.
func seqOf(tag int64) uint64 { return uint64(-1-tag) >> tagStepBits }

// StepOf is the step number of an InternalTag.
func StepOf(tag int64) int { return int(uint64(-1-tag) & MaxTagStep) }

// Split is comm.Comm.Split.
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	size := len(c.group)
	// Every message of a split is one rank's entry in the table of all
	// ranks' entries (the table itself, from rank 0, is all of them).
	h := wire.Header{Kind: wire.KindSplit, DType: kernel.Int64, Count: 2 * uint64(size), Root: 0}
	seq, err := c.StartCall(h.Call())
	if err != nil {
		return nil, c.opError("split", -1, 0, err)
	}
	tag := InternalTag(seq, 0)
	h.Seq, h.Tag = seq, tag

	// Rank 0 of c gathers every (color, key) and sends the table back.
	table := make([]byte, splitEntry*size)
	binary.LittleEndian.PutUint64(table[splitEntry*c.rank:], uint64(int64(color)))
	binary.LittleEndian.PutUint64(table[splitEntry*c.rank+8:], uint64(int64(key)))
	entry := func(r int) []byte { return table[splitEntry*r : splitEntry*(r+1)] }
	colorOf := func(r int) int64 { return int64(binary.LittleEndian.Uint64(entry(r))) }
	keyOf := func(r int) int64 { return int64(binary.LittleEndian.Uint64(entry(r)[8:])) }
	if c.rank == 0 {
		reqs := make([]*Request, size)
		for r := 1; r < size; r++ {
			reqs[r] = c.ep.post(c, c.group[r], r, matchKey{comm: c.id, tag: tag}, entry(r), false, nil)
		}
		for r := 1; r < size; r++ {
			if _, _, _, err := reqs[r].wait(ctx); err != nil {
				for _, q := range reqs[r+1:] {
					q.wait(canceled)
				}
				return nil, err
			}
		}
		h.Length = uint64(len(table))
		for r := 1; r < size; r++ {
			if err := c.SendHeader(ctx, r, &h, table); err != nil {
				return nil, c.opError("split", r, tag, err)
			}
		}
	} else {
		mine := append([]byte(nil), entry(c.rank)...)
		h.Offset, h.Length = 2*uint64(c.rank), splitEntry
		if err := c.SendHeader(ctx, 0, &h, mine); err != nil {
			return nil, c.opError("split", 0, tag, err)
		}
		n, _, err := c.RecvHeader(ctx, 0, tag, table)
		if err != nil {
			return nil, err
		}
		if n != len(table) || string(entry(c.rank)) != string(mine) {
			return nil, c.opError("split", 0, tag, fmt.Errorf("rank 0 sent a table of %d bytes that does not hold this rank's color and key", n))
		}
	}
	if color < 0 {
		return nil, nil
	}

	var members []int
	for r := range size {
		if colorOf(r) == int64(color) {
			members = append(members, r)
		}
	}
	slices.SortStableFunc(members, func(a, b int) int {
		if c := cmp.Compare(keyOf(a), keyOf(b)); c != 0 {
			return c
		}
		return a - b
	})
	sub := &Comm{ep: c.ep, id: childID(c.id, seq, color), group: make([]int, len(members))}
	for i, r := range members {
		sub.group[i] = c.group[r]
		if r == c.rank {
			sub.rank = i
		}
	}
	c.ep.bind(sub)
	if err := sub.share(ctx); err != nil {
		sub.Close()
		return nil, c.opError("split", -1, tag, fmt.Errorf("setting up shared memory: %w", err))
	}
	sub.logSetup()
	return sub, nil
}

// canceled is a context that is already done, for withdrawing receives
// that are no longer wanted.
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// childID derives a communicator id from the parent's id, the sequence
// number of the Split and the color (splitmix64 finalizer).
func childID(parent, seq uint64, color int) uint64 {
	x := parent*0x9e3779b97f4a7c15 ^ seq*0xbf58476d1ce4e5b9 ^ uint64(color)*0x94d049bb133111eb
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	if x <= worldID {
		x += worldID + 1
	}
	return x
}

// Abort is comm.Comm.Abort.
func (c *Comm) Abort(err error) {
	if err == nil {
		err = errors.New("aborted")
	}
	c.ep.abort(err)
}

// Close is comm.Comm.Close.
func (c *Comm) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.closeShared()
	if c.id != worldID {
		c.ep.dropCalls(c.id)
		return nil
	}
	err := c.ep.close()
	if err != nil && !errors.Is(err, ErrClosed) {
		return c.opError("close", -1, 0, err)
	}
	return nil
}
