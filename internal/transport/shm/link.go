//go:build linux

package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/race"
	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/internal/linkerr"
	"github.com/gocoll/gocoll/internal/transport/internal/writelock"
	"github.com/gocoll/gocoll/internal/wire"
)

// A message in a ring is a record: two 8-byte words, the 64-byte header,
// then the payload bytes that go through the ring. The first word is 0
// when the whole payload follows in the ring; otherwise it is the address
// in the writer's process of the payload's CMA part, its end, which the
// reader copies with process_vm_readv. The second word is how many
// payload bytes follow the record in the ring before the CMA part: all
// of them when there is none, and the head of a WriteParts whose body
// goes by CMA. Nothing in the ring needs alignment: records and payloads
// are copied bytewise, across the ring's end where they wrap.
const (
	prefixSize = 16
	recordSize = prefixSize + wire.HeaderSize
)

// maxChunk bounds the bytes that a writer copies into the ring before it
// publishes them, and that a reader copies out before it frees them, so
// that the two overlap on long payloads instead of taking turns. A
// message longer than a chunk is Streaming while it comes, and a caller
// waiting for it copies it out behind the writer: two processes' 64 KiB
// ping-pong took 20.6-21.0 µs a round trip with chunks of 64 KiB, 15.9-16.2
// with chunks of 16 KiB, whose one-way bandwidth was level from 32 KiB to
// 16 MiB (Intel Xeon host, 2026-11-29).
const maxChunk = 16 << 10

// Waiting (shmem.Waiter): a waiter polls and yields to the process's
// goroutines (the reader's message goes to a caller goroutine, which must
// run before the peer hears back) for spinFor, in which a peer that is
// running answers, and then sleeps on its bell for at most parkTimeout at
// a time, so that an idle link costs no core. A sleeper's wake-up goes
// through a knock, the netpoller and, on a virtual machine, the
// hypervisor's wake-up of an idle CPU: tens of microseconds (a blocking
// tcp ping-pong took 48.7 µs one way on 2026-11-28's host, against 4.5
// busy-polling), and a ping-pong of 256 KiB to 1 MiB waits longer than
// 50 µs between its turns, so that each side slept and woke on every
// message: with 200 µs it took 0.75-0.85 of the time (two processes,
// BenchmarkTwoProcess/shm/bound/pingpong, three alternating runs: 1 MiB
// 177-191 µs against 230-237). parkTimeout also bounds how late a writer
// notices that its context ended, since nothing rings a bell for that.
// (A variable only so that a test can make a missed knock a hang.)
const spinFor = 200 * time.Microsecond

var parkTimeout = 100 * time.Millisecond

// Reasons for a wait to end other than its condition.
var (
	errLocalClosed = errors.New("link closed")
	errPeerGone    = errors.New("peer gone")
	errCtxDone     = errors.New("context done")
)

// link is a transport.Link over a shared region. Side 0 is the dialer;
// side s writes into ring s and reads from ring 1-s.
type link struct {
	conn   *net.UnixConn // open for the link's life: its end is the peer's end
	peer   int
	reg    *shmem.Region
	out    ring
	in     ring
	size   uint64
	chunk  uint64
	cma    bool
	ways   *shmem.SingleCopy // nil: every payload that may go by CMA does (options.ways)
	mine   *atomic.Uint32    // this side's closed word
	theirs *atomic.Uint32    // the peer's closed word

	// What a CMA read needs: the peer's process as this one sees it (0
	// when it lives in a PID namespace that this one cannot see), and
	// its cookie, a word in the peer's memory that every read also
	// fetches (shmem.Cookie). A cookie that does not match means that
	// the PID now belongs to another process, so nothing read from it
	// can be delivered.
	peerPID    int
	peerCookie shmem.Cookie
	cookie     *uint64 // this side's, which the peer reads

	closed    atomic.Bool
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	unmapped  atomic.Bool

	// Write side, owned by the holder of wsem, a mutex that a writer can
	// give up waiting for.
	wusers     users // WriteMessage and Close
	wsem       writelock.Lock
	wtail      uint64 // bytes written into the ring, published or not
	wpub       uint64 // bytes published (the ring's tail)
	wstart     uint64 // wpub when the current message began
	whead      uint64 // the ring's head as last seen
	wrec       [recordSize]byte
	wwait      shmem.Waiter
	wcma       []byte // the CMA part of the write in progress
	cmaRefused bool   // the reader refused a CMA read: use the ring from now on
	wvm        shmem.VM
	refuseHelp bool // test hook: act as if process_vm_writev were refused

	// Read side, owned by the reading goroutine.
	rusers    users  // ReadHeader, ReadPayload and the watcher
	rhead     uint64 // bytes consumed (the ring's head)
	rtail     uint64 // the ring's tail as last seen
	rrec      [recordSize]byte
	rwait     shmem.Waiter
	remaining uint64       // unread payload bytes of the current message
	inline    uint64       // those of them that come through the ring before the CMA part; all once there is none
	cmaAddr   uint64       // nonzero: the current payload ends with a CMA part in the writer's memory, here
	cmaOff    uint64       // bytes of the CMA part already read by CMA
	refuseCMA bool         // test hook: act as if process_vm_readv were refused
	unhelped  bool         // the writer could not write its share of a CMA copy: stop asking
	helpStop  func() error // writerGone, as a method value made once
	vm        shmem.VM
	// Polling (poll.go): Wake's mark, WaitReadable's waiter (it runs
	// beside whoever holds the reading side, and a Waiter belongs to one
	// goroutine at a time), and its stop as a method value made once.
	woken        atomic.Bool
	seen         atomic.Uint64 // rtail, for WaitReadable, which does not hold the reading side
	pwait        shmem.Waiter
	readableStop func() error
	onWriteBlock func()

	knocks knocks // how the waiters of each side wake those of the other
}

