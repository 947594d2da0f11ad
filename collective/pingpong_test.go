package collective

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/testutil"
)

// The ways BenchmarkObjectPingPongProcesses sends a []float32 between
// two processes: typed (comm.Send and comm.Recv into a buffer kept from
// call to call), as an object into a variable kept from call to call
// (SendObject and RecvObjectInto), and as an object into a new value
// each time (RecvObject).
var pingPongWays = []string{"typed", "into", "object"}

// pingPongCtlTag carries rank 0's requests to the echoing rank: a way,
// a size and a number of round trips; way -1 ends it.
const pingPongCtlTag = 1 << 20

// BenchmarkObjectPingPongProcesses times round trips of a []float32
// between two processes over shared memory and tcp, as typed messages and
// as objects, so that the object calls compare with mpi4py's pickled
// send and recv (bench/reference/mpi4py_bench.py -c pingpong), which
// also runs two processes. An operation is one round trip. Each
// transport runs twice, as comm's BenchmarkTwoProcess does: with the
// processes where the kernel puts them, at the GOMAXPROCS that Init
// leaves them (their share of the CPUs), and "bound", each started on a
// CPU of its own at GOMAXPROCS=1, as gocoll run and mpirun start two
// ranks on a host of two CPUs, and as mpi4py's processes run under
// mpirun (testutil.RunBound).
func BenchmarkObjectPingPongProcesses(b *testing.B) {
	for _, tr := range []string{"shm", "tcp", "shm/bound", "tcp/bound"} {
		b.Run(tr, func(b *testing.B) {
			tr, bound := strings.CutSuffix(tr, "/bound")
			if !bound && testutil.InBoundRun() {
				return // a bound case's child: the pattern that picks it picks this level too
			}
			// Bound, each case runs in a child started bound, which
			// starts the echoing rank.
			delegate := bound && !testutil.InBoundRun()
			ctx := context.Background()
			var c *comm.Comm
			ask := func(way, size, iters int) {
				req := binary.LittleEndian.AppendUint64(nil, uint64(way))
				req = binary.LittleEndian.AppendUint64(req, uint64(size))
				req = binary.LittleEndian.AppendUint64(req, uint64(iters))
				require.NoError(b, c.Send(ctx, 1, pingPongCtlTag, req))
			}
			if !delegate {
				c = startPingPongPeer(b, tr, bound)
				defer ask(-1, 0, 0)
			}
			procs := runtime.GOMAXPROCS(0) // what Init left this rank
			for _, bytes := range []int{64 << 10, 1 << 20} {
				for way, name := range pingPongWays {
					caseName := fmt.Sprintf("%s/%dKiB", name, bytes>>10)
					if delegate {
						b.Run(caseName, testutil.RunBound)
						continue
					}
					b.Run(caseName, func(b *testing.B) {
						defer testutil.SetProcs(procs)()
						buf := make([]float32, bytes/4)
						trips := func(n int) error {
							ask(way, bytes, n)
							for range n {
								if err := pingPongTrip(ctx, c, 1, name, &buf, true); err != nil {
									return err
								}
							}
							return nil
						}
						// Untimed round trips warm links and pools and let
						// the processes settle (testutil.SettleFor).
						require.NoError(b, testutil.Settle(testutil.SettleFor, trips))
						b.SetBytes(int64(bytes))
						b.ReportAllocs()
						b.ResetTimer()
						if err := trips(b.N); err != nil {
							b.Fatal(err)
						}
					})
				}
			}
		})
	}
}

// pingPongTrip is one side of a round trip with peer: the sender sends
// *buf and then receives it back, the other the reverse.
func pingPongTrip(ctx context.Context, c *comm.Comm, peer int, way string, buf *[]float32, sender bool) error {
	for turn := range 2 {
		var err error
		switch send := (turn == 0) == sender; {
		case send && way == "typed":
			err = comm.Send(ctx, c, peer, 0, *buf)
		case send:
			err = SendObject(ctx, c, peer, 0, *buf)
		case way == "typed":
			_, err = comm.Recv(ctx, c, peer, 0, *buf)
		case way == "into":
			_, err = RecvObjectInto(ctx, c, peer, 0, buf)
		default:
			*buf, _, err = RecvObject[[]float32](ctx, c, peer, 0)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startPingPongPeer starts this test binary again as rank 1 of a job of
// two over transport tr, echoing what rank 0 asks (pingPongPeer), and
// returns rank 0's communicator, closed, and the peer waited for, when
// the benchmark ends. With bound, the peer starts on CPU 1 at
// GOMAXPROCS=1, beside this process, which RunBound started so on CPU 0.
func startPingPongPeer(b *testing.B, tr string, bound bool) *comm.Comm {
	peer := testutil.StartPeer(b, workerVar+"=pingpong", tr, bound)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := comm.Init(ctx)
	if err != nil {
		peer.Process.Kill()
		peer.Wait()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.Close()
		if err := peer.Wait(); err != nil {
			b.Errorf("the echoing rank: %v", err)
		}
	})
	return c
}

// pingPongPeer is rank 1 of BenchmarkObjectPingPongProcesses: it echoes
// the round trips rank 0 asks for until rank 0 says it is done.
func pingPongPeer() error {
	ctx := context.Background()
	c, err := comm.Init(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	req := make([]byte, 24)
	for {
		if _, err := c.Recv(ctx, 0, pingPongCtlTag, req); err != nil {
			return err
		}
		way := int64(binary.LittleEndian.Uint64(req))
		if way < 0 {
			return nil
		}
		buf := make([]float32, binary.LittleEndian.Uint64(req[8:])/4)
		for range binary.LittleEndian.Uint64(req[16:]) {
			if err := pingPongTrip(ctx, c, 0, pingPongWays[way], &buf, false); err != nil {
				return err
			}
		}
	}
}
