package tcp

import (
	"fmt"
	"net"
)

// loopbackCongestion is the congestion control of a link whose two ends
// have one address, which the kernel carries over its loopback device.
//
// A host's default may be bbr, which sizes the window a connection may
// have in flight from the bandwidth it measures times the shortest round
// trip it saw. Over loopback that round trip is a few microseconds, so
// the window holds less than one large message (22 packets, as ss
// showed), and the sender waits for acknowledgments in the middle of
// each message. Two pinned Go processes sending a message and waiting for
// a one-byte answer over loopback, raw sockets, GB/s (each the median of
// 2000 round trips; the median of three runs, alternating):
//
//	message   bbr   reno
//	1 MiB     4.7   7.6
//	4 MiB     5.5   9.1
//	16 MiB    4.6   6.1
//
// Cubic was within the noise of reno. Reno and cubic grow the window
// with every acknowledgment up to what the receiver offers, and loopback
// loses nothing to shrink it again. Reno,
// because every kernel has it and lets every process choose it (it is
// always in net.ipv4.tcp_allowed_congestion_control; cubic is not always
// there for a process without CAP_NET_ADMIN).
const loopbackCongestion = "reno"

// caNameMax is the longest congestion control name the kernel takes
// (TCP_CA_NAME_MAX less its terminating NUL).
const caNameMax = 15

// WithCongestionControl sets the TCP congestion control algorithm of
// every connection (TCP_CONGESTION) to name, such as "cubic" or "dctcp".
// The kernel must offer it (net.ipv4.tcp_available_congestion_control)
// and, for a process without CAP_NET_ADMIN, allow it
// (net.ipv4.tcp_allowed_congestion_control); a connection whose socket
// refuses it fails, naming it.
//
// By default a link between two addresses keeps the host's algorithm
// (net.ipv4.tcp_congestion_control): the network, and whoever runs it,
// decides. A link whose two ends have the same address, which the kernel
// carries over its loopback device, uses reno: with bbr, the default of
// some hosts, a loopback connection moves large messages at 0.6 to 0.75
// of the speed (see loopbackCongestion).
func WithCongestionControl(name string) Option {
	return func(o *options) error {
		if name == "" || len(name) > caNameMax {
			return fmt.Errorf("tcp: WithCongestionControl(%q): want a name of 1 to %d bytes, such as cubic", name, caNameMax)
		}
		o.congestion = name
		return nil
	}
}

// setCongestion gives c the congestion control the options ask for: the
// chosen one, which must take, or on a loopback link the default one,
// which is left as it is when the kernel refuses it.
func (o *options) setCongestion(c *net.TCPConn) error {
	name := o.congestion
	if name == "" {
		if !overLoopback(c.LocalAddr(), c.RemoteAddr()) {
			return nil
		}
		name = loopbackCongestion
	}
	switch err := setSockCongestion(c, name); {
	case err == nil:
		return nil
	case o.congestion == "":
		return nil // the host's algorithm is slower here, not wrong
	default:
		return fmt.Errorf("congestion control %q: %w", name, err)
	}
}

// overLoopback reports whether a connection between local and remote
// runs over the loopback device: it goes to a loopback address, or to
// the host's own address.
func overLoopback(local, remote net.Addr) bool {
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	if !lok || !rok {
		return false
	}
	return r.IP.IsLoopback() || r.IP.Equal(l.IP)
}
