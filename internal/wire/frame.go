package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
)

// HeaderSize is the size of an encoded Header in bytes.
const HeaderSize = 64

// HeaderVersion is the version of the frame layout this package writes and
// accepts. Version 2 put the algorithm in what was a reserved byte, and
// version 3 the length of a Send frame's head (Header.Head) in the three
// that were left.
const HeaderVersion = 3

// MaxHead bounds Header.Head, which travels in three bytes.
const MaxHead = 1<<24 - 1

// MaxPayload bounds Header.Length. It is far above any message gocoll
// sends (collectives chunk large buffers) and keeps a corrupt length from
// turning into a huge allocation.
const MaxPayload = 1 << 40

// headerMagic opens every frame: "GC" little-endian.
const headerMagic = 0x4347

// ErrBadHeader is wrapped by every error that Unmarshal and Validate
// return. A peer that sends a bad header is broken or hostile; the link it
// came on must be closed.
var ErrBadHeader = errors.New("invalid frame header")

// Kind says which operation a frame belongs to, so that a receiver can tell
// a peer that called a different collective from one that is merely late.
type Kind uint8

// The kinds of frame. KindSend is user point-to-point traffic; KindControl
// is the communicator's own (goodbye, abort); KindSplit is Comm.Split,
// which takes part in the collective order like any collective.
const (
	KindSend Kind = iota
	KindControl
	KindAllreduce
	KindReduce
	KindBcast
	KindGather
	KindGatherv
	KindScatter
	KindScatterv
	KindAllgather
	KindAllgatherv
	KindReduceScatter
	KindScan
	KindExscan
	KindAlltoall
	KindBarrier
	KindSplit
	numKinds
)

var kindNames = [numKinds]string{
	KindSend:          "Send",
	KindControl:       "control",
	KindAllreduce:     "Allreduce",
	KindReduce:        "Reduce",
	KindBcast:         "Bcast",
	KindGather:        "Gather",
	KindGatherv:       "Gatherv",
	KindScatter:       "Scatter",
	KindScatterv:      "Scatterv",
	KindAllgather:     "Allgather",
	KindAllgatherv:    "Allgatherv",
	KindReduceScatter: "ReduceScatter",
	KindScan:          "Scan",
	KindExscan:        "Exscan",
	KindAlltoall:      "Alltoall",
	KindBarrier:       "Barrier",
	KindSplit:         "Split",
}

// NumKinds is one more than the largest Kind: the length of an array
// indexed by Kind.
const NumKinds = int(numKinds)

