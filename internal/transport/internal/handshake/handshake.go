// Package handshake holds what the byte-stream transports (tcp, shm) do
// alike around the auth handshake (transport/auth): the defaults of a
// transport.Config, the auth parameters of a link, the dialer's side of
// connecting and setting up a link under one deadline and a context, and
// the acceptor's side of the handshake.
package handshake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/auth"
)

// Normalize returns cfg with its zero fields set to their defaults.
func Normalize(cfg transport.Config) transport.Config {
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = transport.DefaultHandshakeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg
}

// Params returns the auth parameters of a link of the job and rank that
// cfg describes.
func Params(cfg *transport.Config) auth.Params {
	return auth.Params{Secret: cfg.Secret, JobID: cfg.JobID, Service: auth.ServiceLink, Rank: cfg.Rank}
}

// Past is a deadline in the past, which makes pending I/O on a
// connection fail at once.
var Past = time.Unix(1, 0)

// Op describes one dial: what its errors name, and its time limit.
type Op struct {
	Net     string        // the transport's name, which starts every error: "tcp", "shm"
	Network string        // the network of net.Dialer.DialContext: "tcp", "unix"
	Addr    string        // the listener's address
	Peer    int           // the rank expected there, -1 for any
	Timeout time.Duration // bounds the connect and the setup together
}

// Dial connects to op.Addr with d and runs setup, the dialer's side of
// the handshake and whatever else makes the link, on the connection. One
// deadline bounds both: op.Timeout from now, or ctx's deadline if that is
// sooner; and ctx ending interrupts them. d.Deadline is overwritten.
//
// On success the connection's deadline is cleared, and the connection
// and setup's result are the caller's. On failure the connection is
// closed, undo (when not nil) releases a result that setup returned but
// that can no longer be used, and the error names the transport, the
// address and the peer; it wraps ctx's error when ctx ended, including
// when ctx's deadline hit the connection before ctx's own timer fired.
func Dial[C net.Conn, T any](ctx context.Context, op Op, d net.Dialer, setup func(c C) (T, error), undo func(T)) (C, T, error) {
	var zc C
	var zt T
	deadline := time.Now().Add(op.Timeout)
	ctxDeadline := false
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline, ctxDeadline = dl, true
	}
	d.Deadline = deadline
	nc, err := d.DialContext(ctx, op.Network, op.Addr)
	if err != nil {
		return zc, zt, err
	}
	c, ok := nc.(C)
	if !ok {
		nc.Close()
		return zc, zt, fmt.Errorf("%s: dial %s: a %T is not a %T", op.Net, op.Addr, nc, zc)
	}
	if err := c.SetDeadline(deadline); err != nil {
		c.Close()
		return zc, zt, fmt.Errorf("%s: dial %s: %w", op.Net, op.Addr, err)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(Past) })
	v, err := setup(c)
	if !stop() {
		// ctx ended during the setup: whatever its outcome, the
		// caller no longer wants the link.
		if err == nil && undo != nil {
			undo(v)
		}
		c.Close()
		return zc, zt, fmt.Errorf("%s: dial %s: handshake: %w", op.Net, op.Addr, ctx.Err())
	}
	if err == nil {
		if err = c.SetDeadline(time.Time{}); err != nil && undo != nil {
			undo(v)
		}
	}
	if err != nil {
		c.Close()
		if ctxDeadline && errors.Is(err, os.ErrDeadlineExceeded) {
			// ctx's deadline hit the connection before ctx's own
			// timer fired: it is still ctx's deadline.
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return zc, zt, fmt.Errorf("%s: dial rank %d at %s: %w", op.Net, op.Peer, op.Addr, err)
	}
	return c, v, nil
}

// Server runs the acceptor's side of the handshake on c and returns the
// dialer's rank. It sets c's deadline to cfg.HandshakeTimeout from now
// and leaves it set: the caller clears it when the rest of its setup is
// done. A dialer that does not say its rank is refused.
func Server(c net.Conn, cfg *transport.Config) (peer int, err error) {
	if err := c.SetDeadline(time.Now().Add(cfg.HandshakeTimeout)); err != nil {
		return -1, err
	}
	return auth.Server(c, Params(cfg), func(peer int) error {
		if peer < 0 {
			return errors.New("dialer has no rank")
		}
		return nil
	})
}
