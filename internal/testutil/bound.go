package testutil

import (
	"os/exec"
	"runtime"
	"testing"

	"github.com/gocoll/gocoll/internal/launch"
)

// StartBound starts peer on CPU 1 and binds this process to CPU 0, each
// at GOMAXPROCS=1, as gocoll run and mpirun place two ranks on a host of
// two CPUs: for benchmarks of two processes that compare with programs a
// launcher binds. tb's cleanup gives this process its CPUs and
// GOMAXPROCS back.
func StartBound(tb testing.TB, peer *exec.Cmd) error {
	peer.Env = append(peer.Env, "GOMAXPROCS=1")
	procs := runtime.GOMAXPROCS(1)
	tb.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	restore, err := bindProcess(0)
	if err != nil {
		return err
	}
	tb.Cleanup(restore)
	return launch.StartOnCPU(1, peer.Start)
}
