package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/stretchr/testify/require"
)

// validHeaders are headers that Validate must accept: one of each shape of
// frame gocoll sends, and the extremes of every field.
var validHeaders = []struct {
	name string
	h    Header
}{
	{"send", Header{Kind: KindSend, DType: kernel.Uint8, Comm: 1, Tag: 7, Count: 5, Length: 5, Root: -1}},
	{"empty send", Header{Kind: KindSend, DType: kernel.Uint8, Root: -1}},
	{"send with a head", Header{Kind: KindSend, DType: kernel.Uint8, Comm: 1, Tag: 7, Count: 1 << 20, Length: 1 << 20, Root: -1, Head: 13}},
	{"send all head", Header{Kind: KindSend, DType: kernel.Uint8, Count: MaxHead, Length: MaxHead, Root: -1, Head: MaxHead}},
	{"allreduce chunk", Header{Kind: KindAllreduce, DType: kernel.Float32, Op: ops.Sum, Comm: 0xabcdef, Seq: 42, Tag: -3,
		Count: 1000, Length: 1000, Offset: 250, Root: -1}},
	{"last chunk", Header{Flags: FlagLast, Kind: KindAllreduce, DType: kernel.Float64, Op: ops.Avg, Seq: 1,
		Count: 1000, Length: 8 * 250, Offset: 750, Root: -1, Algorithm: AlgoRingChunked}},
	{"reduce to root", Header{Kind: KindReduce, DType: kernel.BFloat16, Op: ops.Max, Seq: 2, Count: 9, Length: 18, Root: 3, Algorithm: AlgoTree}},
	{"user op scan", Header{Kind: KindScan, DType: kernel.Int64, Op: ops.User, Seq: 3, Count: 2, Length: 16, Root: -1}},
	{"exscan", Header{Kind: KindExscan, DType: kernel.Uint32, Op: ops.Xor, Seq: 4, Count: 3, Length: 12, Root: -1}},
	{"reduce-scatter", Header{Kind: KindReduceScatter, DType: kernel.Float16, Op: ops.Prod, Seq: 5, Count: 8, Length: 4, Offset: 6, Root: -1}},
	{"bcast", Header{Kind: KindBcast, DType: kernel.Int16, Seq: 6, Count: 4, Length: 8, Root: 0, Algorithm: AlgoChain}},
	{"gather", Header{Kind: KindGather, DType: kernel.Int8, Seq: 7, Count: 12, Length: 3, Offset: 9, Root: 2}},
	{"gatherv", Header{Kind: KindGatherv, DType: kernel.Int32, Seq: 8, Count: 12, Length: 4, Offset: 11, Root: 1}},
	{"scatter", Header{Kind: KindScatter, DType: kernel.Uint16, Seq: 9, Count: 4, Length: 2, Root: 0}},
	{"scatterv", Header{Kind: KindScatterv, DType: kernel.Uint64, Seq: 10, Count: 4, Root: math.MaxInt32}},
	{"allgather", Header{Kind: KindAllgather, DType: kernel.Float64, Seq: 11, Count: 4, Length: 32, Root: -1}},
	{"allgatherv", Header{Kind: KindAllgatherv, DType: kernel.Float64, Seq: 12, Count: 4, Offset: 4, Root: -1}},
	{"alltoall", Header{Kind: KindAlltoall, DType: kernel.Int32, Seq: 13, Count: 4, Length: 8, Offset: 2, Root: -1}},
	{"barrier", Header{Kind: KindBarrier, DType: kernel.Uint8, Seq: 14, Root: -1, Algorithm: AlgoDissemination}},
	{"bcast without receipts", Header{Flags: FlagNoReceipts, Kind: KindBcast, DType: kernel.Int16, Seq: 6, Count: 4, Length: 8, Root: 0, Algorithm: AlgoTree}},
	{"probe", Header{Flags: FlagProbe, Kind: KindBarrier, DType: kernel.Uint8, Seq: 14, Tag: -5, Root: -1, Algorithm: AlgoDissemination}},
	{"goodbye", Header{Flags: FlagGoodbye, Kind: KindControl, DType: kernel.Uint8, Root: -1}},
	{"abort", Header{Flags: FlagAbort, Kind: KindControl, DType: kernel.Uint8, Count: 4, Length: 4, Root: -1}},
	{"split", Header{Kind: KindSplit, DType: kernel.Int64, Seq: 3, Tag: math.MinInt64, Count: 8, Length: 64, Root: 0}},
	{"extremes", Header{Kind: KindAllgather, DType: kernel.Uint8, Comm: math.MaxUint64, Seq: math.MaxUint64, Tag: math.MaxInt64,
		Count: math.MaxInt64, Length: MaxPayload, Offset: math.MaxInt64 - MaxPayload, Root: -1, Algorithm: numAlgorithms - 1}},
	{"largest count", Header{Kind: KindBcast, DType: kernel.Float64, Seq: 1, Count: math.MaxInt64 / 8, Offset: math.MaxInt64 / 8, Root: 5}},

	// Compressed payloads: two bytes per element for a lossy codec (on
	// float32 and float64 only), and fewer bytes than the elements left
	// after Offset take raw for a lossless one.
	{"bf16 chunk", Header{Kind: KindAllreduce, DType: kernel.Float32, Codec: codec.BF16, Op: ops.Sum, Seq: 1,
		Count: 100, Length: 2 * 90, Offset: 10, Root: -1, Algorithm: AlgoRing}},
	{"fp16 float64", Header{Kind: KindBcast, DType: kernel.Float64, Codec: codec.FP16, Seq: 2, Count: 4, Length: 2, Offset: 3, Root: 0}},
	{"empty lossy payload", Header{Kind: KindSend, DType: kernel.Float32, Codec: codec.BF16, Count: 4, Offset: 4, Root: -1}},
	{"largest lossy payload", Header{Kind: KindAllgather, DType: kernel.Float64, Codec: codec.FP16, Seq: 3,
		Count: MaxPayload / 2, Length: MaxPayload, Root: -1}},
	{"zstd one byte short of raw", Header{Kind: KindReduce, DType: kernel.Float32, Codec: codec.Zstd, Op: ops.Max, Seq: 4,
		Count: 100, Length: 4*90 - 1, Offset: 10, Root: 0}},
	{"s2 int8", Header{Kind: KindSend, DType: kernel.Int8, Codec: codec.S2, Count: 1 << 20, Length: 60, Root: -1}},
	{"s2 bf16 elements", Header{Kind: KindGather, DType: kernel.BFloat16, Codec: codec.S2, Seq: 5, Count: 9, Length: 17, Root: 1}},
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, tc := range validHeaders {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.h.Validate())
			var b [HeaderSize]byte
			tc.h.MarshalTo(&b)
			var got Header
			require.NoError(t, got.Unmarshal(&b))
			require.Equal(t, tc.h, got)

			var again [HeaderSize]byte
			got.MarshalTo(&again)
			require.Equal(t, b, again)
		})
	}
}

