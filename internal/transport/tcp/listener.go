package tcp

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/internal/accept"
	"github.com/gocoll/gocoll/internal/transport/internal/handshake"
)

// Listener accepts TCP links. Every connection runs the handshake in a
// goroutine of its own, bounded by Config.HandshakeTimeout; connections
// that fail it are logged with their remote address and closed, and
// Accept returns only links whose peer was admitted.
type Listener struct{ a *accept.Listener }

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
	cfg = handshake.Normalize(cfg)
	o := t.o
	admit := func(c net.Conn) (transport.Link, error) { return o.admit(c.(*net.TCPConn), &cfg) }
	return &Listener{accept.Serve(ln, accept.Config{Net: "tcp", Logger: cfg.Logger, Admit: admit})}, nil
}

// Addr returns the host:port the listener is bound to.
func (l *Listener) Addr() string { return l.a.Addr() }

// Accept waits for the next admitted link. After Close it returns an
// error wrapping net.ErrClosed.
func (l *Listener) Accept() (transport.Link, error) { return l.a.Accept() }

// Close stops the listener: it closes the socket and every connection
// still in its handshake or waiting for Accept, and waits for the
// listener's goroutines to end. Links already returned by Accept are not
// affected.
func (l *Listener) Close() error { return l.a.Close() }

// admit configures c, runs the acceptor's side of the handshake on it and
// returns the link.
func (o *options) admit(c *net.TCPConn, cfg *transport.Config) (transport.Link, error) {
	if err := o.configure(c); err != nil {
		return nil, fmt.Errorf("configuring socket: %w", err)
	}
	conn := o.secure(c, false)
	peer, err := handshake.Server(conn, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	return newLink(conn, peer, o.readBufferSize())
}
