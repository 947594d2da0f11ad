//go:build !amd64 || !gc || purego || noasm

package shmem

// copyMoves has no string moves to copy with: Copy uses copy.
func copyMoves(dst, src []byte) bool { return false }

// shortDistance reports whether copying from src to dst is slow for how
// they lie in their pages: never without string moves.
func shortDistance(dst, src uintptr) bool { return false }
