package tcp

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// setSockCongestion sets c's TCP_CONGESTION to name, saying which of the
// kernel's lists refused it.
func setSockCongestion(c *net.TCPConn, name string) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	}); err != nil {
		return err
	}
	switch {
	case serr == nil:
		return nil
	case errors.Is(serr, unix.ENOENT):
		return fmt.Errorf("the kernel does not offer it (net.ipv4.tcp_available_congestion_control): %w", serr)
	case errors.Is(serr, unix.EPERM):
		return fmt.Errorf("not allowed to this process (net.ipv4.tcp_allowed_congestion_control): %w", serr)
	}
	return serr
}
