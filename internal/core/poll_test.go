//go:build linux && !netpoll

package core

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPolledLinkDelivers: over tcp, whether waiting callers take their
// messages off the link themselves (spin) or the link's reading goroutine
// hands every message over (no spin), every message arrives intact and
// to its receive. The messages mix every way a polled message arrives:
// empty, small, partly arrived, larger than the link's buffer (which a
// spinning caller leaves to the reading goroutine), and early messages
// past the unexpected-message limit, for which a caller that found them
// has no room.
func TestPolledLinkDelivers(t *testing.T) {
	for _, tr := range pollTransports {
		t.Run(tr, func(t *testing.T) {
			sizes := []int{0, 8, 3000, 200 << 10, 9000, 60000, 1}
			const (
				messages  = 120
				receivers = 4 // receiving goroutines; receiver g takes the tags g, g+receivers, ...
			)
			payload := func(tag, n int) []byte {
				b := make([]byte, n)
				for i := range b {
					b[i] = byte(tag*7 + i)
				}
				return b
			}
			for _, spin := range []time.Duration{0, DefaultSpin, MaxSpin} {
				t.Run(fmt.Sprintf("spin=%v", spin), func(t *testing.T) {
					cs := pollJob(t, tr, 2, WithSpin(spin), WithUnexpectedLimit(16<<10))
					ctx := context.Background()
					// Open the link, so that the receivers find out whether it is
					// polled.
					require.NoError(t, cs[1].Send(ctx, 0, messages, nil))
					_, err := cs[0].Recv(ctx, 1, messages, nil)
					require.NoError(t, err)
					require.Equal(t, spin > 0, cs[0].ep.inboxes[1].polled.Load() != nil, "link polled")

					sent := make(chan error, 1)
					go func() {
						for tag := range messages {
							if err := cs[1].Send(ctx, 0, tag, payload(tag, sizes[tag%len(sizes)])); err != nil {
								sent <- err
								return
							}
						}
						sent <- nil
					}()
					var wg sync.WaitGroup
					errs := make(chan error, receivers)
					for g := range receivers {
						wg.Go(func() {
							for tag := g; tag < messages; tag += receivers {
								want := payload(tag, sizes[tag%len(sizes)])
								got := make([]byte, len(want))
								st, err := cs[0].Recv(ctx, 1, tag, got)
								n := st.Bytes
								if err != nil {
									errs <- fmt.Errorf("tag %d: %w", tag, err)
									return
								}
								if n != len(want) || string(got) != string(want) {
									errs <- fmt.Errorf("tag %d: got %d bytes, not the %d sent", tag, n, len(want))
									return
								}
							}
						})
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						t.Error(err)
					}
					require.NoError(t, <-sent)
				})
			}
		})
	}
}

// TestPolledLinkStalls: a spinning caller that takes an early message off
// the link for which there is no room leaves it to the link's reading
// goroutine, which delivers it once room is made; nothing is lost or
// reordered. Receive 2 spins while tags 0, 1 and 2 arrive; with room for
// one early message, tag 1 has none until another goroutine receives tag 0.
func TestPolledLinkStalls(t *testing.T) {
	for _, tr := range pollTransports {
		t.Run(tr, func(t *testing.T) {
			cs := pollJob(t, tr, 2, WithSpin(MaxSpin), WithUnexpectedLimit(1))
			ctx := context.Background()
			require.NoError(t, cs[1].Send(ctx, 0, 9, nil)) // open the link
			_, err := cs[0].Recv(ctx, 1, 9, nil)
			require.NoError(t, err)

			received := make(chan string, 3)
			recv := func(tag int) {
				b := make([]byte, 16)
				st, err := cs[0].Recv(ctx, 1, tag, b)
				n := st.Bytes
				if err != nil {
					received <- err.Error()
					return
				}
				received <- string(b[:n])
			}
			go recv(2)
			time.Sleep(time.Millisecond) // let receive 2 start spinning
			for tag, msg := range []string{"zero", "one", "two"} {
				require.NoError(t, cs[1].Send(ctx, 0, tag, []byte(msg)))
			}
			time.Sleep(20 * time.Millisecond) // let tag 1 find no room
			go recv(0)
			first, second := <-received, <-received
			require.ElementsMatch(t, []string{"zero", "two"}, []string{first, second})
			go recv(1)
			require.Equal(t, "one", <-received)
		})
	}
}

