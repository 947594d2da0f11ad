//go:build race

package collective

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts mean nothing under it, and it slows the largest test
// cases enough that the race run trims them.
const raceEnabled = true
