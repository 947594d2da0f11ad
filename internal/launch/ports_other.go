//go:build !linux

package launch

// ephemeralFrom is unknown here: FreePort asks for port 0.
func ephemeralFrom() (int, bool) { return 0, false }
