package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestViews(t *testing.T) {
	forEachType(t, []typed{
		{"int8", testViews[int8]},
		{"int16", testViews[int16]},
		{"int32", testViews[int32]},
		{"int64", testViews[int64]},
		{"uint8", testViews[uint8]},
		{"uint16", testViews[uint16]},
		{"uint32", testViews[uint32]},
		{"uint64", testViews[uint64]},
		{"float32", testViews[float32]},
		{"float64", testViews[float64]},
		{"bf16", testViews[BF16]},
		{"fp16", testViews[Float16]},
	})
}

// leBytes is the wire encoding of s written out by hand: each element's
// bit pattern, least significant byte first.
func leBytes[T Elem](s []T) []byte {
	size := DTypeOf[T]().Size()
	b := make([]byte, 0, len(s)*size)
	for _, v := range s {
		b = binary.LittleEndian.AppendUint64(b, toBits(v))[:len(b)+size]
	}
	return b
}

func testViews[T Elem](t *testing.T) {
	size := DTypeOf[T]().Size()
	require.Equal(t, size, sizeOf[T]())

	t.Run("Bytes", func(t *testing.T) {
		r := newRand(t)
		for _, n := range []int{0, 1, 7, 64} {
			s := randElems[T](r, n)
			b := Bytes(s)
			require.Len(t, b, n*size)
			if n > 0 {
				require.Equal(t, leBytes(s), b, "Bytes is not the little-endian encoding")
			}
		}
		require.Empty(t, Bytes[T](nil))
	})

	t.Run("FromBytes", func(t *testing.T) {
		r := newRand(t)
		for _, n := range []int{0, 1, 7, 64} {
			want := randElems[T](r, n)
			got, err := FromBytes[T](leBytes(want))
			require.NoError(t, err)
			requireSameBits(t, want, got)
		}
	})

	t.Run("FromBytesLength", func(t *testing.T) {
		if size == 1 {
			for _, n := range []int{1, 3} {
				s, err := FromBytes[T](make([]byte, n))
				require.NoError(t, err, "every length is a whole number of 1-byte elements")
				require.Len(t, s, n)
			}
			return
		}
		for _, n := range []int{1, size + 1, 3*size - 1} {
			_, err := FromBytes[T](make([]byte, n))
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, fmt.Sprintf("%d bytes", n))
			require.ErrorContains(t, err, fmt.Sprintf("%d-byte %s", size, DTypeOf[T]()))
		}
	})

	t.Run("FromBytesMisaligned", func(t *testing.T) {
		// A view at an odd address would fault on some architectures;
		// FromBytes must still return the right values.
		want := randElems[T](newRand(t), 9)
		buf := make([]byte, 1+len(want)*size)
		copy(buf[1:], leBytes(want))
		got, err := FromBytes[T](buf[1:])
		require.NoError(t, err)
		requireSameBits(t, want, got)
	})

	t.Run("Store", func(t *testing.T) {
		// The portable receive: write the wire bytes into Bytes(s), then
		// Store. It must work whether or not Bytes aliased s.
		want := randElems[T](newRand(t), 33)
		s := make([]T, len(want))
		b := Bytes(s)
		copy(b, leBytes(want))
		Store(s, b)
		requireSameBits(t, want, s)
	})

	t.Run("StorePrefix", func(t *testing.T) {
		// A short message fills a prefix; the rest of s keeps its values.
		r := newRand(t)
		s := randElems[T](r, 10)
		orig := append([]T(nil), s...)
		in := randElems[T](r, 4)
		b := Bytes(s)
		copy(b, leBytes(in))
		Store(s, b[:len(in)*size])
		requireSameBits(t, append(in, orig[len(in):]...), s)

		// More bytes than s holds: only len(s) elements are stored.
		s = make([]T, 2)
		Store(s, leBytes(in))
		requireSameBits(t, in[:2], s)
	})

	t.Run("Aliasing", func(t *testing.T) {
		// Writes through a view reach the other side only in the
		// aliasing build; the copying build must keep them apart.
		s := randElems[T](newRand(t), 16)
		b := Bytes(s)
		b[0] ^= 0xff
		if Aliasing {
			require.Equal(t, leBytes(s), b, "a write to Bytes(s) did not reach s")
		} else {
			require.NotEqual(t, leBytes(s), b, "a write to Bytes(s) reached s in the copying build")
		}

		v, err := FromBytes[T](b)
		require.NoError(t, err)
		before := b[0]
		v[0] = fromBits[T](toBits(v[0]) ^ 1)
		if Aliasing {
			require.Equal(t, before^1, b[0], "FromBytes of an aligned buffer is not a view")
			require.Zero(t, testing.AllocsPerRun(100, func() {
				_ = Bytes(s)
				_, _ = FromBytes[T](b)
				Store(s, b)
			}))
		} else {
			require.Equal(t, before, b[0], "FromBytes returned a view in the copying build")
		}
	})
}

// requireSameBits compares element bit patterns, so that NaNs compare
// equal to themselves.
func requireSameBits[T Elem](t *testing.T, want, got []T) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if toBits(want[i]) != toBits(got[i]) {
			t.Fatalf("element %d: got %v (%#x), want %v (%#x)", i, got[i], toBits(got[i]), want[i], toBits(want[i]))
		}
	}
}

// TestWireIsLittleEndian checks the encoding on this host in both builds,
// and backs up view_unsafe.go's build constraint: a view is only the wire
// encoding on a little-endian host.
func TestWireIsLittleEndian(t *testing.T) {
	require.Equal(t, []byte{1, 2, 3, 4}, Bytes([]uint32{0x04030201}))
	require.Equal(t, []byte{0, 0, 0x80, 0x3f}, Bytes([]float32{1}))
	if Aliasing {
		b := []byte{1, 2, 3, 4}
		require.Equal(t, binary.LittleEndian.Uint32(b), binary.NativeEndian.Uint32(b),
			"the unsafe views were built for a big-endian host")
	}
}

func TestFromBytesErrorIsInvalid(t *testing.T) {
	_, err := FromBytes[float64](make([]byte, 12))
	require.True(t, errors.Is(err, ErrInvalid))
	require.EqualError(t, err, "invalid input: 12 bytes is not a whole number of 8-byte float64 elements")
}
