package testutil

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"

	"github.com/gocoll/gocoll/internal/launch"
)

// StartPeer starts this test binary again as rank 1 of a job of two
// processes on this machine over transport, with worker ("NAME=value",
// which sends the binary to the peer's code) in its environment, and sets
// tb's environment so that comm.Init in this process joins the job as
// rank 0: for benchmarks of two processes. With bound, the two run on a
// CPU each at GOMAXPROCS=1, as gocoll run and mpirun place two ranks on
// a host of two CPUs, for benchmarks that compare with programs a
// launcher binds; tb's cleanup gives this process its CPUs and
// GOMAXPROCS back. The caller waits for the peer once rank 0 is done,
// and kills it if rank 0 cannot join.
func StartPeer(tb testing.TB, worker, transport string, bound bool) *exec.Cmd {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	port, err := launch.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	env := map[string]string{"GOCOLL_SIZE": "2", "GOCOLL_ADDR": "127.0.0.1:" + strconv.Itoa(port),
		"GOCOLL_SECRET": launch.NewSecret(), "GOCOLL_TRANSPORT": transport}
	peer := exec.Command(exe, "-test.run=^$")
	peer.Env = append(os.Environ(), worker, "GOCOLL_RANK=1")
	for k, v := range env {
		peer.Env = append(peer.Env, k+"="+v)
	}
	peer.Stderr = os.Stderr
	start := peer.Start
	if bound {
		start = func() error { return startBound(tb, peer) }
	}
	if err := start(); err != nil {
		tb.Fatal(err)
	}
	env["GOCOLL_RANK"] = "0"
	for k, v := range env {
		tb.Setenv(k, v)
	}
	return peer
}

// startBound starts peer on CPU 1 and binds this process to CPU 0, each
// at GOMAXPROCS=1, until tb's cleanup.
func startBound(tb testing.TB, peer *exec.Cmd) error {
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
