package mem

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/auth"
)

// Network is an in-process address space: listeners register a name in
// it and dialers find them by that name. Links of different Networks
// never meet. A Network also injects faults for tests: Break, Disconnect
// and Kill make links fail as if a peer process had died.
//
// The zero Network is not usable; call NewNetwork.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*Listener
	pairs     map[*pair]struct{} // live links
	seq       uint64             // for unique names
}

// NewNetwork returns an empty Network.
func NewNetwork() *Network {
	return &Network{listeners: make(map[string]*Listener), pairs: make(map[*pair]struct{})}
}

// Transport makes mem links on one Network; get one from
// Network.Transport. There is no package-wide default network: two tests
// that shared one could see each other's listeners.
type Transport struct {
	n *Network
}

var _ transport.Transport = (*Transport)(nil)

// errNoNetwork is returned by a zero Transport.
var errNoNetwork = errors.New("mem: Transport has no Network; get one from Network.Transport")

// Transport returns a Transport on n.
func (n *Network) Transport() *Transport { return &Transport{n: n} }

// Name returns "mem".
func (t *Transport) Name() string { return "mem" }

func (t *Transport) network() (*Network, error) {
	if t.n == nil {
		return nil, errNoNetwork
	}
	return t.n, nil
}

// addr is a name on a Network.
type addr string

func (a addr) Network() string { return "mem" }
func (a addr) String() string  { return string(a) }

// Listen registers a listener under the name addr; "" picks a name that is
// not in use. Names are any non-empty strings; a name in use is an error
// wrapping syscall.EADDRINUSE.
func (t *Transport) Listen(name string, cfg transport.Config) (transport.Listener, error) {
	n, err := t.network()
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if name == "" {
		for {
			n.seq++
			name = "mem-" + strconv.FormatUint(n.seq, 10)
			if n.listeners[name] == nil {
				break
			}
		}
	} else if n.listeners[name] != nil {
		return nil, &net.OpError{Op: "listen", Net: "mem", Addr: addr(name), Err: syscall.EADDRINUSE}
	}
	l := &Listener{
		n:      n,
		name:   name,
		cfg:    cfg,
		notify: make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	n.listeners[name] = l
	return l, nil
}

// Dial connects to the listener named addr, which must belong to rank
// peer (-1: any) of the same job and know the same secret. A refused
// handshake is an error wrapping transport.ErrRefused (a *auth.RefusedError,
// as with tcp) and is logged by the listener; a name without a listener
// is an error wrapping syscall.ECONNREFUSED.
//
// The link is ready when Dial returns, before the listener's Accept
// returns the other end, as with TCP's backlog.
func (t *Transport) Dial(ctx context.Context, name string, peer int, cfg transport.Config) (transport.Link, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n, err := t.network()
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	l := n.listeners[name]
	if l == nil {
		n.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "mem", Addr: addr(name), Err: syscall.ECONNREFUSED}
	}
	n.seq++
	dialer := addr("dialer-" + strconv.FormatUint(n.seq, 10))
	n.mu.Unlock()

	if err := l.check(&cfg, peer); err != nil {
		l.cfg.Logger.Warn("mem: refused connection", "addr", l.name, "remote", dialer.String(), "err", refusalSeenBy(err))
		return nil, fmt.Errorf("mem: dial rank %d at %s: %w", peer, name, err)
	}
	p := newPair(n, l.name, cfg.Rank, l.cfg.Rank, dialer, addr(l.name))
	n.mu.Lock()
	n.pairs[p] = struct{}{}
	n.mu.Unlock()
	if !l.enqueue(p.ends[1]) {
		p.ends[0].Close()
		p.ends[1].Close()
		return nil, &net.OpError{Op: "dial", Net: "mem", Addr: addr(name), Err: syscall.ECONNREFUSED}
	}
	return p.ends[0], nil
}

// check applies the handshake's rules, in the order of auth: the secret
// first, then what the dialer asks for. The error is the dialer's.
func (l *Listener) check(cfg *transport.Config, peer int) error {
	if subtle.ConstantTimeCompare(cfg.Secret, l.cfg.Secret) != 1 {
		return &auth.RefusedError{Reason: "acceptor failed authentication (wrong secret?)"}
	}
	switch {
	case peer >= 0 && peer != l.cfg.Rank:
		return &auth.RefusedError{Reason: fmt.Sprintf("dialed rank %d but acceptor is rank %d", peer, l.cfg.Rank)}
	case cfg.JobID != 0 && cfg.JobID != l.cfg.JobID:
		return &auth.RefusedError{Reason: fmt.Sprintf("acceptor belongs to job %#x, not %#x", l.cfg.JobID, cfg.JobID)}
	case cfg.Rank < 0:
		return &auth.RefusedError{ByPeer: true, Reason: "dialer has no rank"}
	}
	return nil
}

