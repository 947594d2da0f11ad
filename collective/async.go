package collective

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/wire"
)

// Request is a collective in flight, started by AllreduceAsync,
// ReduceScatterAsync or AllgatherAsync.
//
// Its buffers are the collective's until it completes: the caller must
// neither read nor write them until a Wait has returned the collective's
// result or Done is closed. A Wait whose own context ends first does not
// end the collective, and does not hand the buffers back. A collective
// that nobody waits for still ends, by itself, within its context and the
// communicator's timeout; its goroutine then exits.
type Request struct {
	done chan struct{}
	err  error // the collective's result, set before done is closed

	// What a Wait whose context ends names: the call, its communicator
	// and this rank.
	call wire.Call
	comm uint64
	rank int
}

// Wait blocks until the collective completes and returns its error, or
// until ctx ends, whichever is first.
//
// When the collective completes first, Wait returns its result: nil, or
// the error it failed with (it honours the context it was issued with and
// the communicator's timeout, so it completes in bounded time). From then
// on the buffers are the caller's again, and every later Wait returns the
// same result at once.
//
// When ctx ends first, Wait returns a *comm.OpError naming the call, as
// in "AllreduceAsync(1000 × float32, sum) with ring: wait on rank 0 of
// comm 0x1: context canceled", that wraps ctx's error
// (context.Canceled or context.DeadlineExceeded, and the context's cause
// as well where one was given: errors.Is finds both). The collective
// goes on: the request stays in flight and the buffers are still in use.
// Wait may be called again, with another context, or Done used, to learn
// its result. To end the collective itself, cancel the context it was
// issued with. Done tells the two cases apart: it is closed exactly when
// the result is in.
//
// Wait may be called from several goroutines at once.
func (r *Request) Wait(ctx context.Context) error {
	select {
	case <-r.done:
		return r.err
	default:
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		select {
		case <-r.done: // both: the result is worth more
			return r.err
		default:
		}
		return &comm.OpError{Op: r.name() + ": wait", Comm: r.comm, Rank: r.rank, Peer: -1, Err: ended(ctx)}
	}
}

// Done is closed when the collective completes, for use in select; Wait
// then returns its result at once.
func (r *Request) Done() <-chan struct{} { return r.done }

// name is the call as the caller issued it: "AllreduceAsync(10 ×
// float32, sum)", with the algorithm that runs it.
func (r *Request) name() string {
	kind, s := r.call.Kind.String(), r.call.String()
	if rest, ok := strings.CutPrefix(s, kind); ok {
		return kind + "Async" + rest
	}
	return s
}

// ended is what a wait cut short by ctx fails with: ctx's cause, as comm's
// calls report it, which also wraps ctx.Err() where the cause does not.
func ended(ctx context.Context) error {
	cause, err := context.Cause(ctx), ctx.Err()
	if errors.Is(cause, err) {
		return cause
	}
	return fmt.Errorf("%w: %w", err, cause)
}

// AllreduceAsync starts an Allreduce and returns at once; buf is the
// collective's until it completes (see Request). The call takes its place
// in the communicator's order when it is issued, not when it runs: ranks
// that issue the same collectives in the same order match them correctly
// however many are in flight, which is what overlapping gradient buckets
// need. It costs one goroutine and one Request per call. While it waits
// for other ranks on a shared segment, it gives the processor to this
// process's goroutines and sleeps on a timer rather than in a system call,
// so that the work it overlaps runs at GOMAXPROCS=1 too.
func AllreduceAsync[T codec.Elem](ctx context.Context, c *comm.Comm, buf []T, op codec.Op, opts ...Option) *Request {
	var k call[T]
	err := prepare(&k, ctx, c, wire.KindAllreduce, op, len(buf), -1, opts)
	r, ok := issue(&k, err)
	if ok {
		go runAsync(r, &k, buf, buf)
	}
	return r
}

// ReduceScatterAsync starts a ReduceScatter and returns at once, as
// AllreduceAsync does: its arguments, algorithms and result are
// ReduceScatter's, its place in the communicator's order is taken when it
// is issued, and send and recv are the collective's until it completes
// (see Request). A bad argument (recv of the wrong length, say) is the
// error Wait returns, and aborts the job as it would in ReduceScatter.
// It is the first half of a sharded optimiser's step (ZeRO, FSDP): each
// rank reduces its shard of the gradients while the next bucket is
// computed.
func ReduceScatterAsync[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, op codec.Op, opts ...Option) *Request {
	var k call[T]
	err := prepareReduceScatter(&k, ctx, c, send, recv, op, opts)
	r, ok := issue(&k, err)
	if ok {
		go runAsync(r, &k, send, recv)
	}
	return r
}

// AllgatherAsync starts an Allgather and returns at once, as
// AllreduceAsync does: its arguments (send may be recv's own block),
// algorithms and result are Allgather's, its place in the communicator's
// order is taken when it is issued, and send and recv are the
// collective's until it completes (see Request). A bad argument is the
// error Wait returns, and aborts the job as it would in Allgather. It is
// the second half of a sharded optimiser's step: each rank gathers the
// updated shards of the parameters while it works on others.
func AllgatherAsync[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, opts ...Option) *Request {
	var k call[T]
	err := prepareAllgather(&k, ctx, c, send, recv, opts)
	r, ok := issue(&k, err)
	if ok {
		go runAsync(r, &k, send, recv)
	}
	return r
}

// issue issues the call k as an async collective and returns its Request.
// err is the verdict of prepare and of the collective's own argument
// checks; a call they refused (and that aborted the job) is complete at
// once, with that error, and ok is false. Otherwise k takes its number in
// the communicator's order here, at issue, not when its goroutine runs,
// and holds no communicator (register, not start), so that any number of
// async calls may be in flight beside each other and beside blocking
// ones; ok is true, and the caller starts runAsync in a goroutine. The
// caller's go statement, not one in here, starts it, so that a stack dump
// says which collective created the goroutine.
func issue[T codec.Elem](k *call[T], err error) (r *Request, ok bool) {
	r = &Request{done: make(chan struct{})}
	if err == nil {
		k.beside = true
		err = k.register()
	}
	if err != nil {
		r.err = err
		close(r.done)
		return r, false
	}
	r.call, r.comm, r.rank = k.me, k.c.ID(), k.c.Rank()
	k.c.AsyncCall(k.seq, k.me, true)
	return r, true
}

// runAsync runs the call k that issue issued, from send into recv (one
// slice for Allreduce), in the goroutine of its async collective, and
// completes r with its result. It runs the blocking collective's own
// dispatch by k's kind: a func value for it would cost an allocation per
// call, as a method expression of a generic type does.
func runAsync[T codec.Elem](r *Request, k *call[T], send, recv []T) {
	k.label()
	var err error
	switch k.me.Kind {
	case wire.KindAllreduce:
		err = k.allreduce(send, recv)
	case wire.KindReduceScatter:
		err = k.reduceScatter(send, recv)
	case wire.KindAllgather:
		err = k.allgather(send, recv)
	default:
		panic("collective: no async " + k.me.Kind.String()) // a bug of gocoll's
	}
	k.c.AsyncCall(k.seq, k.me, false)
	k.end(err)
	r.err = err
	close(r.done)
}
