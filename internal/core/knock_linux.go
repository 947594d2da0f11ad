//go:build linux

package core

import (
	"fmt"
	"math"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/shmem"
)

// Knocks. A rank that has waited segYieldFor for another goes to sleep,
// and sleeping on the segment's futex is a system call. At GOMAXPROCS=1,
// as launched ranks run, the runtime's monitor (sysmon) takes the
// processor back from a goroutine in a system call, and that sets it
// looking at the process every 20 µs again, backing off over about 25
// ms. On a VM under PVM each look cost a busy rank 55-70 µs: after a rank
// had waited 16-40 ms for another, its next 3000 small Gathers lost about
// 3 ms in all (72-96 calls over 20 µs against 26-44 after waits of 1-8
// ms; with the waiter spinning, or sleeping on Go timers, 8-38). So, as
// the shared-memory links do (transport/shm's knock.go), a rank parks
// its waiting goroutine (shmem.Parker) instead, which a watcher goroutine
// wakes when a datagram arrives on the rank's Unix socket, and a rank
// that rings the segment's bell knocks on the socket of each rank whose
// word in the segment says that it sleeps (shmem.Bell.Sleeping), once per
// sleep: the bell rings with every step while anyone sleeps, and
// knocking on every rank each time woke three processes' watchers at
// every step of four ranks on two CPUs, whose 16 MiB Alltoalls then took
// twice as long. The sockets have abstract names, made of the segment's
// file and the rank, and so leave nothing behind. A rank whose socket
// could not be made sleeps on the futex as before, and the knocks wake
// the futex too.
type knocker struct {
	conn     *net.UnixConn
	raw      syscall.RawConn
	to       []*unix.SockaddrUnix // by rank, nil for this one
	sleeping []*atomic.Uint32     // by rank: 1 while it sleeps, 2 once knocked on
	one      [1]byte
	send     func(fd uintptr) bool // the knocks, made once so that knocking allocates nothing
	seq      *atomic.Uint32        // the futex word, for sleepers without a socket
	parker   *shmem.Parker         // what the waiter parks on and the watcher wakes
	heard    atomic.Uint64         // knocks the watcher read
}

// knockName is the abstract socket name of rank's knocks on the segment
// in the file id.
func knockName(id shmem.Identity, rank int) string {
	return fmt.Sprintf("@gocoll-segment-%x-%x-%d", id.Dev, id.Ino, rank)
}

// newKnocker makes rank's socket on the segment in the file id, whose
// futex word is seq and whose ranks' words that say they sleep are
// sleeping, and starts its watcher.
func newKnocker(id shmem.Identity, rank int, seq *atomic.Uint32, sleeping []*atomic.Uint32) (*knocker, error) {
	ranks := len(sleeping)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: knockName(id, rank), Net: "unixgram"})
	if err != nil {
		return nil, err
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, err
	}
	k := &knocker{conn: conn, raw: raw, to: make([]*unix.SockaddrUnix, ranks), sleeping: sleeping, seq: seq,
		parker: shmem.NewParker()}
	for r := range ranks {
		if r != rank {
			k.to[r] = &unix.SockaddrUnix{Name: knockName(id, r)}
		}
	}
	// Sends that never wait: a full socket already holds knocks enough,
	// and a rank that is gone has nobody to wake.
	k.send = func(fd uintptr) bool {
		for r, to := range k.to {
			if to != nil && k.sleeping[r].CompareAndSwap(1, 2) {
				unix.Sendto(int(fd), k.one[:], unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, to)
			}
		}
		return true
	}
	go k.watch()
	return k, nil
}

// watch passes each knock on to the parked waiter, until the socket
// closes.
func (k *knocker) watch() {
	var b [16]byte
	for {
		if _, err := k.conn.Read(b[:]); err != nil {
			return
		}
		k.heard.Add(1)
		k.parker.Wake()
	}
}

// park waits for a knock, for d at most (shmem.Waiter.SetPark).
func (k *knocker) park(d time.Duration) { k.parker.Park(d) }

// knock wakes the other ranks that sleep (shmem.Bell.Knock).
func (k *knocker) knock() {
	shmem.Wake(k.seq, math.MaxInt32)
	k.raw.Write(k.send)
}

// close closes the socket, which ends the watcher.
func (k *knocker) close() { k.conn.Close() }
