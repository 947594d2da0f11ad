//go:build linux

package shm

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/shmem"
)

// Knocks. A waiter on a link that has spun for spinFor goes to sleep,
// and sleeping on the bell's futex is a system call, which keeps the
// goroutine's processor until the runtime's monitor takes it back, 20 µs
// to 20 ms later. A link's reader waits so whenever the link is idle, and
// at GOMAXPROCS=1, each time it went back to sleep the rank's collective
// waited for the monitor: 20 ms calls in 4 of 6 sweeps of gocoll bench
// --objects over shm, which an execution trace showed parked behind the
// reader's futex call. So a link's waiters park their goroutines on a
// channel instead, and the side that rings their bell writes a byte on
// the link's Unix socket: 'r' for the reader, 'w' for the writer. The
// peer's watcher, which reads the socket anyway to see the peer go,
// passes the knock on to the channel. Knocks are only sent to announced
// sleepers (Bell.Ring), so a busy link sends none.
const (
	knockReader = 'r'
	knockWriter = 'w'
)

// knocks holds what a link's waiters park on and the peer knocks with.
type knocks struct {
	// What the reading side, WaitReadable and the writers park on. The
	// reading side and WaitReadable may sleep on the reader's bell
	// together, and a knock on it goes to both: with one Parker, one
	// knock woke one of them and left the other asleep until its park
	// timed out.
	reader, readable, writer *shmem.Parker
	raw                      syscall.RawConn          // the link's socket
	send                     [2]func(fd uintptr) bool // knockReader's, knockWriter's write
}

// initKnocks makes the link's waiters park and its bells knock.
func (l *link) initKnocks() {
	k := &l.knocks
	k.reader, k.readable, k.writer = shmem.NewParker(), shmem.NewParker(), shmem.NewParker()
	k.raw, _ = l.conn.SyscallConn() // a *net.UnixConn's never fails
	for i, b := range [2]byte{knockReader, knockWriter} {
		buf := []byte{b}
		// One send that never waits: a full socket already holds
		// knocks enough to wake the peer, and one whose peer is gone
		// has nobody to wake (MSG_NOSIGNAL: an error, not a SIGPIPE).
		k.send[i] = func(fd uintptr) bool {
			unix.Sendto(int(fd), buf, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil)
			return true
		}
	}
	// This side sleeps on its reader's and its writer's bells, which the
	// peer knocks on, and this side's Close and the watcher knock
	// locally.
	l.in.consumer.Knock = k.wakeReaders
	l.out.producer.Knock = k.writer.Wake
	// The peer sleeps on the other two, which this side knocks on.
	l.out.consumer.Knock = func() { l.knock(0) }
	l.in.producer.Knock = func() { l.knock(1) }
	l.rwait.SetPark(k.reader.Park)
	l.pwait.SetPark(k.readable.Park)
	l.wwait.SetPark(func(d time.Duration) {
		l.writeBlocked()
		k.writer.Park(d)
	})
}

// knock wakes the peer's reader (0) or writer (1).
func (l *link) knock(i int) { l.knocks.raw.Write(l.knocks.send[i]) }

// knocked passes the knocks the watcher read on to the waiters.
func (l *link) knocked(p []byte) {
	for _, b := range p {
		switch b {
		case knockReader:
			l.knocks.wakeReaders()
		case knockWriter:
			l.knocks.writer.Wake()
		}
	}
}

// wakeReaders wakes whoever sleeps on the reader's bell: the reading side
// and WaitReadable.
func (k *knocks) wakeReaders() {
	k.reader.Wake()
	k.readable.Wake()
}