var _ transport.Link = (*link)(nil)

// users counts the calls of one side of a link (reading or writing)
// that use the region, on cache lines of its own, so that the reader and
// the writers do not contend for one counter. Close never waits for
// calls and never pulls the memory from under one: the last user out of
// a closed link unmaps the region.
type users struct {
	_ [slot]byte
	n atomic.Int32
	_ [slot - 4]byte
}

// linkParams is what the setup of a link found out.
type linkParams struct {
	reg        *shmem.Region
	side       int
	ringSize   int
	peer       int
	peerPID    int
	peerCookie shmem.Cookie
	cookie     *uint64
}

// newLink makes the link over p.reg and starts its watcher.
func newLink(c *net.UnixConn, p *linkParams, o *options) *link {
	reg := p.reg
	// The two processes of a link are crowded when this one may run on
	// one CPU only. That also holds for processes that a launcher bound
	// to cores of their own, but a Waiter soon finds out that its yields
	// return at once and stops yielding often.
	crowded := runtime.NumCPU() < 2
	l := &link{
		conn:       c,
		peer:       p.peer,
		reg:        reg,
		out:        newRing(reg, p.side, p.ringSize),
		in:         newRing(reg, 1-p.side, p.ringSize),
		size:       uint64(p.ringSize),
		chunk:      uint64(min(p.ringSize/4, maxChunk)),
		cma:        o.cma,
		ways:       o.ways,
		mine:       reg.Uint32(offClosed + p.side*slot),
		theirs:     reg.Uint32(offClosed + (1-p.side)*slot),
		peerPID:    p.peerPID,
		peerCookie: p.peerCookie,
		cookie:     p.cookie,
		done:       make(chan struct{}),
		wsem:       writelock.New(),
		wwait:      shmem.NewWaiter(spinFor, parkTimeout, crowded),
		rwait:      shmem.NewWaiter(spinFor, parkTimeout, crowded),
		pwait:      shmem.NewWaiter(spinFor, parkTimeout, crowded),
	}
	l.readableStop = l.stopReadable
	l.helpStop = l.writerGone
	l.initKnocks()
	go l.watch()
	return l
}

// Peer returns the rank at the other end, as proven by the handshake.
func (l *link) Peer() int { return l.peer }

func (l *link) String() string {
	return fmt.Sprintf("shm link to rank %d (pid %d)", l.peer, l.peerPID)
}

// watch reads the socket: the peer's knocks, which it passes on to this
// side's waiters, and then its end, which comes when the peer closes the
// link or its process dies, after which it wakes this side's waiters, so
// that nothing waits for a peer that is gone.
func (l *link) watch() {
	var b [64]byte
	for {
		n, err := l.conn.Read(b[:])
		l.knocked(b[:n])
		if err != nil {
			break
		}
	}
	if l.enter(&l.rusers) {
		l.peerGone()
		l.exit(&l.rusers)
	}
}

