package kernel

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/elemtest"
	fuzz "github.com/google/gofuzz"
	"github.com/stretchr/testify/require"
)

// FuzzDecode feeds arbitrary payloads to Decode, for every codec (and one
// past the last), every element type and element counts up to 4999. Decode
// must not panic or write past dst (decodeGuarded checks guard elements on
// both sides), and must either succeed or return an error wrapping
// codec.ErrCorrupt; codec.ErrInvalid only for a lossy codec with a type it does not
// apply to. A payload it accepts must mean what it says: for codec.None it
// is dst's bytes, and for a lossy codec re-encoding dst gives it back
// (NaNs aside, which come back quiet).
//
// The seed corpus is real encodings of random and compressible data.
//
//	go test -run='^$' -fuzz=FuzzDecode -fuzztime=60s ./codec
func FuzzDecode(f *testing.F) {
	r := elemtest.NewRand(f)
	for _, c := range codec.IDs() {
		for dt := DType(1); dt < numDTypes; dt++ {
			if CheckCodec(c, dt) != nil {
				continue
			}
			for _, n := range []int{0, 1, 7, 100, 1000} {
				raw := make([]byte, n*dt.Size())
				for i := range raw {
					if r.IntN(3) == 0 { // two thirds zeros: compressible
						raw[i] = byte(r.Uint32())
					}
				}
				f.Add(uint8(c), uint8(dt), uint16(n), fuzzEncode(dt, c, raw))
			}
		}
	}
	f.Fuzz(func(t *testing.T, c, dt uint8, n uint16, payload []byte) {
		id := codec.ID(c % 6) // one past S2: unknown
		count := int(n % 5000)
		switch DType(1 + dt%uint8(numDTypes-1)) {
		case Int8:
			checkFuzzDecode[int8](t, id, count, payload)
		case Int16:
			checkFuzzDecode[int16](t, id, count, payload)
		case Int32:
			checkFuzzDecode[int32](t, id, count, payload)
		case Int64:
			checkFuzzDecode[int64](t, id, count, payload)
		case Uint8:
			checkFuzzDecode[uint8](t, id, count, payload)
		case Uint16:
			checkFuzzDecode[uint16](t, id, count, payload)
		case Uint32:
			checkFuzzDecode[uint32](t, id, count, payload)
		case Uint64:
			checkFuzzDecode[uint64](t, id, count, payload)
		case Float32:
			checkFuzzDecode[float32](t, id, count, payload)
		case Float64:
			checkFuzzDecode[float64](t, id, count, payload)
		case BFloat16:
			checkFuzzDecode[codec.BFloat16](t, id, count, payload)
		case Float16:
			checkFuzzDecode[codec.Float16](t, id, count, payload)
		}
	})
}

// fuzzEncode encodes raw, the bytes of elements of dt, with c.
func fuzzEncode(dt DType, c codec.ID, raw []byte) []byte {
	switch dt {
	case Float32:
		return fuzzEncodeAs[float32](c, raw)
	case Float64:
		return fuzzEncodeAs[float64](c, raw)
	}
	return fuzzEncodeAs[uint8](c, raw) // lossless: the bytes are all that count
}

func fuzzEncodeAs[T codec.Elem](c codec.ID, raw []byte) []byte {
	src, err := codec.FromBytes[T](raw)
	if err != nil {
		panic(err)
	}
	payload, _ := Encode(c, make([]byte, EncodeScratchLen(c, DTypeOf[T](), len(src))), src)
	return payload
}

