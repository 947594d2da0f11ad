package core

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/testutil"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/mem"
	"github.com/gocoll/gocoll/internal/wire"
)

// TestSteadyStateAllocatesNothing: once links and pools are warm, a send
// and a receive allocate nothing, whichever of them comes first, also
// when a message is larger than a tcp link's buffer and a spinning
// receiver leaves it to the link's reading goroutine.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items); make test runs this without -race")
	}
	for _, c := range []struct {
		tr   string
		size int
	}{{"mem", 4096}, {"tcp", 4096}, {"tcp", 256 << 10}} {
		t.Run(fmt.Sprintf("%s/%d", c.tr, c.size), func(t *testing.T) {
			cs, err := NewLocal(2, WithTransport(c.tr), WithSpin(DefaultSpin))
			require.NoError(t, err)
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			ctx := context.Background()
			const rounds = 200
			echo := make(chan error, 1)
			go func() {
				buf := make([]byte, c.size)
				for range rounds + 1 {
					if _, err := cs[1].Recv(ctx, 0, 1, buf); err != nil {
						echo <- err
						return
					}
					if err := cs[1].Send(ctx, 0, 2, buf); err != nil {
						echo <- err
						return
					}
				}
				echo <- nil
			}()
			out, in := make([]byte, c.size), make([]byte, c.size)
			roundTrip := func() {
				require.NoError(t, cs[0].Send(ctx, 1, 1, out))
				_, err := cs[0].Recv(ctx, 1, 2, in)
				require.NoError(t, err)
			}
			roundTrip() // warm-up: dial, pools
			allocs := testing.AllocsPerRun(rounds-1, roundTrip)
			require.NoError(t, <-echo)
			require.Zero(t, allocs, "allocations per round trip")
		})
	}
}

// TestBrokenLinkFailsEveryCall: when the link from a rank breaks as if its
// process died, a receive pending on another rank fails too, naming the
// lost rank, and so does the next call.
func TestBrokenLinkFailsEveryCall(t *testing.T) {
	cs, err := NewLocal(3)
	require.NoError(t, err)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cs[2].Send(ctx, 0, 0, []byte("hi")))
	_, err = cs[0].Recv(ctx, 2, 0, make([]byte, 2))
	require.NoError(t, err)

	pending := make(chan error, 1)
	go func() {
		_, err := cs[0].Recv(ctx, 1, 5, make([]byte, 8))
		pending <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cs[0].ep.inboxes[2].mu.Lock()
	link := cs[0].ep.inboxes[2].link
	cs[0].ep.inboxes[2].mu.Unlock()
	require.NoError(t, mem.Break(link))

	err = <-pending
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 2, pe.Rank)
	require.ErrorIs(t, err, ErrPeerLost)
	require.ErrorContains(t, err, "from rank 1")
	require.ErrorContains(t, err, "rank 2 lost")
	require.ErrorIs(t, cs[0].Send(ctx, 1, 0, nil), ErrPeerLost)
}

// TestLinksAreLazy: a job that has not talked has no links; a message
// opens exactly one link, which both ranks send on and read.
func TestLinksAreLazy(t *testing.T) {
	for _, tr := range []string{"mem", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			const n = 8
			cs, err := NewLocal(n, WithTransport(tr))
			require.NoError(t, err)
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			links := func() (out, in int) {
				for _, c := range cs {
					for i := range c.ep.peers {
						if c.ep.peers[i].link.Load() != nil {
							out++
						}
					}
					for i := range c.ep.inboxes {
						c.ep.inboxes[i].mu.Lock()
						if c.ep.inboxes[i].link != nil {
							in++
						}
						c.ep.inboxes[i].mu.Unlock()
					}
				}
				return out, in
			}
			out, in := links()
			require.Zero(t, out+in, "links before any traffic")

			ctx := context.Background()
			require.NoError(t, cs[3].Send(ctx, 6, 0, []byte("x")))
			_, err = cs[6].Recv(ctx, 3, 0, make([]byte, 1))
			require.NoError(t, err)
			out, in = links()
			require.Equal(t, 2, out, "links sent on")
			require.Equal(t, 2, in, "links read")
			require.NotNil(t, cs[3].ep.peers[6].link.Load())
			require.True(t, cs[3].ep.peers[6].link.Load().Link == cs[3].ep.inboxes[6].link, "rank 3 reads the link it sends on")
			require.True(t, cs[6].ep.peers[3].link.Load().Link == cs[6].ep.inboxes[3].link, "rank 6 reads the link it sends on")
		})
	}
}