// peerGone records that the peer is gone, unless it closed its end
// first, and wakes this side's waiters.
func (l *link) peerGone() {
	l.theirs.CompareAndSwap(sideOpen, sideDied)
	l.in.consumer.Wake()
	l.out.producer.Wake()
}

// enter counts a call among u before it uses the region; it fails once
// the link is closed. Close stores closed before it looks at the
// counts, and a call counts itself before it looks at closed, so either
// the call sees the link closed or the last one out sees the call.
func (l *link) enter(u *users) bool {
	u.n.Add(1)
	if l.closed.Load() {
		l.exit(u)
		return false
	}
	return true
}

// exit ends a call counted by enter. The last call out of a closed link
// unmaps the region.
func (l *link) exit(u *users) {
	u.n.Add(-1)
	if l.closed.Load() && l.rusers.n.Load() == 0 && l.wusers.n.Load() == 0 && l.unmapped.CompareAndSwap(false, true) {
		l.reg.Close()
	}
}

// await waits with w until idx - base >= need and returns the value of
// idx that satisfied it; b is the bell of the calling side. It gives up
// with errLocalClosed after Close, errPeerGone once the peer closed or
// died, and errCtxDone when ctxDone (which may be nil) is closed.
func (l *link) await(w *shmem.Waiter, b shmem.Bell, idx *atomic.Uint64, base, need uint64, ctxDone <-chan struct{}) (uint64, error) {
	return w.Wait(idx, base, need, b, shmem.ToGoroutines, func() error { return l.stopped(ctxDone) })
}

// awaitReader is await of the reader's answer to a CMA write: until the
// ack reaches need.
func (l *link) awaitReader(need uint64, ctxDone <-chan struct{}) (uint64, error) {
	return l.wwait.Wait(l.out.ack, 0, need, l.out.producer, shmem.ToGoroutines, func() error {
		if waitsForReader != nil {
			waitsForReader()
		}
		return l.stopped(ctxDone)
	})
}

// stopped says why a wait must end, if it must.
func (l *link) stopped(ctxDone <-chan struct{}) error {
	if l.closed.Load() {
		return errLocalClosed
	}
	if l.theirs.Load() != sideOpen {
		return errPeerGone
	}
	if ctxDone == nil {
		return nil
	}
	select {
	case <-ctxDone:
		return errCtxDone
	default:
		return nil
	}
}

// WriteMessage sends h and payload as one message. It does not retain h
// or payload after it returns. len(payload) must equal h.Length and h
// must be valid (wire.Header.Validate); otherwise nothing is sent, the
// link stays usable and the error says why.
//
// A message that fits in the free space of the ring is copied in and
// WriteMessage returns; a larger one streams through the ring as the
// reader frees space. A payload of CMAThreshold bytes or more is, unless
// CMA is off or was refused on this link, read by the reader straight
// out of payload, and WriteMessage returns once the reader has read or
// skipped it.
//
// If ctx is done before the message starts to go out, WriteMessage
// returns ctx.Err() and the link stays usable. If ctx ends while the
// message is partly sent, the link is closed and the error wraps both
// ctx.Err() and net.ErrClosed. After Close the error wraps
// net.ErrClosed; if the peer closed or died, it wraps syscall.EPIPE.
// WriteMessage does not allocate.
func (l *link) WriteMessage(ctx context.Context, h wire.Header, payload []byte) error {
	return l.WriteParts(ctx, h, nil, payload)
}

// WriteParts is WriteMessage of the payload head followed by body;
// len(head)+len(body) must equal h.Length. A body of CMAThreshold bytes
// or more is the part that the reader reads straight out of the
// writer's memory, and the head then goes through the ring ahead of it:
// the head of a value is small, and its body the value's own memory.
// WriteParts does not retain head or body.
func (l *link) WriteParts(ctx context.Context, h wire.Header, head, body []byte) error {
	ctxDone, err := l.wsem.Acquire(ctx, "shm", &h, len(head)+len(body), l.done, nil)
	if err != nil {
		if err == writelock.ErrClosed {
			return l.closedErr("write")
		}
		return err
	}
	if l.enter(&l.wusers) {
		err = l.write(ctxDone, &h, head, body)
		l.wcma = nil // do not retain body
		if err != nil {
			err = l.writeErr(ctx, err, len(head)+len(body))
		}
		l.exit(&l.wusers)
	} else {
		err = l.closedErr("write")
	}
	l.wsem.Release()
	return err
}