func (k Kind) String() string {
	if k >= numKinds {
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
	return kindNames[k]
}

// Flags modify a frame.
type Flags uint8

const (
	// FlagGoodbye announces that the sender closes its communicator cleanly:
	// nothing follows on this link. It carries no payload.
	FlagGoodbye Flags = 1 << iota
	// FlagAbort announces that the sender aborted; the payload is the
	// reason as UTF-8 text.
	FlagAbort
	// FlagLast marks the last chunk of a chunked message.
	FlagLast
	// FlagProbe marks a frame that asks the receiver to compare the call
	// it carries with its own call of that operation, and nothing else:
	// it has no payload and matches no receive. A rank whose receive of a
	// collective waits long sends one to the rank it waits for, so that
	// ranks that disagree are told even when neither sends the other
	// anything.
	FlagProbe
	// FlagNoReceipts marks the frames of a collective call made without
	// receipts (collective.WithReceipts): a rank that only sends in it
	// returns without waiting to hear from the rank it sent to. Ranks
	// must agree on it as on the codec; a receiver compares it with its
	// own call's.
	FlagNoReceipts
	// FlagHello marks the first frame on a link, the accepting rank's
	// answer to the dialing one (see Hello): whether the two ranks use
	// this link, both ways, or the one the accepting rank is dialing. It
	// is a control frame without payload.
	FlagHello

	knownFlags = FlagGoodbye | FlagAbort | FlagLast | FlagProbe | FlagNoReceipts | FlagHello
)

// Hello is the frame a rank that accepted a link sends first on it.
// accepted says that the link is the pair's: both ranks send on it from
// now on. Otherwise nothing else follows on it, and the dialing rank
// waits for the link the accepting rank dials it on instead (two ranks
// that dial each other at once keep the lower rank's link).
func Hello(accepted bool) Header {
	h := Header{Kind: KindControl, Flags: FlagHello, DType: kernel.Uint8, Root: -1}
	if accepted {
		h.Count = 1
	}
	return h
}

// HelloAccepted reports what a Hello frame h says: whether its link was
// accepted.
func (h *Header) HelloAccepted() bool { return h.Count == 1 }

// Header is the fixed-size header in front of every message. All fields
// travel little-endian at fixed offsets:
//
//	 0 magic "GC"    2 version   3 flags   4 kind   5 dtype   6 codec   7 op
//	 8 comm id      16 seq      24 tag    32 count 40 length
//	48 root (int32) 52 algorithm 53 head (three bytes) 56 offset
//
// Validate holds the fields to these rules, so a receiver can trust them
// once a header has passed:
//
//   - FlagGoodbye, FlagAbort and FlagHello only on KindControl frames, at
//     most one of them; a goodbye has no payload, nor has a hello, whose
//     Count is 0 or 1.
//   - Seq is nonzero exactly on the frames of collectives and Split, and
//     only those frames may be probes (FlagProbe), which have no payload.
//   - Algorithm is a known one, and AlgoAuto on Send, control and Split
//     frames.
//   - Op is set (not OpNone) exactly on the reducing kinds: Allreduce,
//     Reduce, ReduceScatter, Scan and Exscan.
//   - Root is a rank (>= 0) on the rooted kinds (Reduce, Bcast, Gather,
//     Gatherv, Scatter, Scatterv), -1 on the other collectives, and either
//     on Send and control frames.
//   - Count elements of DType fit in an int64 number of bytes, Offset <=
//     Count, and the payload's elements fit between Offset and Count: with
//     CodecNone Length/size of them, with a lossy codec (float32 and
//     float64 only) Length/2, and a lossless codec's payload is smaller
//     than the raw bytes of the Count-Offset elements.
//   - Head is 0 but on Send frames, and at most Length.
type Header struct {
	Flags  Flags
	Kind   Kind
	DType  kernel.DType
	Codec  codec.ID
	Op     ops.ID
	Comm   uint64 // communicator id
	Seq    uint64 // collective sequence number on Comm; 0 for point-to-point
	Tag    int64  // matching tag
	Count  uint64 // elements in the whole operation's buffer, as the sender sees it; of the part the frame is for where Kind.PartCounted
	Length uint64 // payload bytes that follow the header
	Root   int32  // root rank of rooted collectives, -1 where there is none
	// Algorithm is the algorithm of the collective call the frame belongs
	// to; AlgoAuto outside collectives.
	Algorithm Algorithm
	Offset    uint64 // element offset of this payload within the operation's buffer
	// Head, on a Send frame, says that the payload is an encoded value
	// whose first Head bytes are its head, and the rest a raw block of
	// its own memory (a split object of collective.SendObject), so that
	// a receiver may decode the head before it reads the block straight
	// into the value. 0 says nothing: the payload is one piece. At most
	// MaxHead.
	Head uint32
}

// MarshalTo encodes h into b.
func (h *Header) MarshalTo(b *[HeaderSize]byte) {
	binary.LittleEndian.PutUint16(b[0:], headerMagic)
	b[2] = HeaderVersion
	b[3] = byte(h.Flags)
	b[4] = byte(h.Kind)
	b[5] = byte(h.DType)
	b[6] = byte(h.Codec)
	b[7] = byte(h.Op)
	binary.LittleEndian.PutUint64(b[8:], h.Comm)
	binary.LittleEndian.PutUint64(b[16:], h.Seq)
	binary.LittleEndian.PutUint64(b[24:], uint64(h.Tag))
	binary.LittleEndian.PutUint64(b[32:], h.Count)
	binary.LittleEndian.PutUint64(b[40:], h.Length)
	binary.LittleEndian.PutUint32(b[48:], uint32(h.Root))
	b[52] = byte(h.Algorithm)
	b[53], b[54], b[55] = byte(h.Head), byte(h.Head>>8), byte(h.Head>>16)
	binary.LittleEndian.PutUint64(b[56:], h.Offset)
}

// Unmarshal decodes b into h and validates it. On error h is left in an
// unspecified state and the error wraps ErrBadHeader.
func (h *Header) Unmarshal(b *[HeaderSize]byte) error {
	if m := binary.LittleEndian.Uint16(b[0:]); m != headerMagic {
		return fmt.Errorf("%w: magic %#04x, want %#04x", ErrBadHeader, m, headerMagic)
	}
	if b[2] != HeaderVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrBadHeader, b[2], HeaderVersion)
	}
	h.Flags = Flags(b[3])
	h.Kind = Kind(b[4])
	h.DType = kernel.DType(b[5])
	h.Codec = codec.ID(b[6])
	h.Op = ops.ID(b[7])
	h.Comm = binary.LittleEndian.Uint64(b[8:])
	h.Seq = binary.LittleEndian.Uint64(b[16:])
	h.Tag = int64(binary.LittleEndian.Uint64(b[24:]))
	h.Count = binary.LittleEndian.Uint64(b[32:])
	h.Length = binary.LittleEndian.Uint64(b[40:])
	h.Root = int32(binary.LittleEndian.Uint32(b[48:]))
	h.Algorithm = Algorithm(b[52])
	h.Offset = binary.LittleEndian.Uint64(b[56:])
	h.Head = uint32(b[53]) | uint32(b[54])<<8 | uint32(b[55])<<16
	return h.Validate()
}

