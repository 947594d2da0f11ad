package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/elemtest"
	"github.com/stretchr/testify/require"
)

func TestCodecNames(t *testing.T) {
	require.Equal(t, []codec.ID{codec.None, codec.BF16, codec.FP16, codec.Zstd, codec.S2}, codec.IDs())
	for _, c := range codec.IDs() {
		t.Run(c.String(), func(t *testing.T) {
			require.True(t, KnownCodec(c))
			got, err := codec.Parse(c.String())
			require.NoError(t, err)
			require.Equal(t, c, got)
			require.Equal(t, c == codec.BF16 || c == codec.FP16, c.Lossy())
		})
	}
	require.False(t, KnownCodec(codec.ID(5)))
	require.Equal(t, "codec(200)", codec.ID(200).String())
	_, err := codec.Parse("lz4")
	require.ErrorIs(t, err, codec.ErrInvalid)
	require.ErrorContains(t, err, `unknown codec "lz4"`)
}

// TestCodecCheck checks which codec applies to which element type: the
// lossy codecs to float32 and float64 only, with an error that names both.
func TestCodecCheck(t *testing.T) {
	for _, c := range append(codec.IDs(), codec.ID(5)) {
		for dt := DType(1); dt < numDTypes; dt++ {
			t.Run(fmt.Sprintf("%s/%s", c, dt), func(t *testing.T) {
				err := CheckCodec(c, dt)
				switch {
				case !KnownCodec(c):
					require.ErrorIs(t, err, codec.ErrInvalid)
					require.ErrorContains(t, err, fmt.Sprintf("unknown codec %d", uint8(c)))
				case c.Lossy() && dt != Float32 && dt != Float64:
					require.ErrorIs(t, err, codec.ErrInvalid)
					require.ErrorContains(t, err, c.String())
					require.ErrorContains(t, err, "not "+dt.String())
				default:
					require.NoError(t, err)
				}
			})
		}
	}
}

// roundTripInputs are the slices each round trip encodes: empty, short
// ones around the kernels' group sizes, random bit patterns (NaNs and
// subnormals included for floats), and compressible ones.
func roundTripInputs[T codec.Elem](t *testing.T) map[string][]T {
	r := elemtest.NewRand(t)
	in := map[string][]T{
		"empty":   nil,
		"zeros":   make([]T, 3000),
		"random":  elemtest.RandElems[T](r, 5000),
		"pattern": make([]T, 4099),
	}
	for _, n := range []int{1, 3, 4, 5, 7, 8, 9, 15, 16, 17} {
		in[fmt.Sprint("random ", n)] = elemtest.RandElems[T](r, n)
	}
	few := elemtest.RandElems[T](r, 5)
	for i := range in["pattern"] {
		in["pattern"][i] = few[i%len(few)]
	}
	return in
}

func TestCodecRoundTrip(t *testing.T) {
	for _, c := range codec.IDs() {
		t.Run(c.String(), func(t *testing.T) {
			elemtest.ForEachType(t, []elemtest.Typed{
				{Name: "int8", Run: func(t *testing.T) { testRoundTrip[int8](t, c) }},
				{Name: "int16", Run: func(t *testing.T) { testRoundTrip[int16](t, c) }},
				{Name: "int32", Run: func(t *testing.T) { testRoundTrip[int32](t, c) }},
				{Name: "int64", Run: func(t *testing.T) { testRoundTrip[int64](t, c) }},
				{Name: "uint8", Run: func(t *testing.T) { testRoundTrip[uint8](t, c) }},
				{Name: "uint16", Run: func(t *testing.T) { testRoundTrip[uint16](t, c) }},
				{Name: "uint32", Run: func(t *testing.T) { testRoundTrip[uint32](t, c) }},
				{Name: "uint64", Run: func(t *testing.T) { testRoundTrip[uint64](t, c) }},
				{Name: "float32", Run: func(t *testing.T) { testRoundTrip[float32](t, c) }},
				{Name: "float64", Run: func(t *testing.T) { testRoundTrip[float64](t, c) }},
				{Name: "bf16", Run: func(t *testing.T) { testRoundTrip[codec.BFloat16](t, c) }},
				{Name: "fp16", Run: func(t *testing.T) { testRoundTrip[codec.Float16](t, c) }},
			})
		})
	}
}