// write sends one message, whose payload is head and then body; the
// caller holds wsem and counts among the writing users. It returns the
// reasons of await, and a descriptive error for a peer that broke the
// protocol.
func (l *link) write(ctxDone <-chan struct{}, h *wire.Header, head, body []byte) error {
	if l.theirs.Load() != sideOpen {
		return errPeerGone
	}
	l.wstart = l.wpub
	addr, inline := uint64(0), uint64(len(head)+len(body))
	cma, way, began := l.chooseWay(len(body))
	if cma {
		// The reader reads the body at this address until it
		// acknowledges it. Storing the slice in the link keeps it alive
		// meanwhile, and makes it escape: a caller that the compiler
		// devirtualizes could otherwise keep it on a goroutine stack,
		// which moves when it is copied. Heap objects do not move.
		l.wcma = body
		addr = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(body))))
		inline = uint64(len(head))
		l.out.ack.Store(ackPending)
		l.out.helped.Store(helpPending)
		if race.Enabled {
			// The reader's process_vm_readv reads it while this
			// goroutine waits for the ack.
			race.ReadSlice(body)
		}
	}
	binary.LittleEndian.PutUint64(l.wrec[:8], addr)
	binary.LittleEndian.PutUint64(l.wrec[8:prefixSize], inline)
	h.MarshalTo((*[wire.HeaderSize]byte)(l.wrec[prefixSize:]))

	// The record goes in whole or not at all, so that a context that
	// ends while the ring is full leaves the link at a boundary.
	if err := l.reserve(recordSize, ctxDone); err != nil {
		return err
	}
	l.out.put(l.wtail, l.wrec[:])
	l.wtail += recordSize
	if err := l.stream(head, ctxDone); err != nil {
		return err
	}
	if cma {
		// The links of this process are asked to be read only once the
		// writer parks (writeBlocked): a reading goroutine woken now
		// would take the peer's answer before this rank posts its
		// receive, and copy it twice.
		l.publish()
		l.wwait.SetSpin(ackSpinFor(len(body)))
		ack, err := l.awaitReader(ackHelp, ctxDone)
		switch {
		case err != nil:
			l.abandon()
		case ack == ackHelp:
			if err = l.help(body); err == nil {
				ack, err = l.awaitReader(ackDone, ctxDone)
			}
		}
		l.wwait.SetSpin(spinFor)
		if err != nil {
			return err
		}
		if ack == ackDone {
			l.learn(way, len(body), began)
			return nil
		}
		// Refused: send the rest of the body through the ring, now and
		// from now on.
		l.cmaRefused = true
		began = time.Time{} // neither way's time
		off := l.out.resume.Load()
		if off > uint64(len(body)) {
			return fmt.Errorf("shm: rank %d refused CMA at offset %d of a %d-byte CMA part", l.peer, off, len(body))
		}
		body = body[off:]
	}
	if err := l.stream(body, ctxDone); err != nil {
		return err
	}
	l.publish()
	if published != nil {
		published()
	}
	// A Close that began before the message was published may have made
	// the reader stop short of it; the message then counts as not sent,
	// unless the reader has taken it all the same (the peer's goodbye,
	// which closes this side, may follow its reading of the message
	// before the look).
	if l.closed.Load() && l.out.head.Load() < l.wtail {
		return errLocalClosed
	}
	l.learn(way, len(body), began)
	return nil
}

// chooseWay reports whether a body of n bytes goes by CMA, what the
// link's chooser, if it has one, chose, and when the write began if the
// chooser is to learn its time. It does not learn the writes that begin
// in the ring's first lap, which are the first to touch its pages: on a
// Zen 5 VM whose page faults cost 1.35 µs, the first 16 writes of 64 KiB
// took 20-24 µs through the ring and the later ones 0.5-1.5, and a
// chooser that learned from them sent the next hundreds by CMA, at 4-5
// µs (2026-11-29).
func (l *link) chooseWay(n int) (cma bool, way shmem.Choice, began time.Time) {
	if n < CMAThreshold || !l.cma || l.cmaRefused {
		return false, way, began
	}
	cma = true
	if l.ways != nil {
		way = l.ways.Choose(linkKind, linkKind, n)
		cma = way.Single
		if way.Timed && l.wstart >= l.size {
			began = time.Now()
		}
	}
	if wrote != nil {
		wrote(cma)
	}
	return cma, way, began
}

