//go:build !amd64 || !gc || purego || noasm

package shmem

// spinPause does nothing where there is no PAUSE to give: a poll follows
// the last at once.
func spinPause() {}
