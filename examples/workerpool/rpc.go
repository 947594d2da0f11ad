package main

import (
	"context"
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocoll/gocoll/comm"
)

// The baseline runs the same job the way Go programs usually farm work
// out: each worker rank serves net/rpc (gob over TCP), and rank 0 calls
// them, one goroutine per worker pulling task ids from a channel. The
// workers listen on 127.0.0.1 and rank 0 dials only loopback addresses,
// so the baseline is for jobs whose ranks share one host; run skips it
// for others. gocoll carries only the addresses and the end.

// Task is a task as net/rpc sends it.
type Task struct {
	ID   int
	Data []float64
}

// rpcWorker is the net/rpc service of a worker rank.
type rpcWorker struct{ done atomic.Int64 }

// Do computes a task.
func (w *rpcWorker) Do(t *Task, r *Result) error {
	*r = compute(t.ID, t.Data)
	w.done.Add(1)
	return nil
}

// rpcServe is a worker rank's side of the baseline: it serves net/rpc on
// a loopback port until rank 0 says the baseline is over, and returns how
// many tasks it did.
func rpcServe(ctx context.Context, c *comm.Comm) (int, error) {
	w := new(rpcWorker)
	err := serveRPC(ctx, c, w)
	return int(w.done.Load()), err
}

// serveRPC serves worker, as the service "Worker", on a loopback port,
// sends rank 0 the address, and serves until rank 0 says the baseline is
// over. It closes its listener and every connection before it returns,
// also on an error.
func serveRPC(ctx context.Context, c *comm.Comm, worker any) error {
	srv := rpc.NewServer()
	if err := srv.RegisterName("Worker", worker); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
	)
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // ln is closed
			}
			mu.Lock()
			if closed {
				conn.Close()
			} else {
				conns = append(conns, conn)
				wg.Go(func() { srv.ServeConn(conn) })
			}
			mu.Unlock()
		}
	})
	defer func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, conn := range conns {
			conn.Close() // ends its ServeConn
		}
		mu.Unlock()
		wg.Wait()
	}()

	if err := c.Send(ctx, 0, tagAddr, []byte(ln.Addr().String())); err != nil {
		return err
	}
	_, err = c.Recv(ctx, 0, tagDone, nil)
	return err
}

// rpcBaseline is rank 0's side of the baseline: it dials every worker's
// server and runs j over net/rpc, checking every result as coordinate
// does. The clock runs from the first task handed out to the last result,
// without the dialling, as coordinate's runs without Init's.
func rpcBaseline(ctx context.Context, c *comm.Comm, j *job) (*pass, error) {
	clients := make([]*rpc.Client, c.Size())
	defer func() {
		for _, cl := range clients {
			if cl != nil {
				cl.Close() // ends any call still in flight after an error
			}
		}
	}()
	for w := 1; w < c.Size(); w++ {
		conn, err := dialWorker(ctx, c, w)
		if err != nil {
			return nil, err
		}
		clients[w] = rpc.NewClient(conn)
	}

	p := newPass("net/rpc", j, c.Size())
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ids := make(chan int)
	var wg, running sync.WaitGroup
	running.Add(c.Size() - 1)
	for w := 1; w < c.Size(); w++ {
		wg.Go(func() {
			running.Done()
			for id := range ids {
				// A fresh reply each call: gob leaves alone the fields
				// whose value is zero, which would keep an old result's.
				var r Result
				call := clients[w].Go("Worker.Do", &Task{ID: id, Data: j.data(id)}, &r, make(chan *rpc.Call, 1))
				select {
				case <-call.Done:
				case <-ctx.Done():
					return
				}
				if call.Error != nil {
					cancel(fmt.Errorf("rank %d, task %d: %w", w, id, call.Error))
					return
				}
				if err := j.check(id, r); err != nil {
					cancel(fmt.Errorf("rank %d: %w", w, err))
					return
				}
				p.Results[id] = r
				p.PerWorker[w]++
			}
		})
	}
	// As coordinate waits for every worker's first request, the clock
	// starts once every worker's goroutine runs.
	running.Wait()
	start := time.Now()
feed:
	for id := range j.spans {
		select {
		case ids <- id:
		case <-ctx.Done():
			break feed
		}
	}
	close(ids)
	wg.Wait()
	p.Elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	for w := 1; w < c.Size(); w++ {
		clients[w].Close()
		clients[w] = nil
		if err := c.Send(ctx, w, tagDone, nil); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// dialWorker receives rank w's address, sized by a Probe, and connects to
// it, if it is a loopback address.
func dialWorker(ctx context.Context, c *comm.Comm, w int) (net.Conn, error) {
	st, err := c.Probe(ctx, w, tagAddr)
	if err != nil {
		return nil, err
	}
	addr := make([]byte, st.Bytes)
	if _, err := c.Recv(ctx, w, tagAddr, addr); err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(string(addr))
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("rank %d serves net/rpc at %q, not a loopback address: the baseline runs on one host only", w, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", string(addr))
}