// testRoundTrip encodes and decodes every input with c. A lossless codec
// gives back exactly the bytes it was given, a lossy one Round of them,
// bit for bit. Either way the payload fits MaxWireLen and src is left as
// it was.
func testRoundTrip[T codec.Elem](t *testing.T, c codec.ID) {
	dt := DTypeOf[T]()
	if err := CheckCodec(c, dt); err != nil {
		// A lossy codec and a type it does not apply to: Encode
		// refuses by panicking, Decode with an error, Round does nothing.
		require.True(t, c.Lossy())
		require.Panics(t, func() { Encode(c, make([]byte, 8), make([]T, 4)) })
		err := Decode(c, make([]T, 4), make([]byte, 8))
		require.ErrorIs(t, err, codec.ErrInvalid)
		require.False(t, errors.Is(err, codec.ErrCorrupt))
		buf := elemtest.RandElems[T](elemtest.NewRand(t), 9)
		want := append([]T(nil), buf...)
		Round(c, buf)
		require.Equal(t, want, buf)
		return
	}
	for name, src := range roundTripInputs[T](t) {
		t.Run(name, func(t *testing.T) {
			orig := append([]T(nil), src...)
			dst := make([]byte, EncodeScratchLen(c, dt, len(src)))
			payload, wc := Encode(c, dst, src)
			require.Equal(t, codec.Bytes(orig), codec.Bytes(src), "Encode changed src")
			require.LessOrEqual(t, len(payload), MaxWireLen(c, dt, len(src)))
			switch {
			case c.Lossy():
				require.Equal(t, c, wc)
				require.Len(t, payload, 2*len(src))
			case wc == codec.None:
				require.Equal(t, codec.Bytes(src), payload)
			default:
				require.Equal(t, c, wc)
				require.Less(t, len(payload), len(src)*dt.Size())
			}

			got := make([]T, len(src))
			require.NoError(t, Decode(wc, got, payload))
			want := append([]T(nil), src...)
			Round(c, want)
			require.Equal(t, codec.Bytes(want), codec.Bytes(got))
			if !c.Lossy() {
				require.Equal(t, codec.Bytes(src), codec.Bytes(got))
			}
		})
	}
}

// TestLosslessFallback checks that a lossless codec sends data that does
// not shrink raw, as codec.None, and compresses data that does.
func TestLosslessFallback(t *testing.T) {
	random := elemtest.RandElems[uint8](elemtest.NewRand(t), 1<<16)
	zeros := make([]float32, 1<<14)
	for _, c := range []codec.ID{codec.Zstd, codec.S2} {
		t.Run(c.String()+"/random", func(t *testing.T) {
			dst := make([]byte, EncodeScratchLen(c, Uint8, len(random)))
			payload, wc := Encode(c, dst, random)
			require.Equal(t, codec.None, wc)
			require.Equal(t, codec.Bytes(random), payload)
		})
		t.Run(c.String()+"/zeros", func(t *testing.T) {
			dst := make([]byte, EncodeScratchLen(c, Float32, len(zeros)))
			payload, wc := Encode(c, dst, zeros)
			require.Equal(t, c, wc)
			require.Less(t, len(payload), len(zeros)*4/50, "64 KiB of zeros should shrink fifty-fold")
			got := make([]float32, len(zeros))
			got[7] = 1
			require.NoError(t, Decode(wc, got, payload))
			require.Equal(t, zeros, got)
		})
	}
}

// guard is the value of the elements on either side of the dst that
// decodeGuarded hands to Decode.
const guardLen = 16

