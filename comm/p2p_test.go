package comm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
)

func TestPingPong(t *testing.T) {
	for _, tr := range transports {
		for n := 1; n <= 8; n++ {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := newJob(t, n, comm.WithTransport(tr))
				sizes := []int{0, 1, 100, 64 << 10, 1<<20 + 3}
				runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					me, size := c.Rank(), c.Size()
					next, prev := (me+1)%size, (me+size-1)%size
					for seq, sz := range sizes {
						buf := make([]byte, sz)
						// Post first, then send: the ring cannot deadlock
						// and the payload lands straight in buf.
						req, err := c.Irecv(prev, seq, buf)
						if err != nil {
							return err
						}
						if err := c.Send(ctx, next, seq, payload(me, next, seq, sz)); err != nil {
							return err
						}
						st, err := req.Wait(ctx)
						got := st.Bytes
						if err != nil {
							return err
						}
						if got != sz {
							return fmt.Errorf("message %d: got %d bytes, want %d", seq, got, sz)
						}
						if err := checkPayload(buf, prev, me, seq); err != nil {
							return err
						}
					}
					return nil
				})
			})
		}
	}
}

// TestTagsOutOfOrder: every rank sends many tags to every rank, itself
// included, and receives them in reverse, so every message but the last
// takes the unexpected path.
func TestTagsOutOfOrder(t *testing.T) {
	const tags = 200
	for _, tr := range transports {
		for n := 1; n <= 8; n++ {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := newJob(t, n, comm.WithTransport(tr))
				runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					me := c.Rank()
					// Everybody sends to everybody else, all tags.
					errc := make(chan error, 1)
					go func() {
						for tag := range tags {
							for dst := range c.Size() {
								if err := c.Send(ctx, dst, tag, payload(me, dst, tag, 100+tag)); err != nil {
									errc <- err
									return
								}
							}
						}
						errc <- nil
					}()
					for src := range c.Size() {
						for tag := tags - 1; tag >= 0; tag-- {
							buf := make([]byte, 100+tag)
							if _, err := c.Recv(ctx, src, tag, buf); err != nil {
								return err
							}
							if err := checkPayload(buf, src, me, tag); err != nil {
								return err
							}
						}
					}
					return <-errc
				})
			})
		}
	}
}

// TestPostedBeforeSend posts every receive, then lets the sender go: every
// payload is read straight into its receive buffer.
func TestPostedBeforeSend(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr))
			const tags = 50
			const ready = 1000
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 0 {
					if _, err := c.Recv(ctx, 1, ready, nil); err != nil {
						return err
					}
					for tag := tags - 1; tag >= 0; tag-- {
						if err := c.Send(ctx, 1, tag, payload(0, 1, tag, 4096)); err != nil {
							return err
						}
					}
					return nil
				}
				reqs := make([]*comm.Request, tags)
				bufs := make([][]byte, tags)
				for tag := range tags {
					bufs[tag] = make([]byte, 4096)
					var err error
					if reqs[tag], err = c.Irecv(0, tag, bufs[tag]); err != nil {
						return err
					}
				}
				if err := c.Send(ctx, 0, ready, nil); err != nil {
					return err
				}
				for tag := range tags {
					if _, err := reqs[tag].Wait(ctx); err != nil {
						return err
					}
					if err := checkPayload(bufs[tag], 0, 1, tag); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// TestNonOvertaking: messages with one tag arrive in the order sent.
func TestNonOvertaking(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr))
			const count = 500
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 0 {
					for seq := range count {
						if err := c.Send(ctx, 1, 7, payload(0, 1, seq, 1+seq%300)); err != nil {
							return err
						}
					}
					return nil
				}
				for seq := range count {
					buf := make([]byte, 1+seq%300)
					if _, err := c.Recv(ctx, 0, 7, buf); err != nil {
						return err
					}
					if err := checkPayload(buf, 0, 1, seq); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

func TestTruncationKeepsMessage(t *testing.T) {
	for _, tr := range transports {
		for _, posted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/posted=%v", tr, posted), func(t *testing.T) {
				cs := newJob(t, 2, comm.WithTransport(tr))
				ctx := context.Background()
				msg := payload(0, 1, 0, 100)
				small := make([]byte, 10)
				if posted {
					req, err := cs[1].Irecv(0, 3, small)
					require.NoError(t, err)
					require.NoError(t, cs[0].Send(ctx, 1, 3, msg))
					_, err = req.Wait(ctx)
					assertTruncated(t, err)
				} else {
					require.NoError(t, cs[0].Send(ctx, 1, 3, msg))
					_, err := cs[1].Recv(ctx, 0, 3, small)
					assertTruncated(t, err)
				}
				big := make([]byte, 200)
				st, err := cs[1].Recv(ctx, 0, 3, big)
				n := st.Bytes
				require.NoError(t, err)
				require.Equal(t, 100, n)
				require.Equal(t, msg, big[:n])
			})
		}
	}
}

