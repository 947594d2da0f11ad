package tcp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gocoll/gocoll/internal/mtls"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/auth"
	"github.com/gocoll/gocoll/internal/transport/internal/handshake"
)

// Default values of the options.
const (
	// DefaultReadBufferSize is the size of a link's read buffer. Headers
	// and small payloads are read through it, so that a stream of small
	// messages costs one read system call per buffer rather than two per
	// message; payloads larger than the buffer bypass it and land straight
	// in the caller's slice.
	DefaultReadBufferSize = 64 << 10

	// DefaultKeepAlive is the idle time after which TCP keepalive probes
	// start, and the interval between them. A peer whose host vanished
	// without closing the connection is detected after about
	// DefaultKeepAlive × 10 (Go's default of 9 probes).
	DefaultKeepAlive = 15 * time.Second
)

// Transport makes TCP links. The zero value is ready to use and has the
// default of every option; New sets options.
type Transport struct {
	o options
}

var _ transport.Transport = (*Transport)(nil)

// options hold the settings of a Transport. The zero value means the
// defaults, so that a zero Transport is usable.
type options struct {
	delay      bool          // NoDelay off
	keepAlive  time.Duration // 0: DefaultKeepAlive; < 0: off
	sndBuf     int           // 0: kernel autotuning
	rcvBuf     int           // 0: kernel autotuning
	readBuf    int           // 0: DefaultReadBufferSize
	tls        *tls.Config   // nil: plain TCP
	congestion string        // "": the host's, and loopbackCongestion over loopback
}

// Option sets an option of a Transport.
type Option func(*options) error

// New returns a Transport with opts applied over the defaults.
func New(opts ...Option) (*Transport, error) {
	t := &Transport{}
	for _, o := range opts {
		if err := o(&t.o); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// WithNoDelay sets TCP_NODELAY on every connection. The default is on:
// gocoll writes each message with one system call and waits for small
// messages (latency-bound collectives), which Nagle's algorithm would
// delay.
func WithNoDelay(on bool) Option {
	return func(o *options) error {
		o.delay = !on
		return nil
	}
}

// WithKeepAlive sets the TCP keepalive idle time and probe interval. The
// default is DefaultKeepAlive; a negative d turns keepalive off.
func WithKeepAlive(d time.Duration) Option {
	return func(o *options) error {
		if d == 0 {
			return errors.New("tcp: WithKeepAlive(0): use a negative duration to turn keepalive off")
		}
		o.keepAlive = d
		return nil
	}
}

// WithSocketBuffers sets SO_SNDBUF and SO_RCVBUF of every connection to
// send and recv bytes. Zero leaves the kernel's automatic tuning on, which
// is the default.
//
// The default is measured, not guessed. BenchmarkBandwidth, loopback
// between two goroutines of one process (Linux, 2 cores, tcp_wmem max
// 4 MiB, tcp_rmem max 32 MiB), GB/s, range over 4 to 6 runs:
//
//	message   autotuning   64 KiB    256 KiB   1 MiB     4 MiB
//	1 MiB     4.0–6.0      4.9–6.1   4.0–7.0   3.3–4.8   4.0–6.3
//	16 MiB    2.8–4.1      3.4–4.7   4.2–6.7   2.6–4.1   2.8–3.7
//
// Small fixed buffers win on loopback by up to 1.5× for large messages,
// because the data then stays in the CPU caches between the copy into the
// kernel and the copy out. That does not carry over to a network: a fixed
// buffer turns autotuning off for the socket (and Linux doubles the value
// and caps it at net.core.wmem_max/rmem_max), which caps a stream at
// about 2×size per round trip — 256 KiB over a 1 ms path is 0.5 GB/s,
// below a 10 Gb/s NIC — while autotuning grows the buffers to the path's
// bandwidth-delay product. Ranks on one host use shared memory, not
// loopback TCP, so the default serves the network case. Set sizes only
// for a known path, and raise the sysctl limits rather than fixing small
// buffers.
func WithSocketBuffers(send, recv int) Option {
	return func(o *options) error {
		if send < 0 || recv < 0 {
			return fmt.Errorf("tcp: WithSocketBuffers(%d, %d): sizes must not be negative", send, recv)
		}
		o.sndBuf, o.rcvBuf = send, recv
		return nil
	}
}

// WithReadBufferSize sets the size of each link's read buffer. The
// default is DefaultReadBufferSize; it must be at least 4 KiB. Each link
// allocates one buffer of this size for its lifetime.
func WithReadBufferSize(n int) Option {
	return func(o *options) error {
		if n < 4<<10 {
			return fmt.Errorf("tcp: WithReadBufferSize(%d): must be at least 4096", n)
		}
		o.readBuf = n
		return nil
	}
}

// WithTLS runs every link inside TLS with cfg, on both ends: the dialer
// uses it as a client configuration, the listener as a server one, so it
// must serve both (see internal/mtls, which comm.WithTLS uses). The HMAC
// handshake then runs inside the TLS connection, as without TLS. TLS
// costs CPU on every byte and a message becomes two records; use it for
// links that cross networks nobody trusts.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) error {
		if cfg == nil {
			return errors.New("tcp: WithTLS(nil)")
		}
		o.tls = cfg
		return nil
	}
}

