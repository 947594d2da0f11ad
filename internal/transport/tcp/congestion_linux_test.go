package tcp_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/tcp"
)

// TestCongestionControl: a link over loopback uses reno unless told
// otherwise, and a named algorithm applies to both ends. Before, the
// links kept the host's default, bbr on this project's machines, which
// halves loopback throughput from 1 MiB up.
func TestCongestionControl(t *testing.T) {
	other := otherCongestion(t)
	tests := []struct {
		name string
		opts []tcp.Option
		want string
	}{
		{"default over loopback", nil, "reno"},
		{"named", []tcp.Option{tcp.WithCongestionControl(other)}, other},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := tcp.New(tc.opts...)
			require.NoError(t, err)
			before := fdTargets(t)
			linktest.Pair(t, tr)
			got := newSocketCongestion(t, before)
			require.Equal(t, []string{tc.want, tc.want}, got, "both ends of the link")
		})
	}
}

// TestCongestionControlRefused: a connection whose socket refuses the
// named algorithm fails, and the error names it.
func TestCongestionControlRefused(t *testing.T) {
	tr, err := tcp.New(tcp.WithCongestionControl("nosuchcc"))
	require.NoError(t, err)
	ln, err := tr.Listen("", linktest.Config(0, nil))
	require.NoError(t, err)
	defer ln.Close()
	_, err = tr.Dial(context.Background(), ln.Addr(), 0, linktest.Config(1, nil))
	require.ErrorContains(t, err, `congestion control "nosuchcc": the kernel does not offer it`)
	require.ErrorIs(t, err, unix.ENOENT)
}

// otherCongestion returns an algorithm the kernel offers other than reno,
// so that choosing it is seen; reno when it offers nothing else.
func otherCongestion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	require.NoError(t, err)
	for _, name := range strings.Fields(string(b)) {
		if name != "reno" {
			return name
		}
	}
	return "reno"
}

// newSocketCongestion returns the congestion control of each established
// TCP socket this process opened since before was taken, sorted.
func newSocketCongestion(t *testing.T, before map[int]string) []string {
	t.Helper()
	established := establishedInodes(t)
	var names []string
	for fd, target := range fdTargets(t) {
		inode, ok := strings.CutPrefix(target, "socket:[")
		if !ok || before[fd] == target {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(inode, "]"), 10, 64)
		require.NoError(t, err)
		if !established[n] {
			continue
		}
		name, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		require.NoError(t, err)
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
