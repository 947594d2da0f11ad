//go:build linux

package shm

import (
	"context"
	"fmt"
	"net"

	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/auth"
	"github.com/gocoll/gocoll/internal/transport/internal/handshake"
)

// Dial connects to the listener at addr (an abstract socket name, "@..."),
// runs the handshake, creates the link's region and hands it to the
// acceptor, and returns the link to rank peer (-1: whichever rank listens
// there). All of it is bounded by ctx and by cfg.HandshakeTimeout. An
// error wrapping transport.ErrRefused means that one of the ends refused
// the other (wrong secret, job or rank); one wrapping shmem.ErrNoSpace
// that the shared-memory file system has no room for the region.
func (t *Transport) Dial(ctx context.Context, addr string, peer int, cfg transport.Config) (transport.Link, error) {
	cfg = handshake.Normalize(cfg)
	if err := checkAddr(addr); err != nil {
		return nil, fmt.Errorf("shm: dial %q: %w", addr, err)
	}
	// One deadline bounds the connect, the handshake and the setup.
	op := handshake.Op{Net: "shm", Network: "unix", Addr: addr, Peer: peer, Timeout: cfg.HandshakeTimeout}
	c, p, err := handshake.Dial(ctx, op, net.Dialer{}, func(c *net.UnixConn) (*linkParams, error) {
		return t.setup(c, peer, &cfg)
	}, func(p *linkParams) { p.reg.Close() })
	if err != nil {
		return nil, err
	}
	return newLink(c, p, &t.o), nil
}

// setup runs the dialer's side of the handshake and of the setup on c.
func (t *Transport) setup(c *net.UnixConn, peer int, cfg *transport.Config) (*linkParams, error) {
	got, _, err := auth.Client(c, handshake.Params(cfg), peer)
	if err != nil {
		return nil, err
	}
	size := t.o.ringBytes()
	reg, err := shmem.Create(t.o.dir, regionSize(size))
	if err != nil {
		return nil, fmt.Errorf("creating %d bytes of shared memory: %w", regionSize(size), err)
	}
	word, cookie := shmem.NewCookie()
	p := &linkParams{reg: reg, side: 0, ringSize: size, peer: got, cookie: word}
	o := offer{ringSize: size, id: reg.Identity(), cookie: cookie}
	err = sendOffer(c, &o, reg.FD())
	if err == nil {
		p.peerCookie, err = recvAnswer(c)
	}
	if err == nil {
		p.peerPID, err = peerPID(c)
	}
	if err != nil {
		reg.Close()
		return nil, err
	}
	// The acceptor has mapped the region; the mappings keep it.
	reg.CloseFD()
	return p, nil
}
