//go:build linux

package shm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/internal/accept"
	"github.com/gocoll/gocoll/internal/transport/internal/handshake"
)

// Listener accepts shm links on a Unix socket in the abstract namespace.
// Each connection's handshake and the mapping of the shared memory it
// offers run in a goroutine of their own, bounded by
// Config.HandshakeTimeout; a connection that fails is logged with the
// dialer's PID and closed.
type Listener struct{ a *accept.Listener }

var _ transport.Listener = (*Listener)(nil)

// Listen listens on addr, a name in the abstract socket namespace that
// starts with "@" (such sockets leave no file behind and vanish with
// their process); "" picks a random name. Abstract names are visible
// within one network namespace.
func (t *Transport) Listen(addr string, cfg transport.Config) (transport.Listener, error) {
	if addr == "" {
		var b [8]byte
		rand.Read(b[:])
		addr = "@gocoll-" + hex.EncodeToString(b[:])
	}
	if err := checkAddr(addr); err != nil {
		return nil, fmt.Errorf("shm: listen %q: %w", addr, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, err
	}
	cfg = handshake.Normalize(cfg)
	o := t.o
	admit := func(c net.Conn) (transport.Link, error) { return o.admit(c.(*net.UnixConn), &cfg) }
	return &Listener{accept.Serve(ln, accept.Config{Net: "shm", Logger: cfg.Logger, Admit: admit, Remote: remote})}, nil
}

// checkAddr accepts the names of abstract sockets only, so that no
// listener ever leaves a file behind.
func checkAddr(addr string) error {
	if !strings.HasPrefix(addr, "@") || len(addr) < 2 {
		return errors.New(`not an abstract socket name (want "@name")`)
	}
	return nil
}

// Addr returns the listener's socket name, "@" included.
func (l *Listener) Addr() string { return l.a.Addr() }

// Accept waits for the next admitted link. After Close it returns an
// error wrapping net.ErrClosed.
func (l *Listener) Accept() (transport.Link, error) { return l.a.Accept() }

// Close stops the listener and every setup in progress, and closes the
// links that are waiting for Accept; links that Accept returned stay.
func (l *Listener) Close() error { return l.a.Close() }

// admit runs the acceptor's side of the handshake and of the setup on c:
// it maps the region that the dialer offers, and answers.
func (o *options) admit(c *net.UnixConn, cfg *transport.Config) (transport.Link, error) {
	peer, err := handshake.Server(c, cfg)
	if err != nil {
		return nil, err
	}
	of, fd, err := recvOffer(c)
	if err != nil {
		sendRefusal(c, err.Error())
		return nil, err
	}
	reg, err := shmem.FromFD(fd, of.id, regionSize(of.ringSize))
	if err != nil {
		sendRefusal(c, err.Error())
		return nil, fmt.Errorf("mapping the shared memory of rank %d: %w", peer, err)
	}
	// The mapping keeps the memory; no descriptor of it stays open.
	reg.CloseFD()
	word, cookie := shmem.NewCookie()
	p := linkParams{reg: reg, side: 1, ringSize: of.ringSize, peer: peer, peerCookie: of.cookie, cookie: word}
	if p.peerPID, err = peerPID(c); err == nil {
		err = sendAnswer(c, cookie)
	}
	if err == nil {
		// The watcher reads the socket for the link's life.
		err = c.SetDeadline(time.Time{})
	}
	if err != nil {
		reg.Close()
		return nil, err
	}
	return newLink(c, &p, o), nil
}

// remote names the dialer of c for the log: its PID, since the sockets
// of dialers have no name.
func remote(c net.Conn) string {
	pid, err := peerPID(c.(*net.UnixConn))
	if err != nil {
		return "unknown process"
	}
	return fmt.Sprintf("pid %d", pid)
}
