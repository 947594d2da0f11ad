package rendezvous

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// The protocol after the auth handshake is a stream of frames in both
// directions:
//
//	length uint32   bytes of body, little-endian
//	type   uint8
//	body   [length]byte
//
// Every type has its own bounds on the body, checked before anything is
// allocated, so a peer can never make the other side allocate more than
// the largest legal frame of the type it claims. Request ids let a client
// keep several calls outstanding; replies carry the id of their request.
//
// client -> server
//
//	hello   version uint8, size uint32          first frame after auth
//	set     id uint64, keyLen uint16, key, value
//	get     id uint64, key
//	cancel  id uint64                           give up a get
//	abort   id uint64, reason
//	lose    id uint64, rank uint32, reason      this rank found another lost
//	bye     (empty)                             clean leave
//	beat    period uint32 (ms)                  heartbeat: alive, next beat within period/4
//
// server -> client
//
//	welcome version uint8                       first frame: admitted
//	refuse  message                             first frame: not admitted
//	ok      id uint64                           set or abort done
//	value   id uint64, value                    a get's answer
//	event   kind uint8, rank uint32, reason     another rank lost or aborted
//	gone    reason                              last frame: the store shuts down
//	pulse   (empty)                             answers a beat: the store is alive
type frameType uint8

const (
	tHello frameType = 1 + iota
	tSet
	tGet
	tCancel
	tAbort
	tBye
	tBeat
	tLose
)

const (
	tWelcome frameType = 0x81 + iota
	tRefuse
	tOK
	tValue
	tEvent
	tGone
	tPulse
)

const (
	// protoVersion is sent in hello and welcome; a store refuses a client
	// that speaks another version rather than misreading it.
	protoVersion = 2

	// MaxKey bounds the length of a key in bytes.
	MaxKey = 1 << 10
	// MaxValue bounds the length of a value in bytes. Values are addresses
	// and host names; the bound only keeps a broken client from making the
	// store allocate without limit.
	MaxValue = 16 << 20
	// MaxReason bounds the text of an abort or a loss. Longer reasons are
	// cut.
	MaxReason = 4 << 10
	// MaxSize bounds the number of ranks of a job: ranks travel as uint32,
	// and every client keeps an event slot per rank.
	MaxSize = 1 << 20

	frameHeaderLen = 5
	idLen          = 8
)

// bodyBounds returns the smallest and largest legal body of a frame of
// type t; ok is false for a type that does not exist in that direction.
func bodyBounds(t frameType, fromClient bool) (lo, hi int, ok bool) {
	if fromClient {
		switch t {
		case tHello:
			return 5, 5, true
		case tSet:
			return idLen + 2 + 1, idLen + 2 + MaxKey + MaxValue, true
		case tGet:
			return idLen + 1, idLen + MaxKey, true
		case tCancel:
			return idLen, idLen, true
		case tAbort:
			return idLen, idLen + MaxReason, true
		case tBye:
			return 0, 0, true
		case tBeat:
			return 4, 4, true
		case tLose:
			return idLen + 4, idLen + 4 + MaxReason, true
		}
		return 0, 0, false
	}
	switch t {
	case tWelcome:
		return 1, 1, true
	case tRefuse, tGone:
		return 0, MaxReason, true
	case tOK:
		return idLen, idLen, true
	case tValue:
		return idLen, idLen + MaxValue, true
	case tEvent:
		return 5, 5 + MaxReason, true
	case tPulse:
		return 0, 0, true
	}
	return 0, 0, false
}

