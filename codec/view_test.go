package codec_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/elemtest"
	"github.com/stretchr/testify/require"
)

func TestViews(t *testing.T) {
	elemtest.ForEachType(t, []elemtest.Typed{
		{Name: "int8", Run: testViews[int8]},
		{Name: "int16", Run: testViews[int16]},
		{Name: "int32", Run: testViews[int32]},
		{Name: "int64", Run: testViews[int64]},
		{Name: "uint8", Run: testViews[uint8]},
		{Name: "uint16", Run: testViews[uint16]},
		{Name: "uint32", Run: testViews[uint32]},
		{Name: "uint64", Run: testViews[uint64]},
		{Name: "float32", Run: testViews[float32]},
		{Name: "float64", Run: testViews[float64]},
		{Name: "bf16", Run: testViews[codec.BFloat16]},
		{Name: "fp16", Run: testViews[codec.Float16]},
	})
}

// leBytes is the wire encoding of s written out by hand: each element's
// bit pattern, least significant byte first.
func leBytes[T codec.Elem](s []T) []byte {
	size := int(unsafe.Sizeof(*new(T)))
	b := make([]byte, 0, len(s)*size)
	for _, v := range s {
		b = binary.LittleEndian.AppendUint64(b, elemtest.ToBits(v))[:len(b)+size]
	}
	return b
}

func testViews[T codec.Elem](t *testing.T) {
	size := int(unsafe.Sizeof(*new(T)))
	require.Equal(t, size, int(unsafe.Sizeof(*new(T))))

	t.Run("Bytes", func(t *testing.T) {
		r := elemtest.NewRand(t)
		for _, n := range []int{0, 1, 7, 64} {
			s := elemtest.RandElems[T](r, n)
			b := codec.Bytes(s)
			require.Len(t, b, n*size)
			if n > 0 {
				require.Equal(t, leBytes(s), b, "Bytes is not the little-endian encoding")
			}
		}
		require.Empty(t, codec.Bytes[T](nil))
	})

	t.Run("FromBytes", func(t *testing.T) {
		r := elemtest.NewRand(t)
		for _, n := range []int{0, 1, 7, 64} {
			want := elemtest.RandElems[T](r, n)
			got, err := codec.FromBytes[T](leBytes(want))
			require.NoError(t, err)
			elemtest.RequireSameBits(t, want, got)
		}
	})

	t.Run("FromBytesLength", func(t *testing.T) {
		if size == 1 {
			for _, n := range []int{1, 3} {
				s, err := codec.FromBytes[T](make([]byte, n))
				require.NoError(t, err, "every length is a whole number of 1-byte elements")
				require.Len(t, s, n)
			}
			return
		}
		for _, n := range []int{1, size + 1, 3*size - 1} {
			_, err := codec.FromBytes[T](make([]byte, n))
			require.ErrorIs(t, err, codec.ErrInvalid)
			require.ErrorContains(t, err, fmt.Sprintf("%d bytes", n))
			require.ErrorContains(t, err, fmt.Sprintf("%d-byte %T", size, *new(T)))
		}
	})

	t.Run("FromBytesMisaligned", func(t *testing.T) {
		// A view at an odd address would fault on some architectures;
		// codec.FromBytes must still return the right values.
		want := elemtest.RandElems[T](elemtest.NewRand(t), 9)
		buf := make([]byte, 1+len(want)*size)
		copy(buf[1:], leBytes(want))
		got, err := codec.FromBytes[T](buf[1:])
		require.NoError(t, err)
		elemtest.RequireSameBits(t, want, got)
	})

	t.Run("Store", func(t *testing.T) {
		// The portable receive: write the wire bytes into codec.Bytes(s), then
		// codec.Store. It must work whether or not codec.Bytes aliased s.
		want := elemtest.RandElems[T](elemtest.NewRand(t), 33)
		s := make([]T, len(want))
		b := codec.Bytes(s)
		copy(b, leBytes(want))
		codec.Store(s, b)
		elemtest.RequireSameBits(t, want, s)
	})

	t.Run("StorePrefix", func(t *testing.T) {
		// A short message fills a prefix; the rest of s keeps its values.
		r := elemtest.NewRand(t)
		s := elemtest.RandElems[T](r, 10)
		orig := append([]T(nil), s...)
		in := elemtest.RandElems[T](r, 4)
		b := codec.Bytes(s)
		copy(b, leBytes(in))
		codec.Store(s, b[:len(in)*size])
		elemtest.RequireSameBits(t, append(in, orig[len(in):]...), s)

		// More bytes than s holds: only len(s) elements are stored.
		s = make([]T, 2)
		codec.Store(s, leBytes(in))
		elemtest.RequireSameBits(t, in[:2], s)
	})

	t.Run("Aliasing", func(t *testing.T) {
		// Writes through a view reach the other side only in the
		// aliasing build; the copying build must keep them apart.
		s := elemtest.RandElems[T](elemtest.NewRand(t), 16)
		b := codec.Bytes(s)
		b[0] ^= 0xff
		if codec.Aliasing {
			require.Equal(t, leBytes(s), b, "a write to codec.Bytes(s) did not reach s")
		} else {
			require.NotEqual(t, leBytes(s), b, "a write to codec.Bytes(s) reached s in the copying build")
		}

		v, err := codec.FromBytes[T](b)
		require.NoError(t, err)
		before := b[0]
		v[0] = elemtest.FromBits[T](elemtest.ToBits(v[0]) ^ 1)
		if codec.Aliasing {
			require.Equal(t, before^1, b[0], "FromBytes of an aligned buffer is not a view")
			require.Zero(t, testing.AllocsPerRun(100, func() {
				_ = codec.Bytes(s)
				_, _ = codec.FromBytes[T](b)
				codec.Store(s, b)
			}))
		} else {
			require.Equal(t, before, b[0], "FromBytes returned a view in the copying build")
		}
	})
}

// TestWireIsLittleEndian checks the encoding on this host in both builds,
// and backs up view_unsafe.go's build constraint: a view is only the wire
// encoding on a little-endian host.
func TestWireIsLittleEndian(t *testing.T) {
	require.Equal(t, []byte{1, 2, 3, 4}, codec.Bytes([]uint32{0x04030201}))
	require.Equal(t, []byte{0, 0, 0x80, 0x3f}, codec.Bytes([]float32{1}))
	if codec.Aliasing {
		b := []byte{1, 2, 3, 4}
		require.Equal(t, binary.LittleEndian.Uint32(b), binary.NativeEndian.Uint32(b),
			"the unsafe views were built for a big-endian host")
	}
}

func TestFromBytesErrorIsInvalid(t *testing.T) {
	_, err := codec.FromBytes[float64](make([]byte, 12))
	require.True(t, errors.Is(err, codec.ErrInvalid))
	require.EqualError(t, err, "invalid input: 12 bytes is not a whole number of 8-byte float64 elements")
}
