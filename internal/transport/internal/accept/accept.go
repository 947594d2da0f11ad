// Package accept is the listener of the byte-stream transports (tcp,
// shm): an accept loop that backs off when accepting fails, a goroutine
// per connection for its handshake and setup, and the Accept and Close
// of transport.Listener around them. A transport supplies the function
// that turns a connection into a link.
package accept

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocoll/gocoll/internal/handshakes"
	"github.com/gocoll/gocoll/internal/ratelog"
	"github.com/gocoll/gocoll/internal/transport"
)

// Config says what a Listener serves.
type Config struct {
	// Net is the transport's name, which starts the log lines and names
	// the network in Accept's error.
	Net string
	// Logger receives a line for every refused connection and every
	// failed accept.
	Logger *slog.Logger
	// Admit runs the acceptor's side of the handshake and the setup of
	// c, bounded by the transport's handshake timeout, and returns the
	// link over it. On error the Listener logs the error and closes c;
	// Admit must release anything else it made. Admit runs in a
	// goroutine of its own, and Close closes c to interrupt it.
	Admit func(c net.Conn) (transport.Link, error)
	// Remote names the dialer of c in the log; nil means
	// c.RemoteAddr(). It is called before c is closed.
	Remote func(c net.Conn) string
}

// Listener accepts connections on a net.Listener and hands out the links
// that Admit made of them.
type Listener struct {
	ln      net.Listener
	cfg     Config
	log     *ratelog.Logger
	links   chan transport.Link // admitted links, handed to Accept
	done    chan struct{}       // closed by Close
	dropped atomic.Uint64       // connections cut to stay within transport.MaxHandshakes

	mu      sync.Mutex
	closed  bool
	pending handshakes.Set // connections in their handshake
	wg      sync.WaitGroup // the accept loop and the handshakes
}

// Serve starts accepting on ln, which the Listener takes over.
func Serve(ln net.Listener, cfg Config) *Listener {
	l := &Listener{
		ln:    ln,
		cfg:   cfg,
		log:   ratelog.New(cfg.Logger),
		links: make(chan transport.Link),
		done:  make(chan struct{}),
	}
	l.wg.Add(1)
	go l.serve()
	return l
}

// Addr returns the address of the socket.
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
	return &net.OpError{Op: "accept", Net: l.cfg.Net, Addr: l.ln.Addr(), Err: net.ErrClosed}
}

// Close closes the socket and every connection still in its handshake
// or waiting for Accept, and waits for the Listener's goroutines to end.
// Links already returned by Accept are not affected. Close is idempotent.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.pending.CloseAll()
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
			l.cfg.Logger.Warn(l.cfg.Net+": accept failed", "addr", l.Addr(), "err", err, "retry_in", backoff)
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
		if l.pending.Len() >= transport.MaxHandshakes {
			cut := l.pending.CutOldest() // its handshake goroutine fails and ends
			l.dropped.Add(1)
			l.log.Warn(l.cfg.Net+": too many handshakes in progress; cut the oldest",
				"addr", l.Addr(), "remote", l.remote(cut), "limit", transport.MaxHandshakes)
		}
		l.pending.Add(c)
		l.wg.Add(1)
		l.mu.Unlock()
		go l.handshake(c)
	}
}

// Dropped is the number of connections cut because MaxHandshakes were in
// progress.
func (l *Listener) Dropped() uint64 { return l.dropped.Load() }

// handshake admits one connection and hands its link to Accept.
func (l *Listener) handshake(c net.Conn) {
	defer l.wg.Done()
	lk, err := l.cfg.Admit(c)
	l.mu.Lock()
	stillPending := l.pending.Remove(c)
	closed := l.closed
	l.mu.Unlock()
	if err != nil {
		if !closed && stillPending {
			l.log.Warn(l.cfg.Net+": refused connection", "addr", l.Addr(), "remote", l.remote(c), "err", err)
		}
		c.Close()
		return
	}
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

func (l *Listener) remote(c net.Conn) string {
	if l.cfg.Remote != nil {
		return l.cfg.Remote(c)
	}
	return c.RemoteAddr().String()
}