func assertTruncated(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, comm.ErrTruncated)
	var te *comm.TruncateError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 100, te.Len)
	assert.Equal(t, 10, te.Cap)
	assert.Contains(t, err.Error(), "100 bytes")
	assert.Contains(t, err.Error(), "10 bytes")
	assert.Contains(t, err.Error(), "from rank 0")
}

func TestSelfSend(t *testing.T) {
	cs := newJob(t, 1)
	ctx := context.Background()
	c := cs[0]
	require.NoError(t, c.Send(ctx, 0, 1, []byte("early")))
	req, err := c.Irecv(0, 2, make([]byte, 5))
	require.NoError(t, err)
	require.NoError(t, c.Send(ctx, 0, 2, []byte("later")))
	st, err := req.Wait(ctx)
	n := st.Bytes
	require.NoError(t, err)
	require.Equal(t, 5, n)
	buf := make([]byte, 5)
	_, err = c.Recv(ctx, 0, 1, buf)
	require.NoError(t, err)
	require.Equal(t, "early", string(buf))
}

func TestInvalidArguments(t *testing.T) {
	cs := newJob(t, 2)
	ctx := context.Background()
	c := cs[0]
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"send to rank 2", func() error { return c.Send(ctx, 2, 0, nil) }, "rank 2 is outside the communicator of 2 ranks"},
		{"send to rank -1", func() error { return c.Send(ctx, -1, 0, nil) }, "rank -1 is outside"},
		{"send negative tag", func() error { return c.Send(ctx, 1, -3, nil) }, "tag -3 is negative"},
		{"recv from rank 5", func() error { _, err := c.Recv(ctx, 5, 0, nil); return err }, "rank 5 is outside"},
		{"irecv negative tag", func() error { _, err := c.Irecv(1, -2, nil); return err }, "tag -2 is negative"},
		{"recv from rank -2", func() error { _, err := c.Recv(ctx, -2, 0, nil); return err }, "rank -2 is outside"},
		{"probe negative tag", func() error { _, _, err := c.Iprobe(comm.AnySource, -5); return err }, "tag -5 is negative"},
		{"send to AnySource", func() error { return c.Send(ctx, comm.AnySource, 0, nil) }, "rank -1 is outside"},
		{"send with AnyTag", func() error { return c.Send(ctx, 1, comm.AnyTag, nil) }, "tag -1 is negative"},
		{"isend to rank 2", func() error { _, err := c.Isend(2, 0, nil); return err }, "rank 2 is outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.ErrorIs(t, err, comm.ErrInvalid)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestContextCancelReturnsPromptly(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr))
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err := cs[1].Recv(ctx, 0, 9, make([]byte, 8))
			require.ErrorIs(t, err, context.Canceled)
			var oe *comm.OpError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, "recv", oe.Op)
			assert.Equal(t, 0, oe.Peer)

			// The withdrawn receive takes nothing: the communicator goes on.
			bg := context.Background()
			require.NoError(t, cs[0].Send(bg, 1, 9, []byte("after")))
			buf := make([]byte, 8)
			st, err := cs[1].Recv(bg, 0, 9, buf)
			n := st.Bytes
			require.NoError(t, err)
			require.Equal(t, "after", string(buf[:n]))
		})
	}
}

