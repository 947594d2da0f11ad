package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// splitPayload is a split message's head and body, patterned by seed so
// that a byte out of place shows.
func splitPayload(headLen, bodyLen int, seed byte) (head, body []byte) {
	head, body = make([]byte, headLen), make([]byte, bodyLen)
	for i := range head {
		head[i] = seed + byte(i*7)
	}
	for i := range body {
		body[i] = seed ^ byte(i*13+i>>8)
	}
	return head, body
}

// splitJob is a job of two ranks over transport tr ("tcp spinning":
// tcp with callers that spin), closed when the test ends.
func splitJob(t *testing.T, tr string) []*Comm {
	t.Helper()
	opts := []Option{WithTransport(tr), WithTimeout(time.Minute)}
	if tr == "tcp spinning" {
		// Waiting callers read their sockets themselves, as ranks in
		// processes of their own do by default.
		opts = []Option{WithTransport("tcp"), WithTimeout(time.Minute), WithSpin(DefaultSpin)}
	}
	cs, err := NewLocal(2, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { closeAtOnce(cs) })
	return cs
}

// placement records what a Placer was given and gives the rest room of
// its own, as an object's memory would.
type placement struct {
	head []byte
	rest []byte
	err  error // returned instead of room
}

func (p *placement) place(head []byte, rest int) ([]byte, error) {
	p.head = append([]byte(nil), head...)
	if p.err != nil {
		return nil, p.err
	}
	p.rest = make([]byte, rest)
	return p.rest, nil
}

// TestSplitMessages: a split message reaches a placed receive as its head
// (in the receive's buffer, handed to the Placer) and its body (in the
// memory the Placer gave), and any other receive as one payload, head
// then body, whether the receive was posted before the message came or
// the message waited for it, from another rank or from this one, through
// a named or a wildcard receive, over every transport, at sizes that take
// each transport's small and large paths.
func TestSplitMessages(t *testing.T) {
	sizes := []struct{ head, body int }{{1, 0}, {13, 100}, {13, 64 << 10}, {5000, 1 << 20}}
	for _, tr := range []string{"mem", "tcp", "tcp spinning", "shm"} {
		t.Run(tr, func(t *testing.T) {
			cs := splitJob(t, tr)
			ctx := context.Background()
			for _, sz := range sizes {
				for _, from := range []int{1, 0} {
					for _, how := range []string{"posted", "waiting", "wildcard posted", "wildcard waiting", "plain"} {
						t.Run(fmt.Sprintf("%d+%d/from%d/%s", sz.head, sz.body, from, how), func(t *testing.T) {
							head, body := splitPayload(sz.head, sz.body, byte(sz.body+from))
							src, tag := from, 4
							if how == "wildcard posted" || how == "wildcard waiting" {
								src, tag = AnySource, AnyTag
							}
							buf := make([]byte, sz.head)
							var p placement
							place := p.place
							if how == "plain" {
								buf, place = make([]byte, sz.head+sz.body), nil
							}
							var r *Request
							if how == "posted" || how == "wildcard posted" {
								r = cs[0].post(src, int64(tag), buf, place)
							}
							require.NoError(t, cs[from].SendSplit(ctx, 0, 4, head, body))
							if r == nil {
								_, err := cs[0].Probe(ctx, from, 4) // it has arrived
								require.NoError(t, err)
								r = cs[0].post(src, int64(tag), buf, place)
							}
							st, err := r.Wait(ctx)
							require.NoError(t, err)
							require.Equal(t, Status{Source: from, Tag: 4, Bytes: sz.head + sz.body}, st)
							if how == "plain" {
								require.True(t, bytes.Equal(append(head, body...), buf), "payload")
								return
							}
							require.Equal(t, head, p.head, "head")
							require.True(t, bytes.Equal(body, p.rest), "body")
						})
					}
				}
			}
		})
	}
}

