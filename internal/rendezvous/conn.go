package rendezvous

import (
	"bufio"
	"net"
	"sync"
	"time"

	"github.com/gocoll/gocoll/internal/transport"
)

const (
	// handshakeTimeout bounds the auth handshake plus hello and welcome.
	handshakeTimeout = transport.DefaultHandshakeTimeout
	// closeGrace bounds how long a clean shutdown waits for the other end
	// to read the last frames and close its side, before the connection is
	// cut.
	closeGrace = 2 * time.Second
)

// keepAlive makes the kernel probe an idle control connection, so a host
// that vanishes without closing its sockets (power loss, a cut cable) is
// noticed in about 30 s instead of never: nothing else is sent on a
// control connection while a job computes.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3}

func setKeepAlive(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetKeepAliveConfig(keepAlive)
	}
}

// wireConn is one end of a control connection after the handshake. Frames
// to send are queued and written by a goroutine of their own, so neither
// the store (which sends while holding its lock) nor a client call ever
// blocks on a slow socket: a call waits only on channels, where it can
// honour its context.
type wireConn struct {
	c net.Conn
	r *bufio.Reader

	mu      sync.Mutex
	q       net.Buffers
	closing bool // no more frames; the writer flushes q, then closes the write side
	dead    bool // the connection is cut; the writer drops q
	wake    chan struct{}
	wdone   chan struct{}
}

func newWireConn(c net.Conn, r *bufio.Reader) *wireConn {
	return &wireConn{c: c, r: r, wake: make(chan struct{}, 1), wdone: make(chan struct{})}
}

// send queues the buffers of one frame. The buffers must not change
// afterwards. It reports false when the connection no longer sends.
func (w *wireConn) send(bufs ...[]byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return false
	}
	w.q = append(w.q, bufs...)
	w.signal()
	return true
}

// finish stops sending once the queued frames are out; the other end then
// reads io.EOF after the last of them.
func (w *wireConn) finish() {
	w.mu.Lock()
	w.closing = true
	w.signal()
	w.mu.Unlock()
}

// kill cuts the connection at once, which also ends the reader.
func (w *wireConn) kill() {
	w.mu.Lock()
	w.closing, w.dead = true, true
	w.q = nil
	w.signal()
	w.mu.Unlock()
	w.c.Close()
}

func (w *wireConn) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes queued frames, many per writev, until finish or kill.
// A write error cuts the connection, so the reader sees it too.
func (w *wireConn) writeLoop() {
	defer close(w.wdone)
	for {
		w.mu.Lock()
		q, closing, dead := w.q, w.closing, w.dead
		w.q = nil
		w.mu.Unlock()
		if dead {
			return
		}
		if len(q) > 0 {
			if _, err := q.WriteTo(w.c); err != nil {
				w.kill()
				return
			}
			continue
		}
		if closing {
			if cw, ok := w.c.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
			return
		}
		<-w.wake
	}
}

// drain waits up to closeGrace for the writer to flush, then cuts the
// connection and waits for the writer to stop.
func (w *wireConn) drain() {
	t := time.NewTimer(closeGrace)
	select {
	case <-w.wdone:
	case <-t.C:
	}
	t.Stop()
	w.kill()
	<-w.wdone
}
