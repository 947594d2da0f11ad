//go:build race

package race

import (
	"runtime"
	"unsafe"
)

// Read reports that the calling goroutine read b.
func Read(b []byte) {
	if len(b) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(unsafe.SliceData(b)), len(b))
	}
}

// Write reports that the calling goroutine wrote b.
func Write(b []byte) {
	if len(b) > 0 {
		runtime.RaceWriteRange(unsafe.Pointer(unsafe.SliceData(b)), len(b))
	}
}
