//go:build !amd64 || !gc || purego || noasm

package kernel

import "github.com/gocoll/gocoll/codec"

// This build has no assembly kernels: another GOARCH or compiler, or the
// purego or noasm tag. Every kernel is the Go loop of kernels.go.

func sumAsm[T codec.Elem](dst, src []T) bool { return false }

func prodAsm[F float](dst, src []F) bool { return false }

// encodeBF16Asm encodes nothing: encodeBF16F32's Go loop does it all.
func encodeBF16Asm(dst []uint16, src []uint32) int { return 0 }

// encodeRoundBF16Asm encodes nothing: encodeRoundBF16F32's Go loops do
// it all.
func encodeRoundBF16Asm(dst []uint16, src []uint32) int { return 0 }

// decodeBF16Asm decodes nothing: decodeBF16F32's Go loop does it all.
func decodeBF16Asm(dst []uint32, src []uint16) int { return 0 }

// decodeBF16AroundAsm decodes nothing: decodeBF16F32Around's Go loop
// does it all, through the caches.
func decodeBF16AroundAsm(dst []uint32, src []uint16) (lo, hi int) { return 0, 0 }

// decodeFP16AroundAsm decodes nothing, as decodeBF16AroundAsm.
func decodeFP16AroundAsm(dst []uint32, src []uint16) (lo, hi int) { return 0, 0 }

// encodeFP16Asm encodes nothing: encodeFP16F32's Go loop does it all.
func encodeFP16Asm(dst []uint16, src []uint32) int { return 0 }

// decodeFP16Asm decodes nothing: decodeFP16F32's Go loop does it all.
func decodeFP16Asm(dst []uint32, src []uint16) int { return 0 }

// sumDecodedAsm has no kernel to run.
func sumDecodedAsm(c codec.ID, dst, mine []float32, src, enc []uint16) (int, bool) { return 0, false }

func copyAroundAsm(dst, src []byte) bool { return false }
