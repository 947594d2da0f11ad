//go:build !race

package kernel

// raceEnabled is true when the race detector is on (compress_race_test.go).
const raceEnabled = false