// linkKind is the kind, and family, of the writes whose way a link's
// shmem.SingleCopy chooses: it has no other.
const linkKind = 0

// learn tells the link's chooser how long a write of a bytes-long
// payload took the way it chose, if it timed the write (began is not
// zero).
func (l *link) learn(way shmem.Choice, bytes int, began time.Time) {
	if !began.IsZero() {
		l.ways.Learn(linkKind, bytes, way, int64(time.Since(began)))
	}
}

// help writes the share of body that the reader asked this side to write
// (ackHelp) into the reader's memory, and tells it whether that worked.
// Where the kernel refuses, or the reader is gone, the reader is told
// that it failed and copies the share itself (or finds its peer gone).
func (l *link) help(body []byte) error {
	if helping != nil {
		helping()
	}
	off := l.out.helpOff.Load()
	if off >= uint64(len(body)) {
		l.answer(helpFailed)
		return fmt.Errorf("shm: rank %d asked for help from offset %d of a %d-byte CMA part", l.peer, off, len(body))
	}
	if l.refuseHelp || l.wvm.Write(l.peerPID, l.peerCookie, l.out.helpDst.Load(), body[off:]) != nil {
		l.answer(helpFailed)
	} else {
		l.answer(helpDone)
	}
	return nil
}

// abandon withdraws the CMA message whose ack this side stopped waiting
// for. A reader that asked for help first is owed an answer, since it
// waits for one for as long as this process lives: it is told that the
// help failed, and finds the link closed.
func (l *link) abandon() {
	if !l.out.ack.CompareAndSwap(ackPending, ackAbandoned) && l.out.ack.Load() == ackHelp {
		l.answer(helpFailed)
	}
}

// answer answers the reader's request for help.
func (l *link) answer(v uint64) {
	l.out.helped.Store(v)
	l.out.consumer.Ring()
}

// stream copies p into the ring after what was written, publishing every
// chunk and waiting for space as the reader frees it.
func (l *link) stream(p []byte, ctxDone <-chan struct{}) error {
	for len(p) > 0 {
		if l.wtail-l.whead == l.size {
			if err := l.reserve(min(uint64(len(p)), l.chunk), ctxDone); err != nil {
				return err
			}
		}
		n := min(uint64(len(p)), l.size-(l.wtail-l.whead), l.chunk-(l.wtail-l.wpub))
		l.out.put(l.wtail, p[:n])
		l.wtail += n
		p = p[n:]
		if l.wtail-l.wpub == l.chunk {
			l.publish()
			if streamed != nil {
				streamed()
			}
		}
	}
	return nil
}

// ackSpin is how long a writer polls for the reader to be done with an
// n-byte CMA payload before it parks: the time the copy takes at 1 GB/s,
// slower than process_vm_readv has been seen to run (5-20 GB/s), and
// spinFor on top. A writer that parks wakes only when the reader's knock
// has gone through both sockets and the netpoller, tens of microseconds
// later, and meanwhile its process's next receive, not yet posted, takes
// the peer's answer as an early message, which then costs a second copy:
// a 1 MiB ping-pong between processes took 476 µs a round trip with the
// writers parking after 50 µs.
func ackSpin(n int) time.Duration {
	return min(spinFor+time.Duration(n)*time.Nanosecond, ackSpinMax)
}

// ackSpinMax bounds ackSpin: a writer of a larger payload parks while it
// is copied, which costs a wake-up among milliseconds.
const ackSpinMax = time.Millisecond

// ackSpinFor is ackSpin, or what a test makes it.
var ackSpinFor = ackSpin

// published, when set (by tests), runs after a write has published its
// message and before it looks whether the link closed meanwhile;
// streamed, after a write has published a chunk of a message it has not
// finished.
var published, streamed func()

// helping, when set (by tests), runs when a writer starts to answer a
// request for help.
var helping func()

// waitsOnClosed, when set (by tests), runs each time a reader that waits
// for the writer's half of a payload finds the writer's side closed and
// its process alive, and so waits on.
var waitsOnClosed func()

// waitsForReader, when set (by tests), runs each time a CMA write that
// waits for its reader's answer looks whether it must stop waiting.
var waitsForReader func()

// wrote, when set (by tests), runs as a write of a payload that may go
// by CMA (CMAThreshold bytes or more, on a link made WithCMA or
// WithCMAWhereFaster) has chosen its way: by CMA or through the ring.
var wrote func(cma bool)

