package testutil

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Asleep waits until a goroutine whose stack holds every one of frames
// is off the processor, and returns its state as a goroutine dump gives
// it ("select", "sleep", "syscall", …). A goroutine in a system call
// counts as off the processor here, though the runtime lets it keep its
// processor until the runtime's monitor takes it back: tests that check
// that a waiter gives its processor up assert the state is not syscall.
// It fails t after a few seconds.
func Asleep(t testing.TB, frames ...string) string {
	t.Helper()
	buf := make([]byte, 1<<20)
	for range 5000 {
		if state := goroutineState(buf, frames); state != "" && state != "running" && state != "runnable" {
			return state
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no goroutine with %q in its stack went to sleep", frames)
	return ""
}

// goroutineState returns the state of the first goroutine whose stack
// holds every one of frames, or "" when none does.
func goroutineState(buf []byte, frames []string) string {
	dump := string(buf[:runtime.Stack(buf, true)])
	for _, g := range strings.Split(dump, "\n\n") {
		if !containsAll(g, frames) {
			continue
		}
		// "goroutine 7 [select, 2 minutes]:"
		_, state, _ := strings.Cut(g, "[")
		state, _, _ = strings.Cut(state, "]")
		state, _, _ = strings.Cut(state, ",")
		return state
	}
	return ""
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
