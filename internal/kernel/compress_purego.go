//go:build purego || nounsafe || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

// The copying build, as in view_purego.go: without views of memory the
// lossy codecs run the portable loops of compress_kernels.go.

package kernel

import "github.com/gocoll/gocoll/codec"

// encodeHalf writes the 16-bit encodings of src to dst[:2*len(src)].
func encodeHalf[F float](c codec.ID, dst []byte, src []F) { encodeHalfPortable(c, dst, src) }

// decodeHalf sets dst to the values of the 16-bit encodings in
// src[:2*len(dst)], through the caches whatever around says: the
// portable loops have no stores around them.
func decodeHalf[F float](c codec.ID, dst []F, src []byte, around bool) {
	decodeHalfPortable(c, dst, src)
}

// encodeRoundHalf is encodeHalf that also sets src to what dst decodes
// to.
func encodeRoundHalf[F float](c codec.ID, dst []byte, src []F) {
	encodeHalfPortable(c, dst, src)
	decodeHalfPortable(c, src, dst)
}

// roundHalf sets every value of buf to what it becomes after a trip
// through c.
func roundHalf[F float](c codec.ID, buf []F) { roundHalfPortable(c, buf) }

// sumDecodedHalf fuses nothing without views: SumDecoded's callers decode
// and reduce apart.
func sumDecodedHalf(c codec.ID, dst, mine []float32, src, encode []byte) bool { return false }

// sumEncodedHalf fuses nothing either.
func sumEncodedHalf(c codec.ID, encode []byte, mine []float32, src []byte) bool { return false }