func checkFuzzDecode[T codec.Elem](t *testing.T, c codec.ID, n int, payload []byte) {
	got, err := decodeGuarded[T](t, c, n, payload)
	if err != nil {
		if c.Lossy() && CheckCodec(c, DTypeOf[T]()) != nil {
			require.ErrorIs(t, err, codec.ErrInvalid)
			return
		}
		require.ErrorIs(t, err, codec.ErrCorrupt)
		return
	}
	require.True(t, KnownCodec(c))
	switch {
	case c == codec.None:
		require.True(t, bytes.Equal(payload, codec.Bytes(got)), "codec.None payload is not the decoded bytes")
	case c.Lossy():
		// Decoding is exact and so is encoding a decoded value, except
		// that a signalling NaN comes back quiet.
		again := encoded(t, c, got)
		for i := range got {
			w, v := binary.LittleEndian.Uint16(payload[2*i:]), binary.LittleEndian.Uint16(again[2*i:])
			if w != v && !elemtest.IsNaN(got[i]) {
				t.Fatalf("element %d: payload %#04x decodes to %v, which encodes to %#04x", i, w, got[i], v)
			}
		}
	}
}

// genFloat64 draws the values the lossy codecs find hardest: random bit
// patterns, each elemtest.Format's range boundaries and the values around them,
// tiny values, specials, and ordinary values of every magnitude.
func genFloat64(c fuzz.Continue) float64 {
	sign := float64(1 - 2*c.Intn(2))
	switch c.Intn(8) {
	case 0:
		return math.Float64frombits(c.Uint64())
	case 1:
		edges := []float64{65504, 65519, 65520, 65536, 0x1.fep127, 0x1.ffp127, math.MaxFloat32, 0x1p-14, 0x1p-24, 0x1p-25,
			0x1p-126, 0x1p-133, 0x1p-134, 0x1p-149, 0x1p-150, 1, 1 + 0x1p-8, 1 + 0x1p-11}
		x := edges[c.Intn(len(edges))]
		for range c.Intn(3) {
			x = math.Nextafter(x, math.Inf(c.Intn(2)*2-1))
		}
		return sign * x
	case 2:
		return sign * math.Ldexp(1+c.Float64(), -160+c.Intn(150)) // tiny
	case 3:
		return []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0x7ff0000000000001)}[c.Intn(6)]
	case 4:
		return sign * float64(c.Intn(1<<20)) // integers: ties at every scale
	}
	return sign * math.Ldexp(c.NormFloat64(), c.Intn(80)-40)
}

// TestLossyGofuzz fills float32 and float64 slices with gofuzz and checks
// the codecs' contract on them: Decode(Encode(x)) is Round(x) bit for bit
// for the lossy codecs, and x for the lossless ones.
func TestLossyGofuzz(t *testing.T) {
	f := fuzz.NewWithSeed(11).NilChance(0.05).NumElements(0, 300).Funcs(
		func(x *float64, c fuzz.Continue) { *x = genFloat64(c) },
		func(x *float32, c fuzz.Continue) {
			if c.Intn(4) == 0 {
				*x = math.Float32frombits(c.Uint32())
				return
			}
			*x = float32(genFloat64(c))
		},
	)
	for range 3000 {
		var s32 []float32
		var s64 []float64
		f.Fuzz(&s32)
		f.Fuzz(&s64)
		for _, c := range codec.IDs() {
			checkTrip(t, c, s32)
			checkTrip(t, c, s64)
		}
	}
}

func checkTrip[F float](t *testing.T, c codec.ID, x []F) {
	t.Helper()
	dst := make([]byte, EncodeScratchLen(c, DTypeOf[F](), len(x)))
	payload, wc := Encode(c, dst, x)
	got := make([]F, len(x))
	if err := Decode(wc, got, payload); err != nil {
		t.Fatalf("%s: decoding what Encode gave: %v", c, err)
	}
	want := append([]F(nil), x...)
	Round(c, want) // does nothing for a lossless codec: want is x
	for i := range x {
		if elemtest.ToBits(got[i]) != elemtest.ToBits(want[i]) {
			t.Fatalf("%s: %v (%#x) comes back as %v (%#x), Round says %v (%#x)",
				c, x[i], elemtest.ToBits(x[i]), got[i], elemtest.ToBits(got[i]), want[i], elemtest.ToBits(want[i]))
		}
	}
}
