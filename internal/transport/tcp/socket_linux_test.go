//go:build !netpoll

package tcp_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/tcp"
)

// TestLinksLeaveTheNetpoller: a link's socket is in no epoll set but the
// two of its own, which hold nothing else, and whose entries are armed
// only while a goroutine waits: in the runtime's netpoller every arrival
// would wake a runtime thread, whoever took the message. Before, the
// runtime's epoll set held every link's socket.
func TestLinksLeaveTheNetpoller(t *testing.T) {
	a, b := linktest.Pair(t, &tcp.Transport{})
	ctx := context.Background()
	for range 3 {
		require.NoError(t, a.WriteMessage(ctx, header(5), []byte("hello")))
		_, _, err := linktest.ReadMessage(b)
		require.NoError(t, err)
		require.NoError(t, b.WriteMessage(ctx, header(2), []byte("hi")))
		_, _, err = linktest.ReadMessage(a)
		require.NoError(t, err)
	}

	sets := linkSets(t)
	require.Len(t, sets, 4, "epoll sets of the links' sockets: a reading and a writing one per end")
	for set, e := range sets {
		require.Zero(t, e.events&(unix.EPOLLIN|unix.EPOLLOUT), "set %d armed (events %#x) while nothing waits", set, e.events)
	}

	// A goroutine that waits arms its end's reading set; the arrival
	// that ends the wait disarms it.
	waited := make(chan error, 1)
	go func() { waited <- b.(transport.Poller).WaitReadable() }()
	armed := func() bool {
		for _, e := range linkSets(t) {
			if e.events&unix.EPOLLIN != 0 {
				return true
			}
		}
		return false
	}
	for i := 0; !armed(); i++ {
		require.Less(t, i, 5000, "the waiting reader's set is never armed")
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, a.WriteMessage(ctx, header(5), []byte("hello")))
	require.NoError(t, <-waited)
	require.False(t, armed(), "a set stays armed after its wait")
}

// TestCloseReleasesDescriptors: closing both ends of links and the
// listener leaves the process with the descriptors it had: each end's
// socket and epoll sets are closed.
func TestCloseReleasesDescriptors(t *testing.T) {
	tr := &tcp.Transport{}
	before := countFds(t)
	ln, err := tr.Listen("", linktest.Config(1, nil))
	require.NoError(t, err)
	var links []transport.Link
	for range 5 {
		accepted := linktest.AcceptAsync(ln)
		a, err := tr.Dial(context.Background(), ln.Addr(), 1, linktest.Config(0, nil))
		require.NoError(t, err)
		b := <-accepted
		require.NotNil(t, b)
		links = append(links, a, b)
	}
	require.Greater(t, countFds(t), before+20, "descriptors of five pairs of links")
	for _, l := range links {
		require.NoError(t, l.Close())
	}
	require.NoError(t, ln.Close())
	require.Equal(t, before, countFds(t), "descriptors after everything closed")
}

// epollEntry is one entry of an epoll set, as /proc/self/fdinfo shows it.
type epollEntry struct {
	fd     int
	events uint32
}

// linkSets returns, by the descriptor of the set, the entries of the
// epoll sets that hold an established TCP socket of this process.
func linkSets(t *testing.T) map[int]epollEntry {
	t.Helper()
	established := establishedInodes(t)
	sockets := map[int]bool{} // descriptors of established sockets
	sets := []int{}
	for fd, target := range fdTargets(t) {
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(ino, "]"), 10, 64); err == nil && established[n] {
				sockets[fd] = true
			}
		}
		if target == "anon_inode:[eventpoll]" {
			sets = append(sets, fd)
		}
	}
	require.NotEmpty(t, sockets, "no established socket")
	found := map[int]epollEntry{}
	for _, set := range sets {
		entries := epollEntries(t, set)
		for _, e := range entries {
			if sockets[e.fd] {
				require.Len(t, entries, 1, "epoll set %d holds socket %d among others: %v", set, e.fd, entries)
				found[set] = e
			}
		}
	}
	return found
}

// epollEntries reads the entries of epoll set fd: lines such as
// "tfd:        7 events:       19 data: ...".
func epollEntries(t *testing.T, fd int) []epollEntry {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		return nil // closed meanwhile
	}
	defer f.Close()
	var entries []epollEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[0] != "tfd:" || fields[2] != "events:" {
			continue
		}
		tfd, err := strconv.Atoi(fields[1])
		require.NoError(t, err)
		ev, err := strconv.ParseUint(fields[3], 16, 32)
		require.NoError(t, err)
		entries = append(entries, epollEntry{tfd, uint32(ev)})
	}
	return entries
}

// TestOnWriteBlock: a write that finds the socket full calls the
// function OnWriteBlock set before it waits for room, so that its owner
// can have its links read.
func TestOnWriteBlock(t *testing.T) {
	a, b := linktest.Pair(t, &tcp.Transport{})
	var blocked atomic.Int32
	a.(transport.Poller).OnWriteBlock(func() { blocked.Add(1) })
	const size = 64 << 20 // more than both sockets' buffers hold
	written := make(chan error, 1)
	go func() { written <- a.WriteMessage(context.Background(), header(size), make([]byte, size)) }()
	for i := 0; blocked.Load() == 0; i++ {
		require.Less(t, i, 5000, "the write never found the socket full")
		time.Sleep(time.Millisecond)
	}
	_, p, err := linktest.ReadMessage(b)
	require.NoError(t, err)
	require.Len(t, p, size)
	require.NoError(t, <-written)
}
