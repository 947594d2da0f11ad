//go:build race

package race

import (
	"runtime"
	"unsafe"
)

// Enabled is true in race builds.
const Enabled = true

// The helpers stay out of line so that a report names their caller: the
// detector records a function's call site when it enters it, and loses
// the caller of runtime.RaceReadRange, which it reaches through a
// wrapper.

// ReadSlice reports a read of every element of s.
//
//go:noinline
func ReadSlice[T any](s []T) {
	if len(s) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(unsafe.SliceData(s)), len(s)*int(unsafe.Sizeof(s[0])))
	}
}

// WriteSlice reports a write of every element of s. A write conflicts
// with every other access, so a slice that is read and written (dst of
// dst[i] += src[i]) needs only this report.
//
//go:noinline
func WriteSlice[T any](s []T) {
	if len(s) > 0 {
		runtime.RaceWriteRange(unsafe.Pointer(unsafe.SliceData(s)), len(s)*int(unsafe.Sizeof(s[0])))
	}
}
