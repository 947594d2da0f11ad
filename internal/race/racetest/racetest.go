// Package racetest checks that the race detector reports an access it
// cannot see (assembly, a system call) once package race reports it. A
// race on purpose fails the race-enabled test binary that makes it, so
// Run makes each race in a child: the test binary again, running only
// the calling test, told by its environment which case to run and how.
// The parent reads the child's output.
package racetest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Case is a hidden access and a plain Go access that conflicts with it.
type Case struct {
	Name string
	// Frame is the function, as the report writes it (kernel.inChunks,
	// tcp.(*sockReader).readNow), that the race's report must show: the
	// one that reports the hidden access.
	Frame string
	// Prepare makes what the two accesses share and returns them: touch,
	// made in Go, and hidden, which the detector sees only through a
	// report. It runs in the child, on the test's goroutine.
	Prepare func(t *testing.T) (touch, hidden func())
}

// env names the mode and case that a child runs: "racy:name" or
// "ordered:name".
const env = "GOCOLL_RACETEST"

// Run is the whole test of a package's cases. In the test binary that go
// test started it runs every case twice, each time in a child: with touch
// on another goroutine at the same time as hidden, which must be
// reported as a race naming the case's Frame, and with touch over before
// hidden starts, which must not. In a child it runs the case its
// environment names. t must be a top-level test.
func Run(t *testing.T, cases []Case) {
	if want, ok := os.LookupEnv(env); ok {
		child(t, cases, want)
		return
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			out, err := runChild(t, "racy:"+c.Name)
			if !strings.Contains(out, "WARNING: DATA RACE") || !shows(out, c.Frame) {
				t.Errorf("unsynchronised accesses: want a race naming %s, got (%v):\n%s", c.Frame, err, out)
			}
			out, err = runChild(t, "ordered:"+c.Name)
			if err != nil || strings.Contains(out, "DATA RACE") {
				t.Errorf("ordered accesses: want no race, got (%v):\n%s", err, out)
			}
		})
	}
}

// shows reports whether a report in out has a frame of fn, which it
// writes as fn(), or fn[...]() if fn is generic.
func shows(out, fn string) bool {
	return strings.Contains(out, fn+"(") || strings.Contains(out, fn+"[")
}

// runChild runs the test that called Run (t's parent) in a child, which
// runs the case and mode that want names, and returns its output.
func runChild(t *testing.T, want string) (string, error) {
	top, _, _ := strings.Cut(t.Name(), "/")
	cmd := exec.Command(os.Args[0], "-test.run=^"+top+"$", "-test.count=1", "-test.timeout=1m")
	// The detector sleeps a second before a clean exit, by default.
	cmd.Env = append(os.Environ(), env+"="+want, "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// child runs the case and mode that want names: touch on a goroutine of
// its own, and hidden either at once (racy) or once touch is over
// (ordered), when the channel's close orders the two.
func child(t *testing.T, cases []Case, want string) {
	mode, name, _ := strings.Cut(want, ":")
	for _, c := range cases {
		if c.Name != name {
			continue
		}
		touch, hidden := c.Prepare(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			touch()
		}()
		if mode == "ordered" {
			<-done
		}
		hidden()
		<-done
		return
	}
	t.Fatalf("%s=%s names no case", env, want)
}
