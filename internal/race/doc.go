// Package race tells the race detector about memory accesses it cannot
// see: those another process, or another mapping of the same memory,
// makes on a goroutine's behalf, as the direct shared-memory collectives
// do with a rank's buffers. Without the race build tag its functions do
// nothing.
package race