// reserve waits until the ring has n free bytes, publishing what was
// written before it waits.
func (l *link) reserve(n uint64, ctxDone <-chan struct{}) error {
	if l.size-(l.wtail-l.whead) >= n {
		return nil
	}
	l.whead = l.out.head.Load()
	if l.size-(l.wtail-l.whead) >= n {
		return nil
	}
	l.publish()
	v, err := l.await(&l.wwait, l.out.producer, l.out.head, l.wtail-l.size, n, ctxDone)
	l.whead = v
	return err
}

// writeBlocked runs each time a writer that waits for the reader, for
// room in the ring or to be done with a CMA payload, parks
// (OnWriteBlock): the reader may be waiting in its turn for a message of
// this process's, which a resting link of its nobody reads.
func (l *link) writeBlocked() {
	if l.onWriteBlock != nil {
		l.onWriteBlock()
	}
}

// publish makes the written bytes visible to the reader and wakes it if
// it sleeps.
func (l *link) publish() {
	if l.wpub == l.wtail {
		return
	}
	l.wpub = l.wtail
	l.out.tail.Store(l.wpub)
	l.out.consumer.Ring()
}

// writeErr turns a failed write's reason into its error. Bytes written
// but not published are dropped; a message that was partly published
// cannot be taken back, so then the link is closed.
func (l *link) writeErr(ctx context.Context, err error, payload int) error {
	l.wtail = l.wpub
	if err == errCtxDone {
		if l.wpub == l.wstart {
			return ctx.Err()
		}
		sent := int64(l.wpub-l.wstart) - prefixSize
		l.Close()
		return &linkerr.Interrupted{Net: "shm", Cause: ctx.Err(), Sent: sent, Total: int64(wire.HeaderSize + payload)}
	}
	switch err {
	case errLocalClosed:
		// Close may still be on its way to marking this side closed
		// in the region; the peer must see that before the caller
		// reuses a payload that the peer may be reading by CMA. Close
		// returns only once the first Close is done.
		l.Close()
		return l.closedErr("write")
	case errPeerGone:
		return &net.OpError{Op: "write", Net: "shm", Source: l.conn.LocalAddr(), Addr: l.conn.RemoteAddr(), Err: syscall.EPIPE}
	}
	l.Close()
	return fmt.Errorf("%w; link closed", err)
}

// closedErr is the error of a call on a closed link.
func (l *link) closedErr(op string) error {
	return &net.OpError{Op: op, Net: "shm", Source: l.conn.LocalAddr(), Addr: l.conn.RemoteAddr(), Err: net.ErrClosed}
}

// ReadHeader waits for the next message and decodes its header into h,
// first skipping what is left of the previous message's payload. It
// returns io.EOF when the peer closed the link or died at a message
// boundary, io.ErrUnexpectedEOF when it did so inside a message, an
// error wrapping wire.ErrBadHeader for a header that does not decode
// (the link is then closed), and an error wrapping net.ErrClosed after
// Close. ReadHeader does not allocate.
func (l *link) ReadHeader(h *wire.Header) error {
	if !l.enter(&l.rusers) {
		return l.closedErr("read")
	}
	err := l.readHeader(h)
	l.exit(&l.rusers)
	return err
}

func (l *link) readHeader(h *wire.Header) error {
	if l.remaining > 0 {
		if err := l.skip(); err != nil {
			return err
		}
	}
	if err := l.fill(recordSize); err != nil {
		if err == errPeerGone && l.rtail == l.rhead {
			return io.EOF
		}
		return l.readErr(err)
	}
	l.in.get(l.rhead, l.rrec[:])
	l.consume(recordSize)
	addr, inline, err := l.decodeRecord(h)
	if err != nil {
		l.Close()
		return fmt.Errorf("shm: link from rank %d: %w; link closed", l.peer, err)
	}
	l.remaining = h.Length
	l.inline = inline
	l.cmaAddr = addr
	l.cmaOff = 0
	return nil
}

// decodeRecord decodes the record in rrec into h and returns the address
// of the payload's CMA part (0 without one) and how many of its bytes
// come through the ring.
func (l *link) decodeRecord(h *wire.Header) (addr, inline uint64, err error) {
	addr = binary.LittleEndian.Uint64(l.rrec[:8])
	inline = binary.LittleEndian.Uint64(l.rrec[8:prefixSize])
	err = h.Unmarshal((*[wire.HeaderSize]byte)(l.rrec[prefixSize:]))
	if err == nil && (addr == 0 && inline != h.Length || addr != 0 && inline >= h.Length) {
		err = fmt.Errorf("%w: record of a %d-byte payload with %d bytes in the ring and its CMA part at %#x", wire.ErrBadHeader, h.Length, inline, addr)
	}
	return addr, inline, err
}

