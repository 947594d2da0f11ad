package transport

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gocoll/gocoll/internal/wire"
)

// Link is an ordered, reliable, message-oriented connection between two
// ranks. Each message is a wire.Header followed by Header.Length payload
// bytes. The reading side decides where the payload goes after it has seen
// the header, which is what lets a receiver read a payload straight into
// the buffer of a posted receive.
//
// WriteMessage and WriteParts may be called from several goroutines at
// once; ReadHeader and ReadPayload belong to one reading goroutine. Close
// may be called at any time from any goroutine and unblocks both sides.
type Link interface {
	// WriteMessage sends h and then payload as one message; len(payload)
	// must equal h.Length. Messages of concurrent calls are never
	// interleaved. WriteMessage does not retain h or payload after it
	// returns.
	//
	// If ctx is done before the message starts to go out, WriteMessage
	// returns ctx's error and the link stays usable. If ctx is done while
	// the message is partly written, the link is closed (a half-sent
	// message cannot be taken back) and the error wraps both ctx's error
	// and net.ErrClosed.
	WriteMessage(ctx context.Context, h wire.Header, payload []byte) error

	// WriteParts is WriteMessage of a payload given in two parts, head
	// and then body, which travel as one payload: len(head)+len(body)
	// must equal h.Length, and the reader cannot tell the parts apart.
	// It lets a caller send a value's own memory behind a header that it
	// encoded, without copying both into one buffer. Either part may be
	// empty. WriteParts does not retain head or body after it returns.
	WriteParts(ctx context.Context, h wire.Header, head, body []byte) error

	// ReadHeader blocks until the next message arrives and decodes its
	// header into h. Payload of the previous message that was not read is
	// skipped first. It returns io.EOF when the peer closed the link at a
	// message boundary, io.ErrUnexpectedEOF when it vanished in the middle
	// of one, an error wrapping wire.ErrBadHeader for garbage (after which
	// the link is closed), and an error wrapping net.ErrClosed after Close.
	ReadHeader(h *wire.Header) error

	// ReadPayload reads exactly len(p) bytes of the current message's
	// payload into p. Asking for more than what remains of the payload is
	// an error, and nothing is read.
	ReadPayload(p []byte) error

	// Close closes the link. Messages already handed to WriteMessage or
	// WriteParts and returned from it are delivered before the peer sees
	// io.EOF.
	Close() error

	// Peer is the rank at the other end, as proven by the handshake.
	Peer() int
}

// Config is what one end of a link knows about its job.
type Config struct {
	// Rank is this end's rank in the job.
	Rank int
	// JobID identifies the job; links between different jobs are refused.
	JobID uint64
	// Secret is the job's shared secret. Both ends prove that they know it
	// before a link is handed out; an empty secret still binds links to
	// JobID but authenticates nobody.
	Secret []byte
	// HandshakeTimeout bounds a handshake. Zero means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// Logger receives a line for every refused connection. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// DefaultHandshakeTimeout bounds a handshake when Config leaves it zero.
// It is long enough for a loaded host and short enough that a silent
// client does not hold a listener's goroutine for long.
const DefaultHandshakeTimeout = 10 * time.Second

// MaxHandshakes bounds the connections a listener holds in their
// handshake at once. When one more arrives, the oldest is cut: a flood of
// connections that never finish their handshake costs a bounded number of
// goroutines and descriptors, while a real peer's handshake, a round trip
// or two, completes long before it could become the oldest.
const MaxHandshakes = 64

// Listener accepts links from peers.
type Listener interface {
	// Accept waits for the next peer that completed the handshake. A
	// connection that fails the handshake is logged and dropped, never
	// returned: Accept returns an error only once the listener is closed
	// (wrapping net.ErrClosed).
	Accept() (Link, error)
	// Addr is the address peers dial, in the transport's own notation.
	Addr() string
	Close() error
}

// Transport makes links of one kind.
type Transport interface {
	// Name is the name used by comm.WithTransport ("tcp", "mem", ...).
	Name() string
	// Listen starts a listener at addr ("" picks one).
	Listen(addr string, cfg Config) (Listener, error)
	// Dial connects to the listener at addr, which must belong to rank
	// peer of the same job. It fails with an error wrapping ErrRefused when
	// the other end refuses the handshake.
	Dial(ctx context.Context, addr string, peer int, cfg Config) (Link, error)
}

// ErrRefused is wrapped by errors of a handshake that the other side (or
// this side) refused: a wrong secret, another job, the wrong rank.
var ErrRefused = errors.New("connection refused by handshake")

// A Poller is a Link whose next message can be looked for without
// blocking, so that a goroutine waiting for a message can take it off the
// link itself instead of being woken by the link's reading goroutine: a
// hand-off that costs a wake-up of a parked thread, several microseconds,
// on every message.
//
// The reading side still belongs to one goroutine at a time (the caller
// arranges that, with a lock it can try): Poll, ReadHeader and ReadPayload
// are called by whoever holds it. WaitReadable and Wake may be called
// without holding it.
type Poller interface {
	Link

	// Poll tells how much of the next message has arrived, reading what
	// the socket holds without ever blocking. From Partial on, h holds the
	// message's header, which Poll does not consume: ReadHeader returns it
	// next. After Whole, ReadHeader and ReadPayload take the message
	// without blocking. It returns the errors ReadHeader would.
	Poll(h *wire.Header) (Arrival, error)

	// Holds reports whether the reading side has bytes of a next message
	// in hand, read off the wire by an earlier Poll, so that looking for
	// that message needs no system call.
	Holds() bool

	// WaitReadable blocks until bytes may have arrived that the reading
	// side has not seen yet, Wake is called, or the link fails. It reads
	// nothing, and may return when nothing arrived.
	WaitReadable() error

	// Wake makes a WaitReadable in progress, or else the next one,
	// return. The reading side calls it when it leaves a whole message
	// buffered for the reading goroutine, which would otherwise wait for
	// bytes that have already come.
	Wake()

	// OnWriteBlock sets a function that a write calls each time it
	// finds the link full, before it waits for room: arrivals wake nobody
	// while nobody waits for them (WaitReadable), so a process whose
	// writers wait must make sure that its links are read, or two ranks
	// that write to each other wait for ever. nil, the default, calls
	// nothing. Set it before the link carries messages.
	OnWriteBlock(f func())

	// SetSpin sets how long ReadHeader and ReadPayload, when the rest of
	// a message has not arrived, keep looking for it, letting the
	// process's other goroutines run in between, before they park; 0,
	// the default, parks at once. Parking costs a thread's sleep and
	// wake-up each time a large message outruns its reader; looking
	// keeps the core busy instead. With yield, each look also hands the
	// CPU to the host's other processes (YieldCPU). Like Poll, it belongs
	// to the reading side.
	SetSpin(d time.Duration, yield bool)
}

// Arrival is how much of a link's next message has arrived (Poller.Poll).
type Arrival uint8

const (
	// Nothing: not even the whole header.
	Nothing Arrival = iota
	// Partial: the header; the payload is still arriving, and will fit in
	// what the link buffers.
	Partial
	// Streaming: the header; the payload is still arriving, from a writer
	// in the middle of copying it into what the link buffers (shared
	// memory), so that a reader that takes it now (ReadPayload waits for
	// the rest) copies out while the writer copies in.
	Streaming
	// Whole: the header and the whole payload, which ReadPayload then
	// takes without blocking, however large.
	Whole
	// Large: the header of a payload larger than what the link buffers,
	// not all of which has arrived; the rest, on its way, makes the link
	// readable again. Only blocking reads (ReadPayload) take it.
	Large
)