// Validate checks that every field of h is in range and that the fields
// agree with each other. It never looks at a payload.
func (h *Header) Validate() error {
	switch {
	case h.Flags&^knownFlags != 0:
		return fmt.Errorf("%w: unknown flags %#x", ErrBadHeader, uint8(h.Flags&^knownFlags))
	case h.Kind >= numKinds:
		return fmt.Errorf("%w: unknown kind %d", ErrBadHeader, uint8(h.Kind))
	case !h.DType.Valid():
		return fmt.Errorf("%w: unknown element type %d", ErrBadHeader, uint8(h.DType))
	case !kernel.KnownCodec(h.Codec):
		return fmt.Errorf("%w: unknown codec %d", ErrBadHeader, uint8(h.Codec))
	case !h.Op.Valid():
		return fmt.Errorf("%w: unknown op %d", ErrBadHeader, uint8(h.Op))
	case !h.Algorithm.Valid():
		return fmt.Errorf("%w: unknown algorithm %d", ErrBadHeader, uint8(h.Algorithm))
	case h.Length > MaxPayload:
		return fmt.Errorf("%w: payload length %d exceeds %d", ErrBadHeader, h.Length, uint64(MaxPayload))
	case h.Flags&FlagGoodbye != 0 && h.Length != 0:
		return fmt.Errorf("%w: goodbye frame with %d payload bytes", ErrBadHeader, h.Length)
	case h.Root < -1:
		return fmt.Errorf("%w: root %d", ErrBadHeader, h.Root)
	case h.Head != 0 && h.Kind != KindSend:
		return fmt.Errorf("%w: head of %d bytes on %s frame", ErrBadHeader, h.Head, h.Kind)
	case h.Head > MaxHead || uint64(h.Head) > h.Length:
		return fmt.Errorf("%w: head of %d bytes in a payload of %d", ErrBadHeader, h.Head, h.Length)
	}
	if err := h.validateKind(); err != nil {
		return err
	}
	size := uint64(h.DType.Size())
	switch {
	case h.Count > math.MaxInt64/size:
		return fmt.Errorf("%w: count of %d %s elements overflows", ErrBadHeader, h.Count, h.DType)
	case h.Offset > h.Count:
		return fmt.Errorf("%w: offset %d beyond count %d", ErrBadHeader, h.Offset, h.Count)
	case h.Codec != codec.None:
		return h.validateCodec(size)
	case h.Length%size != 0:
		return fmt.Errorf("%w: payload of %d bytes is not a whole number of %s elements", ErrBadHeader, h.Length, h.DType)
	case h.Length/size > h.Count-h.Offset:
		// Offset+Length/size could overflow; the subtraction cannot,
		// since Offset <= Count was checked above.
		return fmt.Errorf("%w: %d elements at offset %d overrun count %d", ErrBadHeader, h.Length/size, h.Offset, h.Count)
	}
	return nil
}

// validateCodec checks the payload length of a compressed frame: a lossy
// codec's payload is two bytes per float32 or float64 element, and a
// lossless one is smaller than the raw elements it stands for (a payload
// that does not shrink goes raw), which must fit between Offset and Count.
func (h *Header) validateCodec(size uint64) error {
	room := h.Count - h.Offset
	if h.Codec.Lossy() {
		switch {
		case h.DType != kernel.Float32 && h.DType != kernel.Float64:
			return fmt.Errorf("%w: %s payload of %s elements", ErrBadHeader, h.Codec, h.DType)
		case h.Length%2 != 0:
			return fmt.Errorf("%w: %s payload of %d bytes is not a whole number of elements", ErrBadHeader, h.Codec, h.Length)
		case h.Length/2 > room:
			return fmt.Errorf("%w: %d %s elements at offset %d overrun count %d", ErrBadHeader, h.Length/2, h.Codec, h.Offset, h.Count)
		}
		return nil
	}
	// room*size cannot overflow: Validate checked Count*size.
	if h.Length > 0 && h.Length >= room*size {
		return fmt.Errorf("%w: %s payload of %d bytes is not smaller than the %d raw bytes of the %d elements after offset %d",
			ErrBadHeader, h.Codec, h.Length, room*size, room, h.Offset)
	}
	return nil
}