// decodeGuarded decodes into n elements in the middle of a larger buffer
// and requires that the elements around them are untouched, whatever
// Decode returns.
func decodeGuarded[T codec.Elem](t testing.TB, c codec.ID, n int, payload []byte) ([]T, error) {
	t.Helper()
	buf := make([]T, n+2*guardLen)
	for i := range buf {
		buf[i] = elemtest.FromBits[T](0xa5a5a5a5a5a5a5a5)
	}
	dst := buf[guardLen : guardLen+n : guardLen+n]
	err := Decode(c, dst, payload)
	for i, v := range append(buf[:guardLen:guardLen], buf[guardLen+n:]...) {
		if elemtest.ToBits(v) != elemtest.ToBits(elemtest.FromBits[T](0xa5a5a5a5a5a5a5a5)) {
			t.Fatalf("Decode(%s, %d elements, %d bytes) wrote past dst: guard element %d is %#x", c, n, len(payload), i, elemtest.ToBits(v))
		}
	}
	return dst, err
}

// encoded returns src's payload in c, requiring that c was used.
func encoded[T codec.Elem](t *testing.T, c codec.ID, src []T) []byte {
	t.Helper()
	dst := make([]byte, EncodeScratchLen(c, DTypeOf[T](), len(src)))
	payload, wc := Encode(c, dst, src)
	require.Equal(t, c, wc, "the test needs a payload in %s", c)
	return payload
}

func TestDecodeCorrupt(t *testing.T) {
	const n = 1000
	zeros := make([]float32, n)
	ramp := make([]float32, n)
	for i := range ramp {
		ramp[i] = float32(i % 10)
	}
	zstdOK := encoded(t, codec.Zstd, ramp)
	s2OK := encoded(t, codec.S2, ramp)
	flip := func(b []byte, i int) []byte {
		b = bytes.Clone(b)
		b[i] ^= 0xff
		return b
	}
	tests := []struct {
		name    string
		c       codec.ID
		n       int // elements of dst
		payload []byte
		want    string
	}{
		{"none short", codec.None, n, make([]byte, 4*n-1), "none payload for 1000 elements: 3999 bytes"},
		{"none long", codec.None, n, make([]byte, 4*n+4), "4004 bytes"},
		{"none for no elements", codec.None, 0, make([]byte, 4), "none payload for 0 elements: 4 bytes"},
		{"bf16 odd", codec.BF16, n, make([]byte, 2*n-1), "bf16 payload for 1000 elements: 1999 bytes"},
		{"fp16 long", codec.FP16, n, make([]byte, 2*n+2), "2002 bytes"},
		{"fp16 raw float32 length", codec.FP16, n, make([]byte, 4*n), "4000 bytes"},
		{"bf16 empty", codec.BF16, n, nil, "0 bytes"},
		{"zstd empty", codec.Zstd, n, nil, "0 bytes decoded"},
		{"zstd garbage", codec.Zstd, n, bytes.Repeat([]byte{0x5a}, 100), "zstd payload"},
		{"zstd truncated", codec.Zstd, n, zstdOK[:len(zstdOK)-1], "zstd payload"},
		{"zstd truncated to its header", codec.Zstd, n, zstdOK[:6], "zstd payload"},
		{"zstd body corrupted", codec.Zstd, n, flip(zstdOK, len(zstdOK)/2), "zstd payload"},
		{"zstd one element short", codec.Zstd, n, encoded(t, codec.Zstd, zeros[:n-1]), "zstd payload"},
		{"zstd one element long", codec.Zstd, n, encoded(t, codec.Zstd, append(zeros, 0)), "zstd payload"},
		{"zstd far too long", codec.Zstd, n, encoded(t, codec.Zstd, make([]float32, 1<<20)), "zstd payload"},
		{"zstd two frames", codec.Zstd, n, append(bytes.Clone(zstdOK), zstdOK...), "zstd payload"},
		{"zstd for no elements", codec.Zstd, 0, zstdOK, "zstd payload for 0 elements"},
		{"s2 empty", codec.S2, n, nil, "s2 payload"},
		{"s2 garbage", codec.S2, n, bytes.Repeat([]byte{0xff}, 100), "s2 payload"},
		{"s2 truncated", codec.S2, n, s2OK[:len(s2OK)-1], "s2 payload"},
		// S2's blocks carry no checksum: a flipped literal decodes to
		// other values, so the flip is in the length at the start.
		{"s2 length corrupted", codec.S2, n, flip(s2OK, 0), "s2 payload"},
		{"s2 one element short", codec.S2, n, encoded(t, codec.S2, zeros[:n-1]), "s2 payload for 1000 elements: 3996 bytes decoded"},
		{"s2 one element long", codec.S2, n, encoded(t, codec.S2, append(zeros, 0)), "4004 bytes decoded"},
		{"unknown codec", codec.ID(5), n, zstdOK, "unknown codec 5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeGuarded[float32](t, tc.c, tc.n, tc.payload)
			require.ErrorIs(t, err, codec.ErrCorrupt)
			require.ErrorContains(t, err, tc.want)
		})
	}
	// The good payloads decode, in the same harness.
	for _, c := range []codec.ID{codec.Zstd, codec.S2} {
		got, err := decodeGuarded[float32](t, c, n, encoded(t, c, ramp))
		require.NoError(t, err)
		require.Equal(t, ramp, got)
	}
}