// skip discards the rest of the current message's payload.
func (l *link) skip() error {
	if err := l.drain(nil, l.inline); err != nil || l.cmaAddr == 0 {
		return err
	}
	if l.theirs.Load() != sideOpen {
		// The writer gave up on the message (it waits for the ack
		// otherwise).
		return io.ErrUnexpectedEOF
	}
	l.remaining = 0
	l.cmaAddr = 0
	l.ack(ackDone)
	return nil
}

// ReadPayload reads exactly len(p) bytes of the current message's
// payload into p: from the ring, and straight from the writer's memory
// for the CMA part of a message. It does not retain p. Asking for more
// bytes than remain in the message is an error, and then nothing is
// read. It returns io.ErrUnexpectedEOF if the writer closed or died
// inside the message and an error wrapping net.ErrClosed after Close; on
// error, how much of p was filled is unspecified. ReadPayload does not
// allocate.
func (l *link) ReadPayload(p []byte) error {
	if !l.enter(&l.rusers) {
		return l.closedErr("read")
	}
	var err error
	switch {
	case uint64(len(p)) > l.remaining:
		err = linkerr.Overrun("shm", len(p), l.remaining)
	case uint64(len(p)) <= l.inline:
		err = l.drain(p, uint64(len(p)))
	default:
		// The ring's bytes first, then the CMA part.
		k := l.inline
		if err = l.drain(p[:k], k); err == nil {
			err = l.readCMA(p[k:])
		}
	}
	l.exit(&l.rusers)
	return err
}

// drain consumes n bytes of payload from the ring, copying them into p
// unless p is nil; n is at most inline.
func (l *link) drain(p []byte, n uint64) error {
	for n > 0 {
		if l.rtail == l.rhead {
			if err := l.fill(1); err != nil {
				return l.readErr(err)
			}
		}
		k := min(n, l.rtail-l.rhead, l.chunk)
		if p != nil {
			l.in.get(l.rhead, p[:k])
			p = p[k:]
		}
		l.consume(k)
		l.remaining -= k
		l.inline -= k
		n -= k
	}
	return nil
}

// fill waits until the ring holds n unread bytes.
func (l *link) fill(n uint64) error {
	if l.rtail-l.rhead >= n {
		return nil
	}
	l.sawTail(l.in.tail.Load())
	if l.rtail-l.rhead >= n {
		return nil
	}
	v, err := l.await(&l.rwait, l.in.consumer, l.in.tail, l.rhead, n, nil)
	l.sawTail(v)
	return err
}

// sawTail records the ring's tail as the reading side last saw it.
func (l *link) sawTail(v uint64) {
	l.rtail = v
	l.seen.Store(v)
}

// consume frees n read bytes of the ring and wakes the writer if it
// waits for space.
func (l *link) consume(n uint64) {
	l.rhead += n
	l.in.head.Store(l.rhead)
	l.in.producer.Ring()
}

// readErr turns the reason a read inside a message stopped into its
// error.
func (l *link) readErr(err error) error {
	if err == errPeerGone {
		return io.ErrUnexpectedEOF
	}
	return l.closedErr("read")
}

// readCMA reads p from the CMA part in the writer's memory. If the
// kernel refuses, it asks the writer to send the rest of the payload
// through the ring and reads p from there.
func (l *link) readCMA(p []byte) error {
	err := l.vmRead(p)
	switch {
	case err == unix.EPERM || err == unix.ENOSYS:
		l.ack(ackRefused)
		l.cmaAddr = 0
		l.inline = l.remaining
		return l.drain(p, uint64(len(p)))
	case l.closed.Load():
		return l.closedErr("read")
	case l.theirs.Load() != sideOpen:
		// The writer gave up on the message, and may have reused the
		// payload while it was read.
		return io.ErrUnexpectedEOF
	case err == unix.ESRCH || err == shmem.ErrNotPeer:
		// The process is gone. Its socket closes later, when it has
		// let go of its memory.
		l.peerGone()
		return io.ErrUnexpectedEOF
	case err != nil:
		l.Close()
		return fmt.Errorf("shm: reading %d bytes of a message from rank %d (pid %d): %w; link closed", len(p), l.peer, l.peerPID, err)
	}
	l.cmaOff += uint64(len(p))
	l.remaining -= uint64(len(p))
	if l.remaining == 0 {
		l.cmaAddr = 0
		l.ack(ackDone)
	}
	return nil
}

