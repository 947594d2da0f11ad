package linktest

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// leakPrefix marks the goroutines CheckGoroutines looks for: those with a
// frame in gocoll's transports.
const leakPrefix = "github.com/gocoll/gocoll/transport/"

// CheckGoroutines makes t fail if, when t and its subtests are done,
// goroutines running code of gocoll's transport packages remain. It waits
// up to five seconds for them to end first. Goroutines of tests are
// ignored, so the check does not work across tests that run in parallel.
func CheckGoroutines(t testing.TB) {
	t.Cleanup(func() {
		var left []string
		deadline := time.Now().Add(5 * time.Second)
		for {
			left = transportGoroutines()
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(left) > 0 {
			t.Errorf("%d goroutines of the transport outlived the test:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
	})
}

// transportGoroutines returns the stacks of the goroutines, other than the
// caller's and those of tests, that run transport code.
func transportGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := bytes.Split(buf, []byte("\n\n"))
	var left []string
	for _, s := range stacks[1:] { // the first is the caller's
		g := string(s)
		if strings.Contains(g, "\ntesting.tRunner(") {
			continue
		}
		for _, line := range strings.Split(g, "\n") {
			// Frames are "pkg.Func(args)"; "created by" lines name
			// the creator, which may be transport code of a
			// goroutine that ended long ago.
			if strings.HasPrefix(line, leakPrefix) && !strings.Contains(line, "_test.") && !strings.HasPrefix(line, leakPrefix+"linktest.") {
				left = append(left, g)
				break
			}
		}
	}
	return left
}