// TestCallerLeavesTheSocketAlone: a caller that takes a whole message
// off its link, with nothing more in the link's buffer, returns to see
// whether it was the one it waits for instead of looking at the socket
// again, a system call that would nearly always find nothing.
func TestCallerLeavesTheSocketAlone(t *testing.T) {
	for _, tr := range pollTransports {
		t.Run(tr, func(t *testing.T) {
			cs, polled := spinningPair(t, tr)
			ctx := context.Background()
			require.NoError(t, cs[1].Send(ctx, 0, 9, nil)) // open the link
			_, err := cs[0].Recv(ctx, 1, 9, nil)
			require.NoError(t, err)
			tp, ib := polled(), &cs[0].ep.inboxes[1]
			p := ib.polled.Load()
			require.NotNil(t, tp)
			require.NotNil(t, p)

			// Hold the reading side, so that only this test reads the link, and
			// wait until the message is whole in the link's buffer.
			p.mu.Lock()
			defer p.mu.Unlock()
			require.NoError(t, cs[1].Send(ctx, 0, 1, []byte("8 bytes!")))
			var h wire.Header
			for i := 0; ; i++ {
				a, err := p.link.Poll(&h)
				require.NoError(t, err)
				if a == transport.Whole {
					break
				}
				require.Less(t, i, 5000, "the message did not arrive")
				time.Sleep(time.Millisecond)
			}
			buf := make([]byte, 8)
			r, err := cs[0].Irecv(1, 1, buf)
			require.NoError(t, err)

			tp.polls.Store(0)
			left, err := cs[0].ep.drain(1, ib, p, false)
			require.NoError(t, err)
			require.Equal(t, kept, left)
			require.Equal(t, int64(1), tp.polls.Load(), "Poll calls: the message's, and none after it")
			st, err := r.Wait(ctx)
			n := st.Bytes
			require.NoError(t, err)
			require.Equal(t, "8 bytes!", string(buf[:n]))
		})
	}
}

// TestSpinYieldsWhenOversubscribed: ranks that outnumber their machine's
// CPUs hand the CPU over between looks while they spin; others keep it.
// Ranks that claim hosts of their own on one machine still share its
// CPUs (TestCrowded has machines apart). NewLocal's ranks, which share a
// process, spin only when told to.
func TestSpinYieldsWhenOversubscribed(t *testing.T) {
	over := runtime.NumCPU() + 1
	tests := []struct {
		name      string
		n         int
		opts      []Option
		wantSpin  time.Duration
		wantYield bool
	}{
		{"ranks of one process", 2, nil, 0, false},
		{"spin chosen", 1, []Option{WithSpin(DefaultSpin)}, DefaultSpin, false},
		{"oversubscribed", over, []Option{WithSpin(MaxSpin)}, MaxSpin, true},
		{"a rank per host of one machine", over, []Option{WithSpin(DefaultSpin), WithHostIdentity(func(r int) string { return fmt.Sprint("host", r) })}, DefaultSpin, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range pollJob(t, "tcp", tt.n, tt.opts...) {
				require.Equal(t, tt.wantSpin, c.ep.opts.spin, "rank %d", c.Rank())
				require.Equal(t, tt.wantYield, c.ep.opts.yield, "rank %d", c.Rank())
			}
		})
	}
}

// TestPolledLinkBreaks: a link that breaks while a caller spins on it
// fails the caller's receive with the peer named lost, whether the
// caller finds the break or the link's reading goroutine does: "spinning
// caller" breaks the link under Poll, "peer gone" closes the peer's end
// (its process died: no goodbye); either may find either.
func TestPolledLinkBreaks(t *testing.T) {
	for _, tr := range pollTransports {
		t.Run(tr, func(t *testing.T) {
			broken := errors.New("connection reset by a test")
			tests := []struct {
				name   string
				break_ func(cs []*Comm, p *testPoller) error
			}{
				{"spinning caller", func(_ []*Comm, p *testPoller) error {
					// A socket that fails becomes readable too, which wakes the
					// reading goroutine should the caller not be spinning.
					p.fail.Store(&broken)
					p.Wake()
					return nil
				}},
				{"peer gone", func(cs []*Comm, _ *testPoller) error { return cs[1].ep.peers[0].link.Load().Close() }},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					cs, polled := spinningPair(t, tr)
					ctx := context.Background()
					require.NoError(t, cs[1].Send(ctx, 0, 1, []byte("hi")))
					_, err := cs[0].Recv(ctx, 1, 1, make([]byte, 2))
					require.NoError(t, err)

					got := make(chan error, 1)
					go func() {
						_, err := cs[0].Recv(ctx, 1, 2, make([]byte, 8))
						got <- err
					}()
					time.Sleep(time.Millisecond) // into the receive's spin
					require.NoError(t, tt.break_(cs, polled()))
					err = <-got
					var pe *PeerError
					require.ErrorAs(t, err, &pe)
					require.Equal(t, 1, pe.Rank)
					require.ErrorIs(t, err, ErrPeerLost)
				})
			}
		})
	}
}

