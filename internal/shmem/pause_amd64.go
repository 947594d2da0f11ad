//go:build amd64 && gc && !purego && !noasm

package shmem

// spinPause tells the core that it is in a spin-wait loop (PAUSE): it
// waits a few dozen cycles before the next poll, which keeps the polled
// line from being pulled back while another core writes it, and leaves
// the loop without the pipeline flush that a load racing with that write
// costs otherwise.
func spinPause()