// readFrame reads one frame sent by a client (fromClient) or by the
// server. It returns io.EOF only at a frame boundary; a stream that ends
// inside a frame gives io.ErrUnexpectedEOF, and a frame outside its
// type's bounds an error wrapping ErrProtocol.
func readFrame(r io.Reader, fromClient bool) (frameType, []byte, error) {
	var h [frameHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[:4])
	t := frameType(h[4])
	lo, hi, ok := bodyBounds(t, fromClient)
	if !ok {
		return 0, nil, protocolf("unknown frame type %#x", uint8(t))
	}
	if uint64(n) < uint64(lo) || uint64(n) > uint64(hi) {
		return 0, nil, protocolf("frame of type %#x with a %d-byte body (allowed %d to %d)", uint8(t), n, lo, hi)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return t, body, nil
}

// request is a decoded client frame.
type request struct {
	typ     frameType
	id      uint64
	key     string
	value   []byte        // the value of a set, the reason of an abort or a loss
	rank    int           // lose
	version uint8         // hello
	size    int           // hello
	period  time.Duration // beat
}

// reply is a decoded server frame.
type reply struct {
	typ     frameType
	id      uint64
	value   []byte
	ev      Event  // event
	msg     string // refuse, gone
	version uint8  // welcome
}

// parseRequest decodes the body of a client frame that readFrame
// accepted. The encoding is canonical: a body that parses re-encodes to
// the same bytes.
func parseRequest(t frameType, b []byte) (request, error) {
	r := request{typ: t}
	switch t {
	case tHello:
		r.version = b[0]
		size := binary.LittleEndian.Uint32(b[1:])
		if size < 1 || size > MaxSize {
			return r, protocolf("hello with a job size of %d (allowed 1 to %d)", size, MaxSize)
		}
		r.size = int(size)
	case tSet:
		r.id = binary.LittleEndian.Uint64(b)
		kl := int(binary.LittleEndian.Uint16(b[idLen:]))
		rest := b[idLen+2:]
		if kl < 1 || kl > MaxKey || kl > len(rest) {
			return r, protocolf("set with a %d-byte key in a %d-byte body", kl, len(b))
		}
		if len(rest)-kl > MaxValue {
			return r, protocolf("set with a %d-byte value (at most %d)", len(rest)-kl, MaxValue)
		}
		r.key = string(rest[:kl])
		r.value = rest[kl:]
	case tGet:
		r.id = binary.LittleEndian.Uint64(b)
		r.key = string(b[idLen:])
	case tCancel:
		r.id = binary.LittleEndian.Uint64(b)
	case tAbort:
		r.id = binary.LittleEndian.Uint64(b)
		r.value = b[idLen:]
	case tLose:
		r.id = binary.LittleEndian.Uint64(b)
		rank := binary.LittleEndian.Uint32(b[idLen:])
		if rank >= MaxSize {
			return r, protocolf("loss of rank %d", rank)
		}
		r.rank = int(rank)
		r.value = b[idLen+4:]
	case tBye:
	case tBeat:
		ms := binary.LittleEndian.Uint32(b)
		if ms < uint32(MinHeartbeat/time.Millisecond) || ms > uint32(MaxHeartbeat/time.Millisecond) {
			return r, protocolf("beat with a period of %d ms (allowed %v to %v)", ms, MinHeartbeat, MaxHeartbeat)
		}
		r.period = time.Duration(ms) * time.Millisecond
	default:
		return r, protocolf("unknown request type %#x", uint8(t))
	}
	return r, nil
}

// parseReply decodes the body of a server frame that readFrame accepted.
func parseReply(t frameType, b []byte) (reply, error) {
	r := reply{typ: t}
	switch t {
	case tWelcome:
		r.version = b[0]
	case tRefuse, tGone:
		r.msg = string(b)
	case tPulse:
	case tOK:
		r.id = binary.LittleEndian.Uint64(b)
	case tValue:
		r.id = binary.LittleEndian.Uint64(b)
		r.value = b[idLen:]
	case tEvent:
		kind := EventKind(b[0])
		if kind != Lost && kind != Aborted {
			return r, protocolf("event of kind %d", b[0])
		}
		rank := binary.LittleEndian.Uint32(b[1:])
		if rank >= MaxSize {
			return r, protocolf("event about rank %d", rank)
		}
		r.ev = Event{Kind: kind, Rank: int(rank), Reason: string(b[5:])}
	default:
		return r, protocolf("unknown reply type %#x", uint8(t))
	}
	return r, nil
}

// appendHeader appends a frame header for a body of n bytes.
func appendHeader(dst []byte, t frameType, n int) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	return append(dst, byte(t))
}

// encodeRequest encodes r as one frame in a fresh buffer, so the caller's
// value may be reused as soon as it returns. The caller has checked the
// bounds.
func encodeRequest(r request) []byte {
	var n int
	switch r.typ {
	case tHello:
		n = 5
	case tSet:
		n = idLen + 2 + len(r.key) + len(r.value)
	case tGet:
		n = idLen + len(r.key)
	case tCancel:
		n = idLen
	case tAbort:
		n = idLen + len(r.value)
	case tLose:
		n = idLen + 4 + len(r.value)
	case tBye:
		n = 0
	case tBeat:
		n = 4
	default:
		panic(fmt.Sprintf("rendezvous: encoding unknown request type %#x", uint8(r.typ)))
	}
	b := appendHeader(make([]byte, 0, frameHeaderLen+n), r.typ, n)
	switch r.typ {
	case tHello:
		b = append(b, r.version)
		b = binary.LittleEndian.AppendUint32(b, uint32(r.size))
	case tSet:
		b = binary.LittleEndian.AppendUint64(b, r.id)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(r.key)))
		b = append(b, r.key...)
		b = append(b, r.value...)
	case tGet:
		b = binary.LittleEndian.AppendUint64(b, r.id)
		b = append(b, r.key...)
	case tCancel:
		b = binary.LittleEndian.AppendUint64(b, r.id)
	case tAbort:
		b = binary.LittleEndian.AppendUint64(b, r.id)
		b = append(b, r.value...)
	case tLose:
		b = binary.LittleEndian.AppendUint64(b, r.id)
		b = binary.LittleEndian.AppendUint32(b, uint32(r.rank))
		b = append(b, r.value...)
	case tBeat:
		b = binary.LittleEndian.AppendUint32(b, uint32(r.period/time.Millisecond))
	}
	return b
}

// Server frames. Those carrying a value return the header separately, so
// the writer can send a stored value with writev instead of copying it.

func welcomeFrame() []byte {
	return append(appendHeader(nil, tWelcome, 1), protoVersion)
}

func textFrame(t frameType, msg string) []byte {
	msg = clip(msg)
	return append(appendHeader(make([]byte, 0, frameHeaderLen+len(msg)), t, len(msg)), msg...)
}

func pulseFrame() []byte { return appendHeader(nil, tPulse, 0) }

func okFrame(id uint64) []byte {
	return binary.LittleEndian.AppendUint64(appendHeader(make([]byte, 0, frameHeaderLen+idLen), tOK, idLen), id)
}

func valueHeader(id uint64, n int) []byte {
	return binary.LittleEndian.AppendUint64(appendHeader(make([]byte, 0, frameHeaderLen+idLen), tValue, idLen+n), id)
}

func eventFrame(ev Event) []byte {
	reason := clip(ev.Reason)
	b := appendHeader(make([]byte, 0, frameHeaderLen+5+len(reason)), tEvent, 5+len(reason))
	b = append(b, byte(ev.Kind))
	b = binary.LittleEndian.AppendUint32(b, uint32(ev.Rank))
	return append(b, reason...)
}

// clip cuts s to MaxReason bytes without splitting a UTF-8 sequence.
func clip(s string) string {
	if len(s) <= MaxReason {
		return s
	}
	i := MaxReason
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}
