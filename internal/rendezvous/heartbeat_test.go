package rendezvous

import (
	"bufio"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/transport/auth"
)

// testPeriod is the heartbeat period of these tests: long enough that a
// loaded machine running the race detector does not miss beats, short
// enough to keep the tests quick.
const testPeriod = time.Second

// frozen joins rank over TCP, beats once and then says nothing more while
// its connection stays open, as a process stopped with SIGSTOP would.
func (f *fixture) frozen(t *testing.T, rank int) {
	t.Helper()
	conn, err := net.Dial("tcp", f.addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = handshakeClient(conn, f.addr, rank, f.srv.size, testSecret)
	require.NoError(t, err)
	require.NoError(t, conn.SetDeadline(time.Time{}))
	_, err = conn.Write(encodeRequest(request{typ: tBeat, period: testPeriod}))
	require.NoError(t, err)
}

// TestSilentRanksAreLost: a rank that stops beating is reported lost
// within a period, and ranks that stopped with it are reported at the
// same moment, so that survivors can name them all; a rank that beats is
// never reported, however long its owner does nothing else.
func TestSilentRanksAreLost(t *testing.T) {
	tests := []struct {
		name   string
		frozen []int
	}{
		{"one rank", []int{3}},
		{"two ranks of a host", []int{2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := serve(t, 4)
			c0 := f.join(t, 0)
			c1 := f.dial(t, 1)
			require.NoError(t, c1.StartHeartbeat(testPeriod))
			for i, r := range tt.frozen {
				if i > 0 {
					// The later ranks stop a third of a period later:
					// their own deadlines are that far off when the
					// first one's passes.
					time.Sleep(testPeriod / 3)
				}
				f.frozen(t, r)
			}
			if len(tt.frozen) == 1 {
				f.dial(t, 2) // joined, no heartbeat: never reported silent
			}
			for _, c := range []*Client{c0, c1} {
				var lost []int
				for i := range tt.frozen {
					ev := nextEvent(t, c)
					if i == 0 {
						// Reported together: when the first report
						// reaches a client, the store has recorded
						// every frozen rank lost, under the same hold
						// of its lock. (The reports themselves travel
						// as separate frames and may arrive apart.)
						f.srv.mu.Lock()
						for _, r := range tt.frozen {
							if f.srv.members[r].ev == nil {
								f.srv.mu.Unlock()
								t.Fatalf("rank %d heard of rank %d alone (%v); the store logged:\n%s", c.Rank(), ev.Rank, ev, f.logs)
							}
						}
						f.srv.mu.Unlock()
					}
					require.Equal(t, Lost, ev.Kind)
					require.Contains(t, ev.Reason, "sent nothing for 1s")
					lost = append(lost, ev.Rank)
				}
				slices.Sort(lost)
				require.Equal(t, tt.frozen, lost)
			}
			select {
			case ev := <-c1.Events():
				t.Fatalf("rank 1, which beats, heard %v", ev)
			default:
			}
		})
	}
}

// TestBeatingRankIsNotLost: a client that beats is not reported lost
// while its owner waits for several periods, and neither is the store.
func TestBeatingRankIsNotLost(t *testing.T) {
	f := serve(t, 2)
	c0 := f.join(t, 0)
	c1 := f.dial(t, 1)
	require.NoError(t, c1.StartHeartbeat(testPeriod))
	time.Sleep(3 * testPeriod)
	for _, c := range []*Client{c0, c1} {
		select {
		case ev := <-c.Events():
			t.Fatalf("rank %d heard %v", c.Rank(), ev)
		default:
		}
	}
	ctx, cancel := bg()
	defer cancel()
	require.NoError(t, c1.Set(ctx, "k", []byte("v")))
}

// TestSilentStoreIsLost: a client whose store stops answering its beats
// ends as if the connection broke, naming the silence.
func TestSilentStoreIsLost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	// A store that admits rank 1, welcomes it and then freezes.
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		p := auth.Params{Secret: testSecret, JobID: 7, Service: auth.ServiceStore}
		if _, err := auth.Server(c, p, func(int) error { return nil }); err != nil {
			return
		}
		if _, _, err := readFrame(bufio.NewReader(c), true); err != nil {
			return
		}
		if _, err := c.Write(welcomeFrame()); err != nil {
			return
		}
		io.Copy(io.Discard, c) // until the client hangs up
	}()
	ctx, cancel := bg()
	defer cancel()
	c, err := Dial(ctx, l.Addr().String(), 1, 2, testSecret)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.StartHeartbeat(MinHeartbeat))
	ev := nextEvent(t, c)
	require.Equal(t, Lost, ev.Kind)
	require.Equal(t, 0, ev.Rank)
	require.Contains(t, ev.Reason, "rank 0 sent nothing for 100ms")
	_, err = c.Get(ctx, "k")
	require.ErrorIs(t, err, ErrLost)
}

func TestStartHeartbeatRejects(t *testing.T) {
	f := serve(t, 2)
	c := f.dial(t, 1)
	for _, p := range []time.Duration{0, MinHeartbeat - 1, MaxHeartbeat + 1} {
		require.ErrorIs(t, c.StartHeartbeat(p), ErrInvalid, "period %v", p)
	}
	require.NoError(t, c.StartHeartbeat(testPeriod))
	require.ErrorIs(t, c.StartHeartbeat(testPeriod), ErrInvalid, "started twice")
	// In-process clients have nothing to beat for.
	require.NoError(t, f.join(t, 0).StartHeartbeat(testPeriod))
}
