// Package testutil holds what the tests of several packages need: a
// buffer that goroutines write logs and output into, and a check that
// tests leave none of a package's goroutines behind.
package testutil

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"time"
)

// SyncBuffer is a bytes.Buffer that is safe for concurrent use, for logs
// and process output that tests read while others write.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Goroutines returns the stacks of the goroutines, other than the
// caller's and those running tests, with a frame that contains one of
// frames (for example "github.com/gocoll/gocoll/transport/"). "created by"
// lines do not count: they name a creator that may have ended long ago.
func Goroutines(frames ...string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 || strings.Contains(g, "\ntesting.tRunner(") {
			continue // the caller, or a test
		}
	lines:
		for _, line := range strings.Split(g, "\n") {
			if strings.HasPrefix(line, "created by ") || strings.Contains(line, "_test.") {
				continue
			}
			for _, f := range frames {
				if strings.Contains(line, f) {
					found = append(found, g)
					break lines
				}
			}
		}
	}
	return found
}

// Leaked waits up to timeout for the goroutines that Goroutines(frames...)
// finds to end, and returns the stacks of those that do not.
func Leaked(timeout time.Duration, frames ...string) []string {
	deadline := time.Now().Add(timeout)
	for {
		left := Goroutines(frames...)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}
