//go:build !race

package race

// Enabled is true in race builds.
const Enabled = false

// ReadSlice reports a read of every element of s: nothing to do without
// the race detector.
func ReadSlice[T any](s []T) {}

// WriteSlice reports a write of every element of s: nothing to do
// without the race detector.
func WriteSlice[T any](s []T) {}