// TestSplitMessageFailures: a Placer's error fails its receive alone,
// which still counts the whole message, and the link goes on with the
// next message; a Placer that gives room of the wrong length is the
// library's bug, reported as such; a head that does not fit the
// receive's buffer truncates as a payload does, leaving the message for
// a receive with room.
func TestSplitMessageFailures(t *testing.T) {
	errRefused := errors.New("not my type")
	for _, tr := range []string{"mem", "tcp", "tcp spinning", "shm"} {
		t.Run(tr, func(t *testing.T) {
			cs := splitJob(t, tr)
			ctx := context.Background()
			for _, posted := range []bool{true, false} {
				t.Run(fmt.Sprintf("posted=%v", posted), func(t *testing.T) {
					receive := func(buf []byte, place Placer) (Status, error) {
						var r *Request
						if posted {
							r = cs[0].post(1, 2, buf, place)
						}
						head, body := splitPayload(9, 256<<10, 3)
						require.NoError(t, cs[1].SendSplit(ctx, 0, 2, head, body))
						require.NoError(t, cs[1].Send(ctx, 0, 2, []byte("next")))
						if r == nil {
							_, err := cs[0].Probe(ctx, 1, 2)
							require.NoError(t, err)
							r = cs[0].post(1, 2, buf, place)
						}
						st, err := r.Wait(ctx)
						next := make([]byte, 4)
						_, nerr := cs[0].Recv(ctx, 1, 2, next)
						require.NoError(t, nerr, "the message after")
						require.Equal(t, "next", string(next))
						return st, err
					}

					p := placement{err: errRefused}
					st, err := receive(make([]byte, 16), p.place)
					require.ErrorIs(t, err, errRefused)
					require.Equal(t, 9+256<<10, st.Bytes)

					st, err = receive(make([]byte, 16), func([]byte, int) ([]byte, error) { return make([]byte, 5), nil })
					require.ErrorIs(t, err, ErrInvalid)
					require.ErrorContains(t, err, "the placer gave 5 bytes for the 262144 after a message's head")
					require.Equal(t, 9+256<<10, st.Bytes)
				})
			}
			// A head longer than the buffer: truncated, and still there.
			head, body := splitPayload(40, 1000, 5)
			require.NoError(t, cs[1].SendSplit(ctx, 0, 6, head, body))
			var p placement
			_, err := cs[0].RecvPlaced(ctx, 1, 6, make([]byte, 39), p.place)
			var te *TruncateError
			require.ErrorAs(t, err, &te)
			require.Equal(t, TruncateError{Len: 1040, Cap: 39}, *te)
			st, err := cs[0].RecvPlaced(ctx, 1, 6, make([]byte, 40), p.place)
			require.NoError(t, err)
			require.Equal(t, 1040, st.Bytes)
			require.Equal(t, body, p.rest)
		})
	}
}

// TestSplitSendsKeepTheirOrder: a split send to a rank with Isends in
// flight goes behind them, as Send does.
func TestSplitSendsKeepTheirOrder(t *testing.T) {
	cs := splitJob(t, "tcp")
	ctx := context.Background()
	first, _ := splitPayload(1<<20, 0, 1)
	r, err := cs[1].Isend(0, 3, first)
	require.NoError(t, err)
	head, body := splitPayload(7, 70000, 2)
	require.NoError(t, cs[1].SendSplit(ctx, 0, 3, head, body))
	_, err = r.Wait(ctx)
	require.NoError(t, err)
	got := make([]byte, 1<<20)
	st, err := cs[0].Recv(ctx, 1, 3, got)
	require.NoError(t, err)
	require.Equal(t, first, got[:st.Bytes])
	var p placement
	_, err = cs[0].RecvPlaced(ctx, 1, 3, make([]byte, 7), p.place)
	require.NoError(t, err)
	require.Equal(t, body, p.rest)
}

// TestSplitSendRefusesAHugeHead: a head the header cannot say is the
// caller's error, and nothing is sent.
func TestSplitSendRefusesAHugeHead(t *testing.T) {
	cs := splitJob(t, "mem")
	err := cs[1].SendSplit(context.Background(), 0, 1, make([]byte, 1<<24), nil)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "a head of 16777216 bytes exceeds 16777215")
	_, ok, err := cs[0].Iprobe(AnySource, AnyTag)
	require.NoError(t, err)
	require.False(t, ok)
}
