package linktest

import (
	"strings"
	"testing"
	"time"

	"github.com/gocoll/gocoll/internal/testutil"
)

// CheckGoroutines makes t fail if, when t and its subtests are done,
// goroutines running code of gocoll's transport packages (other than this
// suite's own) remain. It waits up to five seconds for them to end first.
// Goroutines of tests are ignored, so the check does not work across tests
// that run in parallel.
func CheckGoroutines(t testing.TB) {
	t.Cleanup(func() {
		var left []string
		for _, g := range testutil.Leaked(5*time.Second, "github.com/gocoll/gocoll/transport/") {
			if !onlyLinktest(g) {
				left = append(left, g)
			}
		}
		if len(left) > 0 {
			t.Errorf("%d goroutines of the transport outlived the test:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
	})
}

// onlyLinktest reports whether the transport frames of goroutine g are all
// this suite's own.
func onlyLinktest(g string) bool {
	for _, line := range strings.Split(g, "\n") {
		if strings.HasPrefix(line, "github.com/gocoll/gocoll/transport/") &&
			!strings.HasPrefix(line, "github.com/gocoll/gocoll/transport/linktest.") {
			return false
		}
	}
	return true
}
