package tcp_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fdTargets returns what each of this process's descriptors is.
func fdTargets(t *testing.T) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	targets := map[int]string{}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			targets[fd] = target
		}
	}
	return targets
}

func countFds(t *testing.T) int { return len(fdTargets(t)) }

// establishedInodes returns the inodes of the host's established TCP
// sockets, from /proc/net/tcp and tcp6.
func establishedInodes(t *testing.T) map[uint64]bool {
	t.Helper()
	inodes := map[uint64]bool{}
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "01" { // TCP_ESTABLISHED
				continue
			}
			if n, err := strconv.ParseUint(fields[9], 10, 64); err == nil {
				inodes[n] = true
			}
		}
		f.Close()
	}
	return inodes
}