// TestRoundIdempotent checks that rounding a rounded value changes
// nothing, on random bit patterns (NaNs, infinities and subnormals
// included), and that Round leaves data alone for lossless codecs.
func TestRoundIdempotent(t *testing.T) {
	for _, c := range codec.IDs() {
		t.Run(c.String(), func(t *testing.T) {
			r := elemtest.NewRand(t)
			f32, f64 := elemtest.RandElems[float32](r, 1<<16), elemtest.RandElems[float64](r, 1<<16)
			once32, once64 := append([]float32(nil), f32...), append([]float64(nil), f64...)
			Round(c, once32)
			Round(c, once64)
			if !c.Lossy() {
				require.Equal(t, codec.Bytes(f32), codec.Bytes(once32))
				require.Equal(t, codec.Bytes(f64), codec.Bytes(once64))
			}
			twice32, twice64 := append([]float32(nil), once32...), append([]float64(nil), once64...)
			Round(c, twice32)
			Round(c, twice64)
			require.Equal(t, codec.Bytes(once32), codec.Bytes(twice32))
			require.Equal(t, codec.Bytes(once64), codec.Bytes(twice64))
		})
	}
}

// TestEncodeRounding checks that EncodeRounding is Encode followed by
// Round: the same payload and codec, and src left as a receiver decodes
// it, for every codec, both float types, lengths on either side of the
// kernels' 16-element steps, and a payload buffer that is not 2-byte
// aligned (the copying loops).
func TestEncodeRounding(t *testing.T) {
	for _, c := range codec.IDs() {
		t.Run(c.String(), func(t *testing.T) {
			r := elemtest.NewRand(t)
			for _, n := range []int{0, 1, 15, 16, 17, 1000, 1 << 16} {
				for _, misaligned := range []bool{false, true} {
					testEncodeRounding(t, c, elemtest.RandElems[float32](r, n), misaligned)
					testEncodeRounding(t, c, elemtest.RandElems[float64](r, n), misaligned)
				}
			}
		})
	}
}

func testEncodeRounding[F float](t *testing.T, c codec.ID, src []F, misaligned bool) {
	t.Helper()
	wantPayload, wantCodec := Encode(c, make([]byte, EncodeScratchLen(c, DTypeOf[F](), len(src))), src)
	wantPayload = slices.Clone(wantPayload)
	rounded := slices.Clone(src)
	Round(c, rounded)

	buf := make([]byte, EncodeScratchLen(c, DTypeOf[F](), len(src))+1)
	if misaligned {
		buf = buf[1:]
	}
	payload, gotCodec := EncodeRounding(c, buf, src)
	require.Equal(t, wantCodec, gotCodec, "%d elements", len(src))
	require.Equal(t, wantPayload, payload, "%d elements", len(src))
	require.Equal(t, codec.Bytes(rounded), codec.Bytes(src), "%d elements: the sender's copy", len(src))
}