// TestBlockedSendTimesOut: a receiver that posts nothing while its early
// messages fill the budget stops reading, which blocks the sender's write
// once the link is full. The communicator's timeout cuts the write, the
// sender's error says so, and the receiver learns that the sender
// aborted.
func TestBlockedSendTimesOut(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		transport string
		msgSize   int // large enough that a few fill the link
	}{
		{"mem", 1 << 10},
		{"tcp", 1 << 20},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			var logs testutil.SyncBuffer
			cs, err := NewLocal(2, WithTransport(tc.transport), WithUnexpectedLimit(1024), WithTimeout(timeout),
				WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			require.NoError(t, err)
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			ctx := context.Background()
			msg := make([]byte, tc.msgSize)
			var sendErr error
			// Bounded: a loopback socket holds a few MiB at most.
			for tag := range 256 {
				if sendErr = cs[0].Send(ctx, 1, tag, msg); sendErr != nil {
					break
				}
			}
			// The send fails blaming the rank that took nothing in, without
			// asking the store to abort the job first (which may take seconds).
			require.ErrorIs(t, sendErr, ErrTimeout)
			var pe *PeerError
			require.ErrorAs(t, sendErr, &pe)
			require.Equal(t, []int{1}, pe.Ranks)
			require.ErrorContains(t, sendErr, "rank 1 took in nothing for 300ms")
			require.NotContains(t, logs.String(), "aborted the job")

			// Rank 1 sees the link from rank 0 cut.
			_, err = cs[1].Recv(ctx, 0, 999, msg)
			require.ErrorAs(t, err, &pe)
			require.Equal(t, []int{0}, pe.Ranks)
		})
	}
}

// TestTimeoutBlamesTheSilentRank: rank 0 times out waiting for rank 2,
// which never sends; its error names rank 2, and when it closes, rank 1
// (waiting on rank 0) is told that rank 2 was lost, not that rank 0
// closed its communicator.
func TestTimeoutBlamesTheSilentRank(t *testing.T) {
	const timeout = 300 * time.Millisecond
	cs, err := NewLocal(3, WithTimeout(timeout), WithTransport("tcp"))
	require.NoError(t, err)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	ctx := context.Background()
	// Rank 0 has a link to rank 1, on which its failure can travel.
	require.NoError(t, cs[0].Send(ctx, 1, 1, []byte{1}))
	_, err = cs[1].Recv(ctx, 0, 1, make([]byte, 1))
	require.NoError(t, err)

	_, err = cs[0].Recv(ctx, 2, 0, make([]byte, 1))
	require.ErrorIs(t, err, ErrTimeout)
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, []int{2}, pe.Ranks)
	require.ErrorContains(t, err, "no message from rank 2 for 300ms")

	got := make(chan error, 1)
	go func() {
		_, err := cs[1].Recv(ctx, 0, 0, make([]byte, 1))
		got <- err
	}()
	require.NoError(t, cs[0].Close())
	err = <-got
	require.NotErrorIs(t, err, ErrPeerClosed)
	require.ErrorAs(t, err, &pe)
	require.Equal(t, []int{2}, pe.Ranks)
	require.ErrorContains(t, err, "reported by rank 0")
}

// TestBadHeaderIsTheCallersError: a send whose header does not validate is
// refused locally as invalid input; the link and the peer are unaffected.
func TestBadHeaderIsTheCallersError(t *testing.T) {
	cs, err := NewLocal(2)
	require.NoError(t, err)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	ctx := context.Background()
	tests := []struct {
		name    string
		h       wire.Header
		payload []byte
		want    string
	}{
		{"length disagrees", wire.Header{Kind: wire.KindSend, DType: kernel.Uint8, Length: 4, Count: 4, Root: -1}, []byte("ab"), "header says 4 payload bytes but the payload has 2"},
		{"no element type", wire.Header{Kind: wire.KindSend, Root: -1}, nil, "unknown element type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.h
			err := cs[0].SendHeader(ctx, 1, &h, tt.payload)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			require.NotErrorIs(t, err, ErrPeerLost)
		})
	}
	require.NoError(t, cs[0].Send(ctx, 1, 0, []byte("fine")))
	buf := make([]byte, 4)
	_, err = cs[1].Recv(ctx, 0, 0, buf)
	require.NoError(t, err)
}

