// Package race reports to the race detector the memory that code it
// cannot see reads and writes: assembly, and system calls that move bytes
// into or out of Go memory (a raw recvfrom or sendmsg, process_vm_readv).
// The detector instruments only compiled Go code, so without a report a
// goroutine that writes a slice while an assembly kernel or the kernel
// reads it races unseen.
//
// A report is made on the goroutine that makes the hidden access, next to
// it, and names the range the access covers. Callers put it under
// if Enabled: without the race build tag Enabled is false and the helpers
// are empty, so the compiler drops the reports and the slicing that
// computes their ranges, and a hot path compiles to the same
// instructions as without them (the helpers alone would inline to
// nothing, but their arguments and the inliner's budget would not be
// free).
//
// The detector keeps no shadow memory outside the Go heap and the
// program's data, and ignores reports there: accesses to shared mappings
// (registered memory, shared-memory segments) stay unchecked whatever is
// reported.
package race