// secure wraps a configured connection in TLS when the transport has it.
func (o *options) secure(c *net.TCPConn, client bool) net.Conn {
	switch {
	case o.tls == nil:
		return c
	case client:
		return tls.Client(c, o.tls)
	}
	return tls.Server(c, o.tls)
}

// Name returns "tcp".
func (t *Transport) Name() string { return "tcp" }

func (o *options) keepAliveConfig() net.KeepAliveConfig {
	switch {
	case o.keepAlive < 0:
		return net.KeepAliveConfig{Enable: false}
	case o.keepAlive == 0:
		return net.KeepAliveConfig{Enable: true, Idle: DefaultKeepAlive, Interval: DefaultKeepAlive, Count: 0}
	default:
		return net.KeepAliveConfig{Enable: true, Idle: o.keepAlive, Interval: o.keepAlive, Count: 0}
	}
}

func (o *options) readBufferSize() int {
	if o.readBuf == 0 {
		return DefaultReadBufferSize
	}
	return o.readBuf
}

// configure applies the socket options to a new connection.
func (o *options) configure(c *net.TCPConn) error {
	if err := c.SetNoDelay(!o.delay); err != nil {
		return err
	}
	if err := o.setCongestion(c); err != nil {
		return err
	}
	if o.sndBuf > 0 {
		if err := c.SetWriteBuffer(o.sndBuf); err != nil {
			return err
		}
	}
	if o.rcvBuf > 0 {
		if err := c.SetReadBuffer(o.rcvBuf); err != nil {
			return err
		}
	}
	return nil
}

// Dial connects to the listener at addr (host:port), runs the handshake
// and returns the link to rank peer (-1: whichever rank listens there).
// Connecting and the handshake together are bounded by ctx and by
// cfg.HandshakeTimeout; an error wrapping transport.ErrRefused means
// that one of the ends refused the other (wrong secret, job or rank).
func (t *Transport) Dial(ctx context.Context, addr string, peer int, cfg transport.Config) (transport.Link, error) {
	cfg = handshake.Normalize(cfg)
	d := net.Dialer{KeepAliveConfig: t.o.keepAliveConfig()}
	if !d.KeepAliveConfig.Enable {
		d.KeepAlive = -1
	}
	op := handshake.Op{Net: "tcp", Network: "tcp", Addr: addr, Peer: peer, Timeout: cfg.HandshakeTimeout}
	type secured struct {
		conn net.Conn
		peer int
	}
	_, s, err := handshake.Dial(ctx, op, d, func(c *net.TCPConn) (secured, error) {
		if err := t.o.configure(c); err != nil {
			return secured{}, fmt.Errorf("configuring socket: %w", err)
		}
		conn := t.o.secure(c, true)
		if tc, ok := conn.(*tls.Conn); ok {
			if err := mtls.Handshake(ctx, tc); err != nil {
				return secured{}, err
			}
		}
		got, _, err := auth.Client(conn, handshake.Params(&cfg), peer)
		return secured{conn, got}, err
	}, nil)
	if err != nil {
		return nil, err
	}
	l, err := newLink(s.conn, s.peer, t.o.readBufferSize())
	if err != nil {
		s.conn.Close()
		return nil, err
	}
	return l, nil
}
