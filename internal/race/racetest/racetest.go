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
	"time"
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

// touchEvery is how often a racy child touches while hidden runs.
const touchEvery = 50 * time.Microsecond

// racyTries is how many racy children Run starts, one after another,
// until one reports the race. The detector may miss a race it was
// shown, and then does not say so: TestRaceReports/write of
// transport/shm saw none in a child about one run in 30 to 150 on a
// quiet two-vCPU VM (2026-11-30), and failed CI once, touches every
// touchEvery notwithstanding. At the worse of those rates, three
// children in a row miss it about one run in 27 000.
const racyTries = 3

// env names the mode and case that a child runs: "racy:name" or
// "ordered:name".
const env = "GOCOLL_RACETEST"

// Run is the whole test of a package's cases. In the test binary that go
// test started it runs every case in children: with touch on another
// goroutine at the same time as hidden (and again while hidden runs),
// which must be reported as a race naming the case's Frame by one of up
// to racyTries children, and with touch over before hidden starts, which
// must not be reported by the one child that runs it. In a child it
// runs the case its environment names. t must be a top-level test.
func Run(t *testing.T, cases []Case) {
	if want, ok := os.LookupEnv(env); ok {
		child(t, cases, want)
		return
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var out string
			var err error
			for range racyTries {
				if out, err = runChild(t, "racy:"+c.Name); strings.Contains(out, "WARNING: DATA RACE") && shows(out, c.Frame) {
					break
				}
			}
			if !strings.Contains(out, "WARNING: DATA RACE") || !shows(out, c.Frame) {
				t.Errorf("unsynchronised accesses, %d children: want a race naming %s, got (%v):\n%s", racyTries, c.Frame, err, out)
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

// child runs the case and mode that want names. Ordered runs touch once,
// on a goroutine of its own, and hidden once touch is over, when the
// channel's close orders the two. Racy runs hidden while that goroutine
// touches again and again until hidden returns. One touch before hidden
// would do in principle, but the detector forgets: it keeps a bounded
// history, and the synchronisation of a call that waits (a link's
// spinning, its parking) can wear it out before the hidden access is
// reported, leaving a race with an access it no longer remembers
// unreported. A touch after the report meets an access that is fresh.
func child(t *testing.T, cases []Case, want string) {
	mode, name, _ := strings.Cut(want, ":")
	for _, c := range cases {
		if c.Name != name {
			continue
		}
		touch, hidden := c.Prepare(t)
		if mode == "ordered" {
			done := make(chan struct{})
			go func() {
				defer close(done)
				touch()
			}()
			<-done
			hidden()
			return
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			// Not in a tight loop: the detector must still hold the
			// history of the touch it finds in its shadow memory, and a
			// goroutine that touches without pause soon writes that
			// history out of its bounded trace.
			tick := time.NewTicker(touchEvery)
			defer tick.Stop()
			for {
				touch()
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		hidden()
		close(stop)
		<-done
		return
	}
	t.Fatalf("%s=%s names no case", env, want)
}