// validateKind checks the fields whose meaning depends on Kind: which
// flags, op and root a frame of that kind may carry.
func (h *Header) validateKind() error {
	if h.Flags&(FlagGoodbye|FlagAbort|FlagHello) != 0 {
		switch {
		case h.Kind != KindControl:
			return fmt.Errorf("%w: goodbye, abort or hello flag on %s frame", ErrBadHeader, h.Kind)
		case h.Flags&FlagGoodbye != 0 && h.Flags&FlagAbort != 0:
			return fmt.Errorf("%w: goodbye and abort flags together", ErrBadHeader)
		case h.Flags&FlagHello != 0 && h.Flags&(FlagGoodbye|FlagAbort) != 0:
			return fmt.Errorf("%w: hello flag with a goodbye or abort flag", ErrBadHeader)
		case h.Flags&FlagHello != 0 && (h.Length != 0 || h.Count > 1):
			return fmt.Errorf("%w: hello frame with %d payload bytes and count %d", ErrBadHeader, h.Length, h.Count)
		}
	}
	switch reduces := kindReduces(h.Kind); {
	case reduces && h.Op == ops.None:
		return fmt.Errorf("%w: %s frame without an op", ErrBadHeader, h.Kind)
	case !reduces && h.Op != ops.None:
		return fmt.Errorf("%w: op %s on %s frame", ErrBadHeader, h.Op, h.Kind)
	}
	switch ordered := h.Kind != KindSend && h.Kind != KindControl; {
	case ordered && h.Seq == 0:
		return fmt.Errorf("%w: %s frame without a sequence number", ErrBadHeader, h.Kind)
	case !ordered && h.Seq != 0:
		return fmt.Errorf("%w: sequence number %d on %s frame", ErrBadHeader, h.Seq, h.Kind)
	case !ordered && h.Flags&FlagProbe != 0:
		return fmt.Errorf("%w: probe flag on %s frame", ErrBadHeader, h.Kind)
	case (!ordered || h.Kind == KindSplit) && h.Flags&FlagNoReceipts != 0:
		return fmt.Errorf("%w: no-receipts flag on %s frame", ErrBadHeader, h.Kind)
	case h.Flags&FlagProbe != 0 && h.Length != 0:
		return fmt.Errorf("%w: probe with %d payload bytes", ErrBadHeader, h.Length)
	case (!ordered || h.Kind == KindSplit) && h.Algorithm != AlgoAuto:
		return fmt.Errorf("%w: algorithm %s on %s frame", ErrBadHeader, h.Algorithm, h.Kind)
	}
	switch h.Kind {
	case KindSend, KindControl, KindSplit:
		// Point-to-point and the communicator's own frames use Root as
		// they see fit (split sends its coordinator); Validate has
		// already ruled out roots below -1.
	case KindReduce, KindBcast, KindGather, KindGatherv, KindScatter, KindScatterv:
		if h.Root < 0 {
			return fmt.Errorf("%w: %s frame without a root", ErrBadHeader, h.Kind)
		}
	default:
		if h.Root != -1 {
			return fmt.Errorf("%w: root %d on %s frame, which has none", ErrBadHeader, h.Root, h.Kind)
		}
	}
	return nil
}

// kindReduces reports whether frames of kind k carry reduced data, and so
// must name their op.
func kindReduces(k Kind) bool {
	switch k {
	case KindAllreduce, KindReduce, KindReduceScatter, KindScan, KindExscan:
		return true
	}
	return false
}

func (h *Header) String() string {
	return fmt.Sprintf("%s comm=%#x seq=%d tag=%d %d×%s root=%d len=%d off=%d op=%s algo=%s flags=%#x",
		h.Kind, h.Comm, h.Seq, h.Tag, h.Count, h.DType, h.Root, h.Length, h.Offset, h.Op, h.Algorithm, uint8(h.Flags))
}