// lossyTrip is the value v comes back as after a trip through c.
func lossyTrip[F float](t *testing.T, c codec.ID, v F) F {
	t.Helper()
	src := []F{v}
	got := make([]F, 1)
	require.NoError(t, Decode(c, got, encoded(t, c, src)))
	return got[0]
}

// TestLossySpecialValues checks NaN and ±Inf propagation and the values
// at the top of each elemtest.Format's range, through Encode and Decode and
// through Round, for float32 and float64 data.
//
// codec.BFloat16 has float32's exponent range but 8 bits of precision: its largest
// finite value is 0x7f7f = (2-2^-7)·2^127 = 3.3895314e38, and values from
// the midpoint between it and 2^128, (2-2^-8)·2^127 = 3.3961775e38, up
// round to Inf. MaxFloat32 (3.4028235e38) is above that midpoint, so it
// becomes +Inf in codec.BFloat16. FP16's largest finite value is 65504 and its
// overflow threshold 65520.
func TestLossySpecialValues(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name string
		c    codec.ID
		in   float64
		want float64 // NaN for a NaN of the same sign
	}{
		{"bf16 +Inf", codec.BF16, inf, inf},
		{"bf16 -Inf", codec.BF16, -inf, -inf},
		{"bf16 NaN", codec.BF16, nan, nan},
		{"bf16 -NaN", codec.BF16, -nan, -nan},
		{"fp16 +Inf", codec.FP16, inf, inf},
		{"fp16 -Inf", codec.FP16, -inf, -inf},
		{"fp16 NaN", codec.FP16, nan, nan},
		{"fp16 -NaN", codec.FP16, -nan, -nan},
		{"fp16 max finite", codec.FP16, 65504, 65504},
		{"fp16 65519 rounds down", codec.FP16, 65519, 65504},
		{"fp16 65520 overflows", codec.FP16, 65520, inf},
		{"fp16 -65520 overflows", codec.FP16, -65520, -inf},
		{"fp16 1e5 overflows", codec.FP16, 1e5, inf},
		{"fp16 smallest subnormal", codec.FP16, 0x1p-24, 0x1p-24},
		{"fp16 underflow to zero", codec.FP16, 0x1p-26, 0},
		{"fp16 underflow keeps the sign", codec.FP16, -0x1p-26, math.Copysign(0, -1)},
		{"bf16 max finite", codec.BF16, 0x1.fep127, 0x1.fep127},
		{"bf16 below the overflow threshold", codec.BF16, 0x1.ffp127 - 0x1p104, 0x1.fep127},
		{"bf16 overflow threshold", codec.BF16, 0x1.ffp127, inf},
		{"bf16 MaxFloat32 overflows", codec.BF16, math.MaxFloat32, inf},
		{"bf16 -MaxFloat32 overflows", codec.BF16, -math.MaxFloat32, -inf},
		{"bf16 smallest subnormal", codec.BF16, 0x1p-133, 0x1p-133},
		{"bf16 zero", codec.BF16, math.Copysign(0, -1), math.Copysign(0, -1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, got float64) {
				t.Helper()
				if math.IsNaN(tc.want) {
					require.True(t, math.IsNaN(got), "%s: got %v, want NaN", what, got)
				} else {
					require.Equal(t, tc.want, got, what)
				}
				require.Equal(t, math.Signbit(tc.want), math.Signbit(got), "%s: sign of %v", what, got)
			}
			check("float64 trip", lossyTrip(t, tc.c, tc.in))
			r64 := []float64{tc.in}
			Round(tc.c, r64)
			check("float64 Round", r64[0])
			if f := float32(tc.in); float64(f) == tc.in || math.IsNaN(tc.in) {
				check("float32 trip", float64(lossyTrip(t, tc.c, f)))
				r32 := []float32{f}
				Round(tc.c, r32)
				check("float32 Round", float64(r32[0]))
			}
		})
	}
	// A float32 just below the codec.BFloat16 overflow midpoint stays finite, and
	// the midpoint itself overflows.
	require.Equal(t, float32(0x1.fep127), lossyTrip(t, codec.BF16, math.Float32frombits(0x7f7f7fff)))
	require.True(t, math.IsInf(float64(lossyTrip(t, codec.BF16, math.Float32frombits(0x7f7f8000))), 1))
	// Signalling NaNs come back quiet, with their sign.
	for _, c := range []codec.ID{codec.BF16, codec.FP16} {
		got := lossyTrip(t, c, math.Float32frombits(0xff800001))
		require.True(t, got != got)
		require.True(t, math.Signbit(float64(got)))
		got64 := lossyTrip(t, c, math.Float64frombits(0x7ff0000000000001))
		require.True(t, got64 != got64)
		require.False(t, math.Signbit(got64))
	}
}

