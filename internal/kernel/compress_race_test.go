//go:build race

package kernel

// raceEnabled is true when the race detector is on. Then sync.Pool drops
// a quarter of what is put in it, to shake out bugs, and the zstd coders,
// which keep their tables in pools, allocate now and then.
const raceEnabled = true
