//go:build linux

package shm

import (
	"testing"
	"time"

	"github.com/gocoll/gocoll/internal/transport"
)

// RefuseCMA makes the reading side of l act from now on as if
// process_vm_readv were refused (EPERM). Call it from the goroutine that
// reads l.
func RefuseCMA(l transport.Link) { l.(*link).refuseCMA = true }

// CMARefused reports whether the writing side of l has been told that
// CMA is refused. Call it while no WriteMessage of l runs.
func CMARefused(l transport.Link) bool { return l.(*link).cmaRefused }

// SetAckSpin makes the writers of CMA payloads poll for the reader's
// answers for d before they park, until the test ends.
func SetAckSpin(t testing.TB, d time.Duration) {
	ackSpinFor = func(int) time.Duration { return d }
	t.Cleanup(func() { ackSpinFor = ackSpin })
}

// SetHelping makes f run each time a writer starts to answer a request
// for help (see helping), until the test ends.
func SetHelping(t testing.TB, f func()) { setHook(t, &helping, f) }

// RefuseHelp makes the writing side of l act from now on as if
// process_vm_writev were refused. Call it while no WriteMessage of l
// runs.
func RefuseHelp(l transport.Link) { l.(*link).refuseHelp = true }

// Helped reports whether the writing side of l wrote its share of the
// last CMA payload it sent into the reader's memory. Call it while no
// WriteMessage of l runs.
func Helped(l transport.Link) bool { return l.(*link).out.helped.Load() == helpDone }

// Unhelped reports whether the reading side of l has stopped asking the
// writer for help. Call it from the goroutine that reads l.
func Unhelped(l transport.Link) bool { return l.(*link).unhelped }

// ReaderSleepers is how many goroutines sleep on l's reader's bell: the
// one that reads, and one in WaitReadable.
func ReaderSleepers(l transport.Link) int { return int(l.(*link).in.consumer.Sleepers.Load()) }

// WriterParked reports whether a writer of l sleeps on its bell.
func WriterParked(l transport.Link) bool { return l.(*link).out.producer.Sleepers.Load() != 0 }

// MaxChunk is the most a write publishes of a message at a time.
const MaxChunk = maxChunk

// SetParkTimeout makes the links made from now on park for at most d
// at a time, until the test ends.
func SetParkTimeout(t testing.TB, d time.Duration) {
	old := parkTimeout
	parkTimeout = d
	t.Cleanup(func() { parkTimeout = old })
}

// RingSize is the ring size of the links that t dials.
func RingSize(t *Transport) int { return t.o.ringBytes() }

// SetPublished makes f run after every write publishes its message (see
// published) until the test ends.
func SetPublished(t testing.TB, f func()) { setHook(t, &published, f) }

// SetStreamed makes f run after every write publishes a chunk of a
// message it has not finished (see streamed) until the test ends.
func SetStreamed(t testing.TB, f func()) { setHook(t, &streamed, f) }

// SetWrote makes f run as every write of a payload that may go by CMA
// chooses its way (see wrote), until the test ends.
func SetWrote(t testing.TB, f func(cma bool)) { setHook(t, &wrote, f) }

// SetWaitsOnClosed makes f run each time a reader waiting for the
// writer's half finds the writer's side closed and waits on (see
// waitsOnClosed), until the test ends.
func SetWaitsOnClosed(t testing.TB, f func()) { setHook(t, &waitsOnClosed, f) }

// SetWaitsForReader makes f run each time a CMA write waiting for its
// reader looks whether to stop (see waitsForReader), until the test ends.
func SetWaitsForReader(t testing.TB, f func()) { setHook(t, &waitsForReader, f) }

// setHook sets the test hook *hook to f until the test ends.
func setHook[F any](t testing.TB, hook *F, f F) {
	*hook = f
	t.Cleanup(func() {
		var none F
		*hook = none
	})
}
