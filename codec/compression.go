package codec

import (
	"errors"
	"fmt"
)

// ID names a wire compression codec: how a collective's payload travels
// between ranks. Pass one to collective.WithCompression.
type ID uint8

// The codecs.
//
// BF16 and FP16 are lossy and apply to float32 and float64 data only:
// each value travels as the 16-bit float nearest to it (ties to even),
// half the bytes of a float32 and a quarter of a float64. Zstd and S2 are
// lossless and apply to every element type; a payload that does not shrink
// travels raw instead.
const (
	None ID = iota // the elements' own little-endian bytes
	BF16           // bfloat16: float32's range, 8 significant bits
	FP16           // IEEE binary16: range ±65504, 11 significant bits
	Zstd           // Zstandard at its fastest level (klauspost/compress)
	S2             // S2, a faster Snappy (klauspost/compress)

	numIDs
)

// ErrCorrupt is wrapped by the error of a collective that received a
// compressed payload its codec cannot have produced.
var ErrCorrupt = errors.New("corrupt compressed payload")

var idNames = [numIDs]string{None: "none", BF16: "bf16", FP16: "fp16", Zstd: "zstd", S2: "s2"}

// String returns the codec's name, as Parse reads it: "none", "bf16",
// "fp16", "zstd" or "s2".
func (c ID) String() string {
	if c < numIDs {
		return idNames[c]
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// Parse returns the codec that String spells s. The error for any other s
// wraps ErrInvalid and lists the names.
func Parse(s string) (ID, error) {
	for c, name := range idNames {
		if s == name {
			return ID(c), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown codec %q (want one of %v)", ErrInvalid, s, idNames)
}

// IDs lists every codec, None first.
func IDs() []ID {
	cs := make([]ID, numIDs)
	for i := range cs {
		cs[i] = ID(i)
	}
	return cs
}

// Lossy reports whether decoding c's output may give other values than
// were encoded: true for BF16 and FP16.
func (c ID) Lossy() bool { return c == BF16 || c == FP16 }
