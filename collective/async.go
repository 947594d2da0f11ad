package collective

import (
	"context"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/wire"
)

// Request is a collective in flight. Wait for it exactly once.
type Request struct {
	done chan struct{}
	err  error
}

// Wait blocks until the collective completes and returns its error. The
// collective honours the context it was issued with and the
// communicator's timeout, so Wait returns in bounded time.
func (r *Request) Wait() error {
	<-r.done
	return r.err
}

// Done is closed when the collective completes, for use in select.
func (r *Request) Done() <-chan struct{} { return r.done }

// AllreduceAsync starts an Allreduce and returns at once; buf must not be
// touched until Wait returns. The call takes its place in the
// communicator's order when it is issued, not when it runs: ranks that
// issue the same collectives in the same order match them correctly
// however many are in flight, which is what overlapping gradient buckets
// need. It costs one goroutine and one Request per call. While it waits
// for other ranks on a shared segment, it gives the processor to this
// process's goroutines and sleeps on a timer rather than in a system call,
// so that the work it overlaps runs at GOMAXPROCS=1 too.
func AllreduceAsync[T codec.Elem](ctx context.Context, c *comm.Comm, buf []T, op codec.Op, opts ...Option) *Request {
	r := &Request{done: make(chan struct{})}
	var k call[T]
	err := prepare(&k, ctx, c, wire.KindAllreduce, op, len(buf), -1, opts)
	if err == nil {
		k.beside = true
		err = k.register() // not start: an async call holds no communicator
	}
	if err != nil {
		r.err = err
		close(r.done)
		return r
	}
	k.c.AsyncCall(k.seq, k.me, true)
	go func() {
		k.label()
		r.err = k.allreduce(buf, buf)
		k.c.AsyncCall(k.seq, k.me, false)
		k.end(r.err)
		close(r.done)
	}()
	return r
}
