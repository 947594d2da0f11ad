//go:build !amd64 || !gc || purego || noasm

package shmem

// copyMoves has no string moves to copy with: Copy uses copy.
func copyMoves(dst, src []byte) bool { return false }