func TestCommunicatorTimeout(t *testing.T) {
	cs := newJob(t, 2, comm.WithTimeout(200*time.Millisecond))
	_, err := cs[0].Recv(context.Background(), 1, 0, nil)
	require.ErrorIs(t, err, comm.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var oe *comm.OpError
	require.ErrorAs(t, err, &oe)
	require.True(t, oe.Timeout())
}

// TestUnexpectedLimit: with room for two early messages, a receiver that
// takes the messages in order still gets all of them (the sender is held
// back, not refused), and one that waits for a message behind a full
// queue times out instead of hanging or growing the queue.
func TestUnexpectedLimit(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr), comm.WithUnexpectedLimit(1024))
			const count = 20
			sent := make(chan error, 1)
			go func() {
				for tag := range count {
					if err := cs[0].Send(context.Background(), 1, tag, payload(0, 1, tag, 512)); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			_, err := cs[1].Recv(ctx, 0, count-1, make([]byte, 512))
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)

			for tag := range count {
				buf := make([]byte, 512)
				_, err := cs[1].Recv(context.Background(), 0, tag, buf)
				require.NoError(t, err)
				require.NoError(t, checkPayload(buf, 0, 1, tag))
			}
			require.NoError(t, <-sent)
		})
	}
}

func TestAbortReachesEveryRank(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 4, comm.WithTransport(tr))
			// Rank 1 has talked to rank 2, so an abort frame reaches it;
			// ranks 0 and 3 only hear through the rendezvous.
			require.NoError(t, cs[2].Send(context.Background(), 1, 0, []byte("x")))
			_, err := cs[1].Recv(context.Background(), 2, 0, make([]byte, 1))
			require.NoError(t, err)

			errs := run(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 2 {
					time.Sleep(50 * time.Millisecond)
					c.Abort(errors.New("loss is NaN"))
					return nil
				}
				_, err := c.Recv(ctx, (c.Rank()+1)%4, 5, make([]byte, 8))
				return err
			})
			for r, err := range errs {
				if r == 2 {
					continue
				}
				require.ErrorIs(t, err, comm.ErrAborted, "rank %d", r)
				var ae *comm.AbortError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, 2, ae.Rank)
				assert.Contains(t, err.Error(), "loss is NaN")
				// The next call fails too, without waiting.
				err = cs[r].Send(context.Background(), 2, 0, nil)
				require.ErrorIs(t, err, comm.ErrAborted, "rank %d next call", r)
			}
		})
	}
}

func TestClose(t *testing.T) {
	cs := newJob(t, 2)
	ctx := context.Background()
	require.NoError(t, cs[1].Close())
	require.NoError(t, cs[1].Close(), "Close is idempotent")
	require.ErrorIs(t, cs[1].Send(ctx, 0, 0, nil), comm.ErrClosed)
	_, err := cs[1].Recv(ctx, 0, 0, nil)
	require.ErrorIs(t, err, comm.ErrClosed)
}

// TestPeerClosed: a receive from a rank that closed cleanly fails with
// ErrPeerClosed, after the messages it sent before closing.
func TestPeerClosed(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr))
			ctx := context.Background()
			require.NoError(t, cs[0].Send(ctx, 1, 0, []byte("last words")))
			require.NoError(t, cs[0].Close())
			buf := make([]byte, 16)
			st, err := cs[1].Recv(ctx, 0, 0, buf)
			n := st.Bytes
			require.NoError(t, err)
			require.Equal(t, "last words", string(buf[:n]))
			_, err = cs[1].Recv(ctx, 0, 1, buf)
			require.ErrorIs(t, err, comm.ErrPeerClosed)
			require.NotErrorIs(t, err, comm.ErrPeerLost)
		})
	}
}