// refusalSeenBy returns err as the listener's side sees it.
func refusalSeenBy(err error) error {
	var re *auth.RefusedError
	if errors.As(err, &re) {
		return &auth.RefusedError{ByPeer: !re.ByPeer, Reason: re.Reason}
	}
	return err
}

// Listener accepts mem links.
type Listener struct {
	n      *Network
	name   string
	cfg    transport.Config
	notify chan struct{} // a token when queue grows
	done   chan struct{} // closed by Close

	mu     sync.Mutex
	closed bool
	queue  []*end // dialed, not yet accepted
}

var _ transport.Listener = (*Listener)(nil)

// Addr returns the listener's name.
func (l *Listener) Addr() string { return l.name }

// enqueue hands the accepting end of a new link to Accept; it reports
// false if the listener is closed.
func (l *Listener) enqueue(e *end) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.queue = append(l.queue, e)
	select {
	case l.notify <- struct{}{}:
	default:
	}
	return true
}

// Accept waits for the next dialed link. After Close it returns an error
// wrapping net.ErrClosed.
func (l *Listener) Accept() (transport.Link, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, &net.OpError{Op: "accept", Net: "mem", Addr: addr(l.name), Err: net.ErrClosed}
		}
		if len(l.queue) > 0 {
			e := l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			l.mu.Unlock()
			return e, nil
		}
		l.mu.Unlock()
		select {
		case <-l.notify:
		case <-l.done:
		}
	}
}

// Close unregisters the listener's name and closes the links that were
// dialed but not yet accepted; their dialers see the link closed by the
// peer. Links already accepted are not affected.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	queue := l.queue
	l.queue = nil
	l.mu.Unlock()
	close(l.done)
	for _, e := range queue {
		e.Close()
	}
	l.n.mu.Lock()
	if l.n.listeners[l.name] == l {
		delete(l.n.listeners, l.name)
	}
	l.n.mu.Unlock()
	return nil
}

// Break breaks link l, which must be a mem link: each end then fails as
// if the process at the other end had died. Reads return io.EOF at a
// message boundary and io.ErrUnexpectedEOF inside a message, writes fail
// with an error wrapping syscall.EPIPE; Close still works and must still
// be called.
func Break(l transport.Link) error {
	e, ok := l.(*end)
	if !ok {
		return fmt.Errorf("mem: Break of a %T, not a mem link", l)
	}
	e.p.breakLink()
	return nil
}

// Disconnect simulates a crash of the listener at addr: it closes the
// listener and breaks every link that was made through it. It returns the
// number of links broken.
func (n *Network) Disconnect(name string) int {
	n.mu.Lock()
	l := n.listeners[name]
	var broken []*pair
	for p := range n.pairs {
		if p.listener == name {
			broken = append(broken, p)
		}
	}
	n.mu.Unlock()
	if l != nil {
		l.Close()
	}
	for _, p := range broken {
		p.breakLink()
	}
	return len(broken)
}

// Kill simulates the death of the process of rank (in every job on n):
// it closes every listener of that rank and breaks every link with an
// end of that rank, as Break does. It returns the number of links
// broken.
func (n *Network) Kill(rank int) int {
	n.mu.Lock()
	var ls []*Listener
	for _, l := range n.listeners {
		if l.cfg.Rank == rank {
			ls = append(ls, l)
		}
	}
	var broken []*pair
	for p := range n.pairs {
		if p.ranks[0] == rank || p.ranks[1] == rank {
			broken = append(broken, p)
		}
	}
	n.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	for _, p := range broken {
		p.breakLink()
	}
	return len(broken)
}

// NumLinks returns the number of links on n that are neither broken nor
// closed at both ends. Tests use it to check that nothing leaks.
func (n *Network) NumLinks() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.pairs)
}

func (n *Network) forget(p *pair) {
	n.mu.Lock()
	delete(n.pairs, p)
	n.mu.Unlock()
}