// onePairLink requires that every rank of cs that has a link to another
// sends on the link it reads from that rank, and returns how many such
// links the job holds, counting each end. A rank that adopts a link
// publishes it for sending before its accept loop starts reading it, so
// a read link may lag a moment behind: onePairLink waits for it, up to
// the watchdog.
func onePairLink(t *testing.T, cs []*Comm) int {
	t.Helper()
	ends := 0
	for _, c := range cs {
		for j := range c.ep.peers {
			var out, in transport.Link
			deadline := time.Now().Add(10 * time.Second)
			for {
				if o := c.ep.peers[j].link.Load(); o != nil {
					out = o.Link
				}
				ib := &c.ep.inboxes[j]
				ib.mu.Lock()
				in = ib.link
				ib.mu.Unlock()
				if out == in || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if out == nil {
				require.Nil(t, in, "rank %d reads a link from rank %d that it does not send on", c.Rank(), j)
				continue
			}
			require.True(t, out == in, "rank %d sends to rank %d on another link than it reads", c.Rank(), j)
			ends++
		}
	}
	return ends
}

// TestHeadToHeadDial: two ranks that dial each other at once keep one
// link, the lower rank's. Rank 1 dials first and rank 0's accept loop
// holds that link unanswered while rank 0 dials rank 1, which adopts rank
// 0's link; rank 0 then declines rank 1's, and rank 1's dial returns rank
// 0's link.
func TestHeadToHeadDial(t *testing.T) {
	for _, tr := range []string{"mem", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			cs, err := NewLocal(2, WithTransport(tr), WithTimeout(20*time.Second))
			require.NoError(t, err)
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			held, release := make(chan struct{}), make(chan struct{})
			testHookAfterAccept = func(ep *endpoint) {
				if ep == cs[0].ep {
					close(held)
					<-release
				}
			}
			defer func() { testHookAfterAccept = func(*endpoint) {} }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			type dialed struct {
				l   transport.Link
				err error
			}
			fromRank1 := make(chan dialed, 1)
			go func() {
				l, err := cs[1].ep.linkTo(ctx, 0)
				fromRank1 <- dialed{l, err}
			}()
			<-held
			l, err := cs[0].ep.linkTo(ctx, 1)
			require.NoError(t, err, "rank 0's dial, which rank 1 adopts")
			close(release)
			d := <-fromRank1
			require.NoError(t, d.err, "rank 1's dial, declined for rank 0's")
			require.True(t, cs[1].ep.peers[0].link.Load().Link == d.l, "rank 1's dial returns the pair's link, the one it adopted")
			require.True(t, cs[0].ep.peers[1].link.Load().Link == l, "rank 0 kept its own link")
			require.Equal(t, 2, onePairLink(t, cs), "link ends")

			for _, d := range [][2]int{{0, 1}, {1, 0}} {
				require.NoError(t, cs[d[0]].Send(ctx, d[1], 7, []byte("hi")))
				_, err := cs[d[1]].Recv(ctx, d[0], 7, make([]byte, 2))
				require.NoError(t, err, "rank %d to rank %d", d[0], d[1])
			}
		})
	}
}

// TestEveryoneDialsAtOnce: the ranks of a job all send to each other at
// once before any link exists, so that most pairs dial head to head; every
// message arrives, in order, and each pair ends with one link.
func TestEveryoneDialsAtOnce(t *testing.T) {
	for _, tr := range []string{"mem", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			const n, msgs = 8, 20
			cs, err := NewLocal(n, WithTransport(tr), WithTimeout(time.Minute))
			require.NoError(t, err)
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			ctx := context.Background()
			errs := make(chan error, n)
			for _, c := range cs {
				go func() {
					errs <- func() error {
						for i := range msgs {
							for d := range n {
								if d != c.Rank() {
									if err := c.Send(ctx, d, 3, []byte{byte(i)}); err != nil {
										return err
									}
								}
							}
						}
						b := make([]byte, 1)
						for s := range n {
							for i := range msgs {
								if s == c.Rank() {
									break
								}
								if _, err := c.Recv(ctx, s, 3, b); err != nil {
									return err
								}
								if b[0] != byte(i) {
									return fmt.Errorf("rank %d got message %d from rank %d where %d was due", c.Rank(), b[0], s, i)
								}
							}
						}
						return nil
					}()
				}()
			}
			for range n {
				require.NoError(t, <-errs)
			}
			require.Equal(t, n*(n-1), onePairLink(t, cs), "link ends")
		})
	}
}
