package wire

import (
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
	fuzz "github.com/google/gofuzz"
	"github.com/stretchr/testify/require"
)

// checkHeaderBytes is the property both fuzzers check on 64 bytes from a
// peer: Unmarshal never panics; an error wraps ErrBadHeader; a header it
// accepts passes Validate and re-encodes to exactly the same bytes (every
// byte is either checked or decoded, so nothing is silently dropped), which
// decode to the same Header.
func checkHeaderBytes(t *testing.T, b *[HeaderSize]byte) {
	t.Helper()
	var h Header
	err := h.Unmarshal(b)
	if err != nil {
		require.ErrorIs(t, err, ErrBadHeader)
		return
	}
	require.NoError(t, h.Validate())
	var again [HeaderSize]byte
	h.MarshalTo(&again)
	require.Equal(t, *b, again, "accepted header %v does not re-encode to its bytes", &h)
	var h2 Header
	require.NoError(t, h2.Unmarshal(&again))
	require.Equal(t, h, h2)
}

// checkHeader is the property on a Header built in memory: Validate and
// the Unmarshal of its encoding agree, and an accepted header survives the
// round trip.
func checkHeader(t *testing.T, h *Header) {
	t.Helper()
	var b [HeaderSize]byte
	h.MarshalTo(&b)
	var got Header
	err := got.Unmarshal(&b)
	if verr := h.Validate(); verr != nil {
		require.ErrorIs(t, verr, ErrBadHeader)
		require.EqualError(t, err, verr.Error(), "Unmarshal and Validate disagree on %v", h)
		return
	}
	require.NoError(t, err, "Validate accepts %v, Unmarshal of its encoding does not", h)
	require.Equal(t, *h, got)
	checkHeaderBytes(t, &b)
}

func FuzzHeader(f *testing.F) {
	for _, tc := range validHeaders {
		var b [HeaderSize]byte
		tc.h.MarshalTo(&b)
		f.Add(b[:])
	}
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Any input is a header: short ones are zero-padded, long ones cut.
		var b [HeaderSize]byte
		copy(b[:], data)
		checkHeaderBytes(t, &b)
	})
}

// TestHeaderGofuzz fills Headers and raw 64-byte arrays at random. Fields
// are drawn mostly from near their valid ranges, since uniformly random
// values would almost never pass Validate and the interesting cases are at
// the edges.
func TestHeaderGofuzz(t *testing.T) {
	f := fuzz.NewWithSeed(1).NilChance(0).Funcs(func(h *Header, c fuzz.Continue) {
		c.FuzzNoCustom(h)
		if c.RandBool() {
			return // every field uniformly random
		}
		// Each field is drawn so that it usually agrees with the others
		// (then Validate decides on the field under test) and sometimes
		// from just past its range.
		often := func() bool { return c.Intn(5) > 0 }
		h.Kind = Kind(c.Intn(int(numKinds) + 1))
		h.DType = kernel.DType(c.Intn(int(limit(kernel.DType.Valid)) + 1))
		// Every codec and one past the last; CodecNone half the time.
		h.Codec = codec.ID(c.Intn(int(limit(kernel.KnownCodec)) + 1))
		if c.RandBool() {
			h.Codec = codec.None
		}
		h.Op = ops.ID(c.Intn(int(limit(ops.ID.Valid)) + 1))
		if often() {
			h.Op = ops.None
			if kindReduces(h.Kind) {
				h.Op = ops.ID(1 + c.Intn(int(limit(ops.ID.Valid))-1))
			}
		}
		h.Flags = Flags(c.Intn(int(knownFlags) + 2))
		if often() {
			h.Flags &= FlagLast | FlagProbe | FlagNoReceipts
			if h.Kind == KindControl {
				h.Flags = []Flags{0, FlagGoodbye, FlagAbort, FlagLast}[c.Intn(4)]
			}
		}
		h.Root = int32(c.Intn(5) - 2)
		h.Algorithm = Algorithm(c.Intn(int(numAlgorithms) + 1))
		h.Seq = uint64(c.Intn(3))
		if often() {
			switch h.Kind {
			case KindReduce, KindBcast, KindGather, KindGatherv, KindScatter, KindScatterv:
				h.Root = int32(c.Intn(4))
			case KindSend, KindControl, KindSplit:
				h.Root = int32(c.Intn(5) - 1)
			default:
				h.Root = -1
			}
			switch h.Kind {
			case KindSend, KindControl:
				h.Seq, h.Algorithm = 0, AlgoAuto
			case KindSplit:
				h.Seq, h.Algorithm = 1+c.Uint64()%1000, AlgoAuto
			default:
				h.Seq = 1 + c.Uint64()%1000
				if h.Algorithm == numAlgorithms {
					h.Algorithm = AlgoAuto
				}
			}
		}
		size := max(uint64(h.DType.Size()), 1)
		h.Count = uint64(c.Intn(64))
		h.Offset = uint64(c.Intn(int(h.Count) + 2))
		h.Length = uint64(c.Intn(int(h.Count-min(h.Offset, h.Count))+2)) * size
		switch {
		case h.Codec.Lossy():
			h.Length = h.Length / size * 2 // two bytes an element
		case h.Codec != codec.None && h.Length > 0:
			h.Length -= uint64(c.Intn(2)) // often smaller than raw
		}
		if h.Flags&(FlagGoodbye|FlagProbe) != 0 && often() {
			h.Length = 0
		}
		if c.Intn(8) == 0 {
			h.Length++ // not a whole number of elements
		}
		if c.Intn(8) == 0 {
			h.Count = c.Uint64() // near or past the overflow bound
			h.Offset = h.Count - uint64(c.Intn(3))
		}
		h.Head = 0
		if c.Intn(8) == 0 {
			h.Head = uint32(c.Intn(int(min(h.Length, 1<<20)) + 2)) // at most Length, or just past it
		}
	})
	valid, compressed := 0, 0
	for range 20000 {
		var h Header
		f.Fuzz(&h)
		checkHeader(t, &h)
		if h.Validate() == nil {
			valid++
			if h.Codec != codec.None {
				compressed++
			}
		}
	}
	t.Logf("%d of 20000 generated headers are valid, %d of them compressed", valid, compressed)
	// The generator is only useful if it reaches both outcomes often.
	require.Greater(t, valid, 1000, "too few valid headers generated")
	require.Greater(t, compressed, 200, "too few valid compressed headers generated")

	for i := range 20000 {
		var b [HeaderSize]byte
		f.Fuzz(&b)
		if i%2 == 0 {
			// Get past the magic and version checks, with no head, half the
			// time, so that the field checks see random input too.
			var ok [HeaderSize]byte
			(&Header{}).MarshalTo(&ok)
			copy(b[:3], ok[:3])
			clear(b[53:56])
		}
		checkHeaderBytes(t, &b)
	}
}

// limit is one past the largest value of a codec enumeration that valid
// accepts: the first unknown one.
func limit[T ~uint8](valid func(T) bool) T {
	var n T
	for v := range T(255) {
		if valid(v) {
			n = v + 1
		}
	}
	return n
}
