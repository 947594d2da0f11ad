// Package testutil holds what the tests of several packages need: a
// buffer that goroutines write logs and output into; the second process
// of a two-process benchmark (StartPeer) and the run of such a benchmark
// in processes started on CPUs of their own, as a launcher that binds
// ranks starts them (RunBound); the checks every copy routine with
// copy's contract takes (CheckCopies); the state of a goroutine that
// went to sleep (Asleep); and how much of a mapping is on huge pages
// (AnonHugeKiB). (Goroutine leaks are go.uber.org/goleak's job.)
package testutil

import (
	"bytes"
	"sync"
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