// TestZeroAllocs checks that Encode, Decode and Round never allocate once
// the zstd coders exist (they are made on first use, and keep their
// tables in pools). Under the race detector sync.Pool drops a quarter of
// what is put in it, so zstd does allocate there: the test reports how
// much and checks only the others. Where Bytes copies (codec.Aliasing is false)
// the lossless codecs must copy too, so only the lossy ones are checked.
func TestZeroAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("AllocsPerRun takes a while")
	}
	const n = 1 << 14
	r := elemtest.NewRand(t)
	// Gradient-like values; for the lossless codecs rounded to codec.BFloat16, so
	// that half of every float32 is zeros and they really compress (data
	// that does not shrink goes raw and never reaches their decoders).
	f32, f64, i32 := make([]float32, n), make([]float64, n), make([]int32, n)
	for i := range f32 {
		f32[i] = float32(r.NormFloat64())
		f64[i] = r.NormFloat64()
		i32[i] = int32(r.IntN(100))
	}
	f32c, f64c := append([]float32(nil), f32...), append([]float64(nil), f64...)
	Round(codec.BF16, f32c)
	Round(codec.BF16, f64c)
	for _, c := range codec.IDs()[1:] {
		t.Run(c.String(), func(t *testing.T) {
			if !codec.Aliasing && !c.Lossy() {
				t.Skip("Bytes copies in this build")
			}
			var allocs map[string]float64
			if c.Lossy() {
				allocs = map[string]float64{
					"float32": allocsOfTrip(t, c, f32),
					"float64": allocsOfTrip(t, c, f64),
				}
			} else {
				allocs = map[string]float64{
					"float32": allocsOfTrip(t, c, f32c),
					"float64": allocsOfTrip(t, c, f64c),
					"int32":   allocsOfTrip(t, c, i32),
				}
			}
			t.Logf("%s allocations per Encode+Decode+Round: %v", c, allocs)
			if c == codec.Zstd && raceEnabled {
				t.Skip("under the race detector sync.Pool drops items, and zstd's coders allocate")
			}
			for typ, a := range allocs {
				require.Zero(t, a, "%s %s allocates", c, typ)
			}
		})
	}
}

// allocsOfTrip is the average number of allocations of an Encode, a
// Decode and a Round of src with c, which must compress src.
func allocsOfTrip[T codec.Elem](t *testing.T, c codec.ID, src []T) float64 {
	t.Helper()
	dst := make([]byte, EncodeScratchLen(c, DTypeOf[T](), len(src)))
	out := make([]T, len(src))
	payload, wc := Encode(c, dst, src) // warm up: zstd makes its coders once
	require.Equal(t, c, wc, "the data must compress, or the codec is not exercised")
	require.NoError(t, Decode(wc, out, payload))
	return testing.AllocsPerRun(50, func() {
		payload, wc := Encode(c, dst, src)
		if err := Decode(wc, out, payload); err != nil {
			panic(err)
		}
		Round(c, out)
	})
}