// vmRead copies len(p) bytes of the current CMA payload into p. When p
// is the whole rest of the payload, the writer, which waits for the ack
// anyway, is asked to write the second half of it while this side reads
// the first: two processes' 1 MiB ping-pong took 102-105 µs a round trip
// so, against 195-208 with the reader copying alone; 64 KiB 11 against
// 18-19, 16 MiB 1.86-1.92 ms against 4.8-5.6 (a C probe, Intel Xeon
// host, 2026-11-29): both cores copy at once.
func (l *link) vmRead(p []byte) error {
	if l.peerPID == 0 || l.refuseCMA {
		return unix.EPERM
	}
	addr := l.cmaAddr + l.cmaOff
	// A writer that sleeps would be woken through its socket and its
	// netpoller, tens of microseconds (a blocking tcp ping-pong took 41.6
	// µs one way on the Intel Xeon host), about what this side takes to
	// copy 256 KiB alone.
	if uint64(len(p)) != l.remaining || l.unhelped || l.in.producer.Sleepers.Load() != 0 {
		return l.vm.Read(l.peerPID, l.peerCookie, addr, p)
	}
	half := len(p) / 2
	l.in.helpOff.Store(l.cmaOff + uint64(half))
	l.in.helpDst.Store(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p[half:])))))
	if !l.in.ack.CompareAndSwap(ackPending, ackHelp) {
		// The writer gave up on the message (abandon).
		return l.vm.Read(l.peerPID, l.peerCookie, addr, p)
	}
	l.in.producer.Ring()
	err := l.vm.Read(l.peerPID, l.peerCookie, addr, p[:half])
	// The writer may be writing into p until it answers, whatever this
	// side's read did and whoever closes the link meanwhile: p is the
	// caller's again once this returns. It answers unless its process
	// is gone.
	answer, werr := l.rwait.Wait(l.in.helped, 0, helpDone, l.in.consumer, shmem.ToGoroutines, l.helpStop)
	switch {
	case werr != nil:
		return werr
	case err != nil:
		return err
	case answer == helpFailed:
		l.unhelped = true
		return l.vm.Read(l.peerPID, l.peerCookie, addr+uint64(half), p[half:])
	}
	if race.Enabled {
		race.WriteSlice(p[half:])
	}
	return nil
}

// writerGone ends the wait for the writer's answer to a request for
// help once the writer's process is gone, which a link that closed
// (either side) does not say: a writer that lives answers.
func (l *link) writerGone() error {
	if l.theirs.Load() != sideOpen {
		if l.vm.Check(l.peerPID, l.peerCookie) != nil {
			return errPeerGone
		}
		if waitsOnClosed != nil {
			waitsOnClosed()
		}
	}
	return nil
}

// ack tells the writer of the current CMA message that this side is done
// with it, or (ackRefused) that it must send the payload from cmaOff on
// through the ring.
func (l *link) ack(v uint64) {
	if v == ackRefused {
		l.in.resume.Store(l.cmaOff)
	}
	l.in.ack.Store(v)
	l.in.producer.Ring()
}

// Close closes this end. The peer reads what was written before, then
// io.EOF (or io.ErrUnexpectedEOF inside a message), and its writes fail;
// pending calls on this end return errors wrapping net.ErrClosed. Close
// does not wait for them: the region is unmapped when the last of them
// has returned. Close is idempotent and returns nil.
func (l *link) Close() error {
	l.closeOnce.Do(func() {
		l.wusers.n.Add(1) // Close uses the region too
		// closed before mine: a writer that has published a message
		// and then finds the link still open (see write) stored its
		// tail before the peer can see this side closed, and the peer
		// looks at the ring once more when it does.
		l.closed.Store(true)
		close(l.done)
		l.mine.Store(sideClosed)
		// Whoever waits, on either side, must look again.
		l.out.consumer.Wake()
		l.in.producer.Wake()
		l.in.consumer.Wake()
		l.out.producer.Wake()
		l.conn.Close() // ends the watcher, and tells the peer's
		l.exit(&l.wusers)
	})
	return nil
}
