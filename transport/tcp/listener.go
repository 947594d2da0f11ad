package tcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gocoll/gocoll/transport"
	"github.com/gocoll/gocoll/transport/auth"
)

// Listener accepts TCP links. Every connection runs the handshake in a
// goroutine of its own, bounded by Config.HandshakeTimeout; connections
// that fail it are logged and closed, and Accept returns only links whose
// peer was admitted.
type Listener struct {
	ln    net.Listener
	cfg   transport.Config
	o     options
	links chan *link    // admitted links, handed to Accept
	done  chan struct{} // closed by Close

	mu      sync.Mutex
	closed  bool
	pending map[net.Conn]struct{} // connections in the handshake
	wg      sync.WaitGroup        // the accept loop and the handshakes
}

var _ transport.Listener = (*Listener)(nil)

// Listen listens on addr (host:port); "" means "127.0.0.1:0", a free port
// on the loopback interface. Addr reports the port that was picked.
func (t *Transport) Listen(addr string, cfg transport.Config) (transport.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lc := net.ListenConfig{KeepAliveConfig: t.o.keepAliveConfig()}
	if !lc.KeepAliveConfig.Enable {
		lc.KeepAlive = -1
	}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &Listener{
		ln:      ln,
		cfg:     normalize(cfg),
		o:       t.o,
		links:   make(chan *link),
		done:    make(chan struct{}),
		pending: make(map[net.Conn]struct{}),
	}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// Addr returns the host:port the listener is bound to.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Accept waits for the next admitted link. After Close it returns an
// error wrapping net.ErrClosed.
func (l *Listener) Accept() (transport.Link, error) {
	select {
	case <-l.done:
		return nil, l.closedErr()
	default:
	}
	select {
	case lk := <-l.links:
		return lk, nil
	case <-l.done:
		return nil, l.closedErr()
	}
}

func (l *Listener) closedErr() error {
	return &net.OpError{Op: "accept", Net: "tcp", Addr: l.ln.Addr(), Err: net.ErrClosed}
}

// Close stops the listener: it closes the socket and every connection
// still in its handshake or waiting for Accept, and waits for the
// listener's goroutines to end. Links already returned by Accept are not
// affected.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	for c := range l.pending {
		c.Close()
	}
	l.mu.Unlock()
	close(l.done)
	err := l.ln.Close()
	l.wg.Wait()
	return err
}

// serve accepts connections until the listener is closed.
func (l *Listener) serve() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait and retry,
			// as net/http does, rather than spin or give up.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff *= 2; backoff > time.Second {
				backoff = time.Second
			}
			l.cfg.Logger.Warn("tcp: accept failed", "addr", l.Addr(), "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-l.done:
				return
			}
		}
		backoff = 0
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			return
		}
		l.pending[c] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.handshake(c.(*net.TCPConn))
	}
}

// handshake authenticates one connection and hands the link to Accept.
func (l *Listener) handshake(c *net.TCPConn) {
	defer l.wg.Done()
	peer, err := l.admit(c)
	l.mu.Lock()
	delete(l.pending, c)
	closed := l.closed
	l.mu.Unlock()
	if err != nil {
		c.Close()
		if !closed {
			l.cfg.Logger.Warn("tcp: refused connection", "addr", l.Addr(), "remote", c.RemoteAddr().String(), "err", err)
		}
		return
	}
	lk := newLink(c, peer, l.o.readBufferSize())
	if closed {
		lk.Close()
		return
	}
	select {
	case l.links <- lk:
	case <-l.done:
		lk.Close()
	}
}

// admit runs the acceptor's side of the handshake on c.
func (l *Listener) admit(c *net.TCPConn) (int, error) {
	if err := l.o.configure(c); err != nil {
		return -1, fmt.Errorf("configuring socket: %w", err)
	}
	if err := c.SetDeadline(time.Now().Add(l.cfg.HandshakeTimeout)); err != nil {
		return -1, err
	}
	peer, err := auth.Server(c, params(&l.cfg), func(peer int) error {
		if peer < 0 {
			return errors.New("dialer has no rank")
		}
		return nil
	})
	if err != nil {
		return -1, err
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return -1, err
	}
	return peer, nil
}