// TestLargeMessagesNeedNoWake: a spinning caller that finds a message
// larger than the link's buffer leaves it to the link's reading goroutine
// without waking it (Wake allocates): the rest of the message, still in
// the socket or on its way, wakes it.
func TestLargeMessagesNeedNoWake(t *testing.T) {
	// Over tcp: a shm link reads a large payload straight out of the
	// writer's memory, whole at once.
	cs, polled := spinningPair(t, "tcp")
	ctx := context.Background()
	const rounds = 200
	sent := make(chan error, 1)
	go func() {
		msg := make([]byte, 256<<10)
		for range rounds {
			if err := cs[1].Send(ctx, 0, 1, msg); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	buf := make([]byte, 256<<10)
	for range rounds {
		_, err := cs[0].Recv(ctx, 1, 1, buf)
		require.NoError(t, err)
	}
	require.NoError(t, <-sent)
	require.Positive(t, polled().larges.Load(), "no message was larger than the link buffer")
	require.Zero(t, polled().wakes.Load(), "Wake calls")
}

// pollTransports are the transports whose links are polled.
var pollTransports = []string{"tcp", "shm"}

// spinningPair is a pollJob of two ranks over tr that spin as long as
// they may, whose polled links are read through testPollers; polled
// returns the one through which rank 0 reads rank 1, once a message has
// opened it.
func spinningPair(t *testing.T, tr string) (cs []*Comm, polled func() *testPoller) {
	t.Helper()
	var fromRank1 atomic.Pointer[testPoller]
	testHookPolled = func(l transport.Poller) transport.Poller {
		p := &testPoller{Poller: l}
		if l.Peer() == 1 {
			fromRank1.Store(p)
		}
		return p
	}
	t.Cleanup(func() { testHookPolled = func(l transport.Poller) transport.Poller { return l } })
	return pollJob(t, tr, 2, WithSpin(MaxSpin)), fromRank1.Load
}

// openSpinningPair is spinningPair with the rests stretched out of reach
// (stretchRest) and the link from rank 1 to rank 0 open: one message has
// gone over it.
func openSpinningPair(t *testing.T, tr string) (cs []*Comm, polled func() *testPoller) {
	t.Helper()
	stretchRest(t)
	cs, polled = spinningPair(t, tr)
	ctx := context.Background()
	require.NoError(t, cs[1].Send(ctx, 0, 1, nil))
	_, err := cs[0].Recv(ctx, 1, 1, nil)
	require.NoError(t, err)
	return cs, polled
}

// testPoller is a polled link whose Poll fails once fail is set and,
// while hold is set, waits until hold is closed. It counts its Poll
// calls, the Large arrivals it reports and its Wake calls, and says
// whether a WaitReadable is in progress.
type testPoller struct {
	transport.Poller
	fail                 atomic.Pointer[error]
	hold                 atomic.Pointer[chan struct{}]
	larges, wakes, polls atomic.Int64
	waiting              atomic.Bool
}

func (p *testPoller) WaitReadable() error {
	p.waiting.Store(true)
	defer p.waiting.Store(false)
	return p.Poller.WaitReadable()
}

func (p *testPoller) Poll(h *wire.Header) (transport.Arrival, error) {
	if err := p.fail.Load(); err != nil {
		return transport.Nothing, *err
	}
	p.polls.Add(1)
	if hold := p.hold.Load(); hold != nil {
		<-*hold
	}
	a, err := p.Poller.Poll(h)
	if a == transport.Large {
		p.larges.Add(1)
	}
	return a, err
}

func (p *testPoller) Wake() {
	p.wakes.Add(1)
	p.Poller.Wake()
}

// TestReaderRestsWhileACallerSpins: a link's reading goroutine that
// wakes while a caller spins on the link, and finds nothing the caller
// has not taken, rests instead of waiting for arrivals again, and goes on
// resting after the caller took its message: otherwise every arrival
// would wake it (a thread's wake-up per message, on the caller's CPU or
// the peer's). A caller about to park ends the rest (watchAll).
func TestReaderRestsWhileACallerSpins(t *testing.T) {
	for _, tr := range pollTransports {
		t.Run(tr, func(t *testing.T) {
			cs, polled := openSpinningPair(t, tr)
			tp, p := polled(), cs[0].ep.inboxes[1].polled.Load()

			restWhileSpinning(t, cs, 0, 1)
			require.True(t, p.resting.Load(), "the reading goroutine stopped resting when the caller was done")
			require.False(t, tp.waiting.Load(), "the resting reading goroutine waits for arrivals")

			cs[0].ep.watchAll()
			waitFor(t, "the reading goroutine to watch its link again", func() bool { return !p.resting.Load() && tp.waiting.Load() })
		})
	}
}

// TestSpinningCallerLetsGoroutinesRun: at GOMAXPROCS=1 a caller that
// spins for a message lets the process's other goroutines run while it
// spins (it yields every yieldAfter, not after every look): the one that
// sends the message runs, and finds the caller still spinning rather
// than parked at the end of its window.
func TestSpinningCallerLetsGoroutinesRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, tr := range pollTransports {
		t.Run(tr, func(t *testing.T) {
			cs, _ := openSpinningPair(t, tr)
			ctx := context.Background()
			ep, p := cs[0].ep, cs[0].ep.inboxes[1].polled.Load()

			parkedWhenSent := make(chan int32, 1)
			go func() {
				for p.spinners.Load() == 0 && ep.parked.Load() == 0 {
					runtime.Gosched()
				}
				parkedWhenSent <- ep.parked.Load()
				assert.NoError(t, cs[1].Send(ctx, 0, 2, []byte("wake up")))
			}()
			_, err := cs[0].Recv(ctx, 1, 2, make([]byte, 8))
			require.NoError(t, err)
			require.Zero(t, <-parkedWhenSent, "the sending goroutine ran only once the caller had parked")
		})
	}
}

// TestWritersFacingEachOtherAreRead: two ranks whose links' reading
// goroutines rest (their callers spun) then send each other a message
// before either receives: one larger than the sockets and rings hold
// with the receives posted, and, with none posted, messages that a shm
// link sends by CMA (whose writer waits for the reader). Each writer
// finds its link full, or waits for the reader, and has the links
// watched (OnWriteBlock), so both messages get through; the rest's time
// limit is stretched out of reach.
func TestWritersFacingEachOtherAreRead(t *testing.T) {
	for _, tr := range pollTransports {
		for _, tc := range []struct {
			size   int
			posted bool
		}{{64 << 20, true}, {256 << 10, false}, {4 << 20, false}} {
			t.Run(fmt.Sprintf("%s/%dKiB/posted=%v", tr, tc.size>>10, tc.posted), func(t *testing.T) {
				stretchRest(t)
				cs := pollJob(t, tr, 2, WithSpin(MaxSpin))
				ctx := context.Background()
				restBoth(t, cs)

				errs := make(chan error, 2)
				for r, c := range cs {
					go func() { errs <- sendFacing(ctx, c, r, tc.size, tc.posted) }()
				}
				for range cs {
					require.NoError(t, <-errs)
				}
			})
		}
	}
}

// sendFacing is rank r's part of TestWritersFacingEachOtherAreRead: it
// sends size bytes to the other rank and receives as many from it,
// posting the receive first or not.
func sendFacing(ctx context.Context, c *Comm, r, size int, posted bool) error {
	out, in := make([]byte, size), make([]byte, size)
	out[size-1] = byte(r + 1)
	var err error
	if posted {
		var rq *Request
		if rq, err = c.Irecv(1-r, 3, in); err == nil {
			if err = c.Send(ctx, 1-r, 3, out); err == nil {
				_, err = rq.Wait(ctx)
			}
		}
	} else if err = c.Send(ctx, 1-r, 3, out); err == nil {
		_, err = c.Recv(ctx, 1-r, 3, in)
	}
	if err == nil && in[size-1] != byte(2-r) {
		err = fmt.Errorf("rank %d received %d, not %d", r, in[size-1], 2-r)
	}
	return err
}

// TestWaitOutlastingTheSpinParks: a caller whose message takes longer
// than the spin window stops spinning and parks, so that a rank that
// waits long does not hold a CPU; and it asks the resting reading
// goroutine of its link to watch first, or nobody would read the
// message. The caller's first look at the link is held until the test
// has seen it spinning; from then on only the window can send it to
// park, since the reading goroutine rests and nothing arrives. A spin
// without a bound fails the test, which waits seconds for the park.
func TestWaitOutlastingTheSpinParks(t *testing.T) {
	for _, tr := range pollTransports {
		t.Run(tr, func(t *testing.T) {
			for _, spin := range []time.Duration{DefaultSpin, MaxSpin} {
				t.Run(fmt.Sprintf("spin=%v", spin), func(t *testing.T) {
					stretchRest(t)
					cs, polled := spinningPair(t, tr)
					ctx := context.Background()
					restBoth(t, cs)
					ep, tp := cs[0].ep, polled()
					p := ep.inboxes[1].polled.Load()
					ep.opts.spin = spin
					hold := make(chan struct{})
					release := sync.OnceFunc(func() { close(hold) })
					t.Cleanup(release) // before the job closes, should the test fail while Poll waits
					tp.hold.Store(&hold)
					tp.polls.Store(0)
					got := make(chan error, 1)
					go func() {
						_, err := cs[0].Recv(ctx, 1, 4, make([]byte, 8))
						got <- err
					}()
					waitFor(t, "the receive to look at its link", func() bool { return tp.polls.Load() > 0 })
					require.Equal(t, int32(1), p.spinners.Load(), "spinning receives")
					release()
					waitFor(t, "the receive to park", func() bool { return ep.parked.Load() == 1 })
					require.Zero(t, p.spinners.Load(), "spinning receives")
					require.NoError(t, cs[1].Send(ctx, 0, 4, []byte("late one")))
					require.NoError(t, <-got)
				})
			}
		})
	}
}

// stretchRest makes the reading goroutines' rests end only when asked,
// for the test t.
func stretchRest(t *testing.T) {
	old := restMax
	restMax = time.Hour
	t.Cleanup(func() { restMax = old })
}

// restBoth makes the reading goroutines of both ranks' links rest.
func restBoth(t *testing.T, cs []*Comm) {
	t.Helper()
	restWhileSpinning(t, cs, 0, 1)
	restWhileSpinning(t, cs, 1, 0)
}

// restWhileSpinning makes the reading goroutine of rank dst's link from
// rank src rest: a receive at dst spins, the link's reading goroutine is
// woken as an arrival would wake it and finds the caller spinning; then
// src sends what the receive waits for.
func restWhileSpinning(t *testing.T, cs []*Comm, dst, src int) {
	t.Helper()
	ctx := context.Background()
	ep := cs[dst].ep
	if ep.inboxes[src].polled.Load() == nil { // open the link
		require.NoError(t, cs[src].Send(ctx, dst, 0, nil))
		_, err := cs[dst].Recv(ctx, src, 0, nil)
		require.NoError(t, err)
	}
	p := ep.inboxes[src].polled.Load()
	require.NotNil(t, p, "rank %d's link from rank %d is not polled", dst, src)
	spin := ep.opts.spin
	ep.opts.spin = time.Hour
	got := make(chan error, 1)
	// A receive that finds the reading goroutine at work on the link
	// parks at once instead of spinning: at its first look (the reading
	// goroutine takes the last message, say), or later, when a rest ends
	// by itself (restMax) and the reading goroutine takes the link. Such
	// a receive is given its message, and another one tries again.
	spinning := func() bool { return p.spinners.Load() > 0 }
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 100, "the reading goroutine never rested while a receive spun")
		go func() {
			_, err := cs[dst].Recv(ctx, src, 0, nil)
			got <- err
		}()
		if holdsWithin(100*time.Millisecond, spinning) {
			p.link.Wake()
			if holdsWithin(100*time.Millisecond, p.resting.Load) {
				break
			}
		}
		require.NoError(t, cs[src].Send(ctx, dst, 0, nil))
		require.NoError(t, <-got)
	}
	require.NoError(t, cs[src].Send(ctx, dst, 0, nil))
	require.NoError(t, <-got)
	ep.opts.spin = spin
}

// holdsWithin reports whether cond holds within d, looking every
// millisecond.
func holdsWithin(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// waitFor waits until cond holds, failing t after a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.True(t, holdsWithin(5*time.Second, cond), "waiting for %s", what)
}

// TestRestEndsByItself: a reading goroutine that rests and is asked by
// nobody watches its link again once restMax has passed, so that what
// arrives between calls (a failure, a goodbye) is seen without a call.
func TestRestEndsByItself(t *testing.T) {
	for _, tr := range pollTransports {
		t.Run(tr, func(t *testing.T) {
			cs, polled := spinningPair(t, tr)
			restWhileSpinning(t, cs, 0, 1)
			p := cs[0].ep.inboxes[1].polled.Load()
			waitFor(t, "the rest to end", func() bool { return !p.resting.Load() && polled().waiting.Load() })
		})
	}
}