// TestHeaderLayout pins the byte offsets documented on Header, so that a
// change of layout cannot pass unnoticed (it needs a new HeaderVersion).
func TestHeaderLayout(t *testing.T) {
	h := Header{Flags: FlagLast, Kind: KindReduce, DType: kernel.Float32, Codec: codec.None, Op: ops.Min,
		Comm: 0x0807060504030201, Seq: 0x1817161514131211, Tag: -2, Count: 0x100, Length: 0x40,
		Root: 0x01020304, Algorithm: AlgoTree, Offset: 0xf0}
	require.NoError(t, h.Validate())
	// Head belongs to Send frames; its bytes are checked on one below.
	send := Header{Kind: KindSend, DType: kernel.Uint8, Count: 1 << 24, Length: 1 << 24, Root: -1, Head: 0x0a0b0c}
	require.NoError(t, send.Validate())
	var want [HeaderSize]byte
	copy(want[0:], "GC")
	want[2] = HeaderVersion
	want[3], want[4], want[5], want[6], want[7] = byte(FlagLast), byte(KindReduce), byte(kernel.Float32), 0, byte(ops.Min)
	copy(want[8:], []byte{1, 2, 3, 4, 5, 6, 7, 8})
	copy(want[16:], []byte{0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18})
	copy(want[24:], []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	want[32+1] = 0x01
	want[40] = 0x40
	copy(want[48:], []byte{4, 3, 2, 1})
	want[52] = byte(AlgoTree)
	want[56] = 0xf0

	var got [HeaderSize]byte
	for i := range got {
		got[i] = 0xaa // MarshalTo must write every byte, reserved ones too
	}
	h.MarshalTo(&got)
	require.Equal(t, want, got)
	send.MarshalTo(&got)
	require.Equal(t, []byte{0x0c, 0x0b, 0x0a}, got[53:56])
}

// validHeader is an allreduce chunk that each validation case breaks in
// one way.
func validHeader() Header {
	return Header{Kind: KindAllreduce, DType: kernel.Float32, Op: ops.Sum, Comm: 9, Seq: 4, Tag: -8,
		Count: 100, Length: 40, Offset: 10, Root: -1, Algorithm: AlgoRing}
}

func TestHeaderValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(h *Header)
		want   string // in the error message
	}{
		{"unknown flag", func(h *Header) { h.Flags = 1 << 7 }, "unknown flags 0x80"},
		{"unknown kind", func(h *Header) { h.Kind = numKinds }, "unknown kind 17"},
		{"zero dtype", func(h *Header) { h.DType = 0 }, "unknown element type 0"},
		{"unknown dtype", func(h *Header) { h.DType = limit(kernel.DType.Valid) }, "unknown element type 13"},
		{"unknown codec", func(h *Header) { h.Codec = limit(kernel.KnownCodec) }, fmt.Sprint("unknown codec ", int(limit(kernel.KnownCodec)))},
		{"codec 255", func(h *Header) { h.Codec = 255 }, "unknown codec 255"},
		{"unknown op", func(h *Header) { h.Op = limit(ops.ID.Valid) }, "unknown op 10"},
		{"unknown algorithm", func(h *Header) { h.Algorithm = numAlgorithms }, fmt.Sprint("unknown algorithm ", int(numAlgorithms))},
		{"collective without seq", func(h *Header) { h.Seq = 0 }, "Allreduce frame without a sequence number"},
		{"split without seq", func(h *Header) { h.Kind, h.Op, h.Root, h.Algorithm, h.Seq = KindSplit, ops.None, 0, AlgoAuto, 0 },
			"Split frame without a sequence number"},
		{"seq on send", func(h *Header) { h.Kind, h.Op, h.Algorithm = KindSend, ops.None, AlgoAuto }, "sequence number 4 on Send frame"},
		{"probe on control", func(h *Header) {
			*h = Header{Flags: FlagProbe, Kind: KindControl, DType: kernel.Uint8, Root: -1}
		}, "probe flag on control frame"},
		{"probe with payload", func(h *Header) { h.Flags = FlagProbe }, "probe with 40 payload bytes"},
		{"no receipts on send", func(h *Header) {
			*h = Header{Flags: FlagNoReceipts, Kind: KindSend, DType: kernel.Uint8, Root: -1}
		}, "no-receipts flag on Send frame"},
		{"no receipts on split", func(h *Header) {
			h.Kind, h.Op, h.Root, h.Algorithm, h.Flags = KindSplit, ops.None, 0, AlgoAuto, FlagNoReceipts
		},
			"no-receipts flag on Split frame"},
		{"algorithm on split", func(h *Header) { h.Kind, h.Op, h.Root = KindSplit, ops.None, 0 }, "algorithm ring on Split frame"},
		{"algorithm on send", func(h *Header) { *h = Header{Kind: KindSend, DType: kernel.Uint8, Root: -1, Algorithm: AlgoTree} },
			"algorithm tree on Send frame"},
		{"payload too long", func(h *Header) { h.Length = MaxPayload + 4; h.Count = math.MaxInt32 << 10 }, "exceeds"},
		{"goodbye with payload", func(h *Header) {
			*h = Header{Flags: FlagGoodbye, Kind: KindControl, DType: kernel.Uint8, Count: 1, Length: 1}
		},
			"goodbye frame with 1 payload bytes"},
		{"root below -1", func(h *Header) { h.Root = -2 }, "root -2"},
		{"head on a collective", func(h *Header) { h.Head = 4 }, "head of 4 bytes on Allreduce frame"},
		{"head beyond payload", func(h *Header) {
			*h = Header{Kind: KindSend, DType: kernel.Uint8, Count: 40, Length: 40, Root: -1, Head: 41}
		}, "head of 41 bytes in a payload of 40"},
		{"head beyond MaxHead", func(h *Header) {
			*h = Header{Kind: KindSend, DType: kernel.Uint8, Count: 1 << 30, Length: 1 << 30, Root: -1, Head: MaxHead + 1}
		}, "head of 16777216 bytes in a payload of 1073741824"},
		{"goodbye on a collective", func(h *Header) { h.Flags, h.Length = FlagGoodbye, 0 }, "abort or hello flag on Allreduce frame"},
		{"abort on send", func(h *Header) { h.Kind, h.Op, h.Flags, h.Seq = KindSend, ops.None, FlagAbort, 0 }, "abort or hello flag on Send frame"},
		{"goodbye and abort", func(h *Header) { *h = Header{Flags: FlagGoodbye | FlagAbort, Kind: KindControl, DType: kernel.Uint8} },
			"goodbye and abort flags together"},
		{"hello on a collective", func(h *Header) { h.Flags = FlagHello }, "abort or hello flag on Allreduce frame"},
		{"hello and goodbye", func(h *Header) { *h = Hello(true); h.Flags |= FlagGoodbye }, "hello flag with a goodbye or abort flag"},
		{"hello with payload", func(h *Header) { *h = Hello(true); h.Length, h.Count = 1, 1 }, "hello frame with 1 payload bytes"},
		{"hello with a count above 1", func(h *Header) { *h = Hello(true); h.Count = 2 }, "hello frame with 0 payload bytes and count 2"},
		{"reduction without op", func(h *Header) { h.Op = ops.None }, "Allreduce frame without an op"},
		{"reduce without op", func(h *Header) { h.Kind, h.Op, h.Root = KindReduce, ops.None, 0 }, "Reduce frame without an op"},
		{"op on bcast", func(h *Header) { h.Kind, h.Root = KindBcast, 0 }, "op sum on Bcast frame"},
		{"op on send", func(h *Header) { h.Kind, h.Seq = KindSend, 0 }, "op sum on Send frame"},
		{"bcast without root", func(h *Header) { h.Kind, h.Op = KindBcast, ops.None }, "Bcast frame without a root"},
		{"reduce without root", func(h *Header) { h.Kind = KindReduce }, "Reduce frame without a root"},
		{"root on allreduce", func(h *Header) { h.Root = 0 }, "root 0 on Allreduce frame, which has none"},
		{"root on barrier", func(h *Header) { h.Kind, h.Op, h.Root = KindBarrier, ops.None, 3 }, "root 3 on Barrier frame, which has none"},
		{"count overflows", func(h *Header) { h.Count = math.MaxInt64/4 + 1 }, "count of 2305843009213693952 float32 elements overflows"},
		{"offset beyond count", func(h *Header) { h.Offset, h.Length = 101, 0 }, "offset 101 beyond count 100"},
		{"partial element", func(h *Header) { h.Length = 41 }, "payload of 41 bytes is not a whole number of float32 elements"},
		{"payload overruns count", func(h *Header) { h.Offset = 95 }, "10 elements at offset 95 overrun count 100"},
		{"payload overruns count from zero", func(h *Header) { h.Offset, h.Length, h.Count = 0, 8, 1 }, "2 elements at offset 0 overrun count 1"},
		{"offset plus payload wraps", func(h *Header) { h.DType, h.Count, h.Offset, h.Length = kernel.Uint8, math.MaxInt64, math.MaxInt64, 2 },
			"2 elements at offset 9223372036854775807 overrun count 9223372036854775807"},

		// Compressed frames. validHeader carries 10 float32 elements
		// (40 bytes) at offset 10 of 100.
		{"lossy on int32", func(h *Header) { h.DType, h.Codec = kernel.Int32, codec.BF16 }, "bf16 payload of int32 elements"},
		{"lossy on bf16 elements", func(h *Header) { h.DType, h.Codec = kernel.BFloat16, codec.FP16 }, "fp16 payload of bf16 elements"},
		{"lossy on uint8", func(h *Header) { h.DType, h.Codec = kernel.Uint8, codec.FP16 }, "fp16 payload of uint8 elements"},
		{"odd lossy length", func(h *Header) { h.Codec, h.Length = codec.FP16, 41 }, "fp16 payload of 41 bytes is not a whole number of elements"},
		{"lossy length overruns count", func(h *Header) { h.Codec, h.Offset, h.Length = codec.BF16, 95, 12 },
			"6 bf16 elements at offset 95 overrun count 100"},
		{"lossy payload at count", func(h *Header) { h.DType, h.Codec, h.Offset, h.Length = kernel.Float64, codec.FP16, 100, 2 },
			"1 fp16 elements at offset 100 overrun count 100"},
		{"lossy length too long", func(h *Header) {
			h.Codec, h.Count, h.Offset, h.Length = codec.BF16, math.MaxInt64/8, 0, MaxPayload+2
		},
			"exceeds"},
		{"lossless payload as long as raw", func(h *Header) { h.Codec, h.Offset = codec.Zstd, 90 },
			"zstd payload of 40 bytes is not smaller than the 40 raw bytes of the 10 elements after offset 90"},
		{"lossless payload longer than raw", func(h *Header) { h.DType, h.Codec, h.Offset = kernel.Float64, codec.S2, 96 },
			"s2 payload of 40 bytes is not smaller than the 32 raw bytes of the 4 elements after offset 96"},
		{"lossless payload at count", func(h *Header) { h.Codec, h.Offset, h.Length = codec.S2, 100, 1 },
			"s2 payload of 1 bytes is not smaller than the 0 raw bytes of the 0 elements after offset 100"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := validHeader()
			tc.modify(&h)
			err := h.Validate()
			require.ErrorIs(t, err, ErrBadHeader)
			require.ErrorContains(t, err, tc.want)

			if h.Head > MaxHead {
				return // three bytes cannot say it
			}
			// Unmarshal validates too: the encoding of a bad header is bad.
			var b [HeaderSize]byte
			h.MarshalTo(&b)
			var got Header
			err = got.Unmarshal(&b)
			require.ErrorIs(t, err, ErrBadHeader)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestHeaderUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(b *[HeaderSize]byte)
		want   string
	}{
		{"zeros", func(b *[HeaderSize]byte) { *b = [HeaderSize]byte{} }, "magic 0x0000, want 0x4347"},
		{"bad magic", func(b *[HeaderSize]byte) { b[1] = 'X' }, "magic 0x5847"},
		{"byte-swapped magic", func(b *[HeaderSize]byte) { b[0], b[1] = b[1], b[0] }, "magic 0x4743"},
		{"old version", func(b *[HeaderSize]byte) { b[2] = 2 }, "version 2, want 3"},
		{"new version", func(b *[HeaderSize]byte) { b[2] = HeaderVersion + 1 }, "version 4, want 3"},
		{"head on a collective", func(b *[HeaderSize]byte) { binary.LittleEndian.PutUint16(b[53:], 0x100) }, "head of 256 bytes on Allreduce frame"},
		{"head's high byte", func(b *[HeaderSize]byte) { b[55] = 0x80 }, "head of 8388608 bytes on Allreduce frame"},
		{"kind out of range", func(b *[HeaderSize]byte) { b[4] = 0xff }, "unknown kind 255"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := validHeader()
			var b [HeaderSize]byte
			h.MarshalTo(&b)
			tc.modify(&b)
			var got Header
			err := got.Unmarshal(&b)
			require.ErrorIs(t, err, ErrBadHeader)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestHeaderString(t *testing.T) {
	h := validHeader()
	require.Equal(t, "Allreduce comm=0x9 seq=4 tag=-8 100×float32 root=-1 len=40 off=10 op=sum algo=ring flags=0x0", h.String())
	require.Equal(t, "Kind(200)", Kind(200).String())
	require.Equal(t, "op(99)", ops.ID(99).String())
}

// TestHello: both answers of a hello frame are valid headers that survive
// the wire and say what they were made to say.
func TestHello(t *testing.T) {
	for _, accepted := range []bool{true, false} {
		t.Run(fmt.Sprint("accepted=", accepted), func(t *testing.T) {
			h := Hello(accepted)
			require.NoError(t, h.Validate())
			var b [HeaderSize]byte
			h.MarshalTo(&b)
			var got Header
			require.NoError(t, got.Unmarshal(&b))
			require.Equal(t, h, got)
			require.Equal(t, accepted, got.HelloAccepted())
		})
	}
}
