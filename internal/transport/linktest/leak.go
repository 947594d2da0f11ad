package linktest

import (
	"testing"

	"go.uber.org/goleak"
)

// CheckGoroutines makes t fail if, when t and its subtests are done,
// goroutines started since CheckGoroutines was called remain; goleak
// gives them a moment to end first. Goroutines of other tests count too,
// so the check does not work across tests that run in parallel.
func CheckGoroutines(t testing.TB) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}
