//go:build !linux

package tcp

import (
	"errors"
	"fmt"
	"net"
)

// setSockCongestion fails: choosing a connection's congestion control
// (TCP_CONGESTION) is Linux's.
func setSockCongestion(*net.TCPConn, string) error {
	return fmt.Errorf("choosing it needs Linux: %w", errors.ErrUnsupported)
}