// TestFusedAllocateNothing: SumDecoded, SumEncoded and DecodeAround
// allocate nothing, on a length whose last elements their kernels leave
// to Go loops (SumEncoded's tail once put its sums in an array that
// escaped: six allocations a compressed Allreduce).
func TestFusedAllocateNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("AllocsPerRun takes a while")
	}
	const n = 1001
	mine, dst := elemtest.RandElems[float32](elemtest.NewRand(t), n), make([]float32, n)
	for _, c := range []codec.ID{codec.BF16, codec.FP16} {
		t.Run(c.String(), func(t *testing.T) {
			payload := encoded(t, c, mine)
			enc := make([]byte, len(payload))
			for name, f := range map[string]func(){
				"SumDecoded":           func() { SumDecoded(c, dst, mine, payload, nil) },
				"SumDecoded, encoding": func() { SumDecoded(c, dst, mine, payload, enc) },
				"SumEncoded":           func() { SumEncoded(c, enc, mine, payload) },
				"DecodeAround":         func() { _ = DecodeAround(c, dst, payload) },
			} {
				require.Zero(t, testing.AllocsPerRun(20, f), "%s allocates", name)
			}
		})
	}
}

// TestEncodeMisaligned checks the path for payloads at odd addresses,
// which the lossy codecs cannot view as 16-bit words: the bytes are the
// same as at an aligned address, and so are the decoded values.
func TestEncodeMisaligned(t *testing.T) {
	r := elemtest.NewRand(t)
	for _, c := range []codec.ID{codec.BF16, codec.FP16} {
		t.Run(c.String(), func(t *testing.T) {
			f32, f64 := elemtest.RandElems[float32](r, 1001), elemtest.RandElems[float64](r, 1001)
			testMisaligned(t, c, f32)
			testMisaligned(t, c, f64)
		})
	}
}

func testMisaligned[F float](t *testing.T, c codec.ID, src []F) {
	aligned := encoded(t, c, src)
	buf := make([]byte, 2*len(src)+1)
	payload, wc := Encode(c, buf[1:], src)
	require.Equal(t, c, wc)
	require.Equal(t, aligned, payload)

	want := make([]F, len(src))
	require.NoError(t, Decode(c, want, aligned))
	got := make([]F, len(src))
	require.NoError(t, Decode(c, got, payload))
	require.Equal(t, codec.Bytes(want), codec.Bytes(got))
}

// TestDecodeAround: DecodeAround gives Decode's values bit for bit, for
// every lossy codec and float type, wherever dst begins against a 64-byte
// boundary (the stores around the caches start at one) and whatever its
// length: none, shorter than a vector, a kernel's groups and tails, and
// longer than one kernel call (chunkBytes). It writes nothing outside
// dst, and, like Decode, refuses a payload of another length.
func TestDecodeAround(t *testing.T) {
	r := elemtest.NewRand(t)
	for _, c := range []codec.ID{codec.BF16, codec.FP16} {
		t.Run(c.String(), func(t *testing.T) {
			testDecodeAround[float32](t, r, c)
			testDecodeAround[float64](t, r, c)
		})
	}
}

func testDecodeAround[F float](t *testing.T, r *rand.Rand, c codec.ID) {
	const guard = 16
	for _, n := range []int{0, 1, 15, 16, 17, 31, 33, 100, 1000, 50_007} {
		src := elemtest.RandElems[F](r, n)
		payload := encoded(t, c, src)
		want := make([]F, n)
		require.NoError(t, Decode(c, want, payload))
		for off := range 17 {
			buf := make([]F, off+n+guard)
			for i := range buf {
				buf[i] = -1
			}
			require.NoError(t, DecodeAround(c, buf[off:off+n], payload))
			require.Equal(t, codec.Bytes(want), codec.Bytes(buf[off:off+n]), "%d %s at offset %d", n, DTypeOf[F](), off)
			for i, v := range slices.Concat(buf[:off], buf[off+n:]) {
				require.Equal(t, F(-1), v, "%d %s at offset %d wrote outside dst (guard %d)", n, DTypeOf[F](), off, i)
			}
		}
	}
	err := DecodeAround(c, make([]F, 4), make([]byte, 6))
	require.ErrorIs(t, err, codec.ErrCorrupt)
}
