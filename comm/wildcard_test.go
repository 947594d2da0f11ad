package comm_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
)

// wildMessage is the payload of message seq from src with tag: it
// carries all three, so the receiver can check what a wildcard receive
// says against what was sent.
func wildMessage(src, tag, seq int) []byte {
	b := make([]byte, 24)
	for i, v := range []int{src, tag, seq} {
		for j := range 8 {
			b[8*i+j] = byte(uint64(v) >> (8 * j))
		}
	}
	return b
}

func readWild(b []byte) (src, tag, seq int) {
	var v [3]int
	for i := range v {
		for j := range 8 {
			v[i] |= int(b[8*i+j]) << (8 * j)
		}
	}
	return v[0], v[1], v[2]
}

// TestWildcardReceives: every rank but 0 sends rank 0 many messages with
// tags in a shuffled order; rank 0 receives them with AnySource and
// AnyTag, with AnySource and a named tag, and with a named source and
// AnyTag, mixed with named receives. Every status must say what the
// payload says, and the messages of one sender with one tag must come in
// the order they were sent.
func TestWildcardReceives(t *testing.T) {
	const perSender, tags = 60, 4
	for _, tr := range transports {
		for _, n := range []int{2, 3, 5} {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := newJob(t, n, comm.WithTransport(tr))
				runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					if c.Rank() != 0 {
						rng := rand.New(rand.NewPCG(uint64(c.Rank()), 7))
						for seq := range perSender {
							tag := rng.IntN(tags)
							if err := c.Send(ctx, 0, tag, wildMessage(c.Rank(), tag, seq)); err != nil {
								return err
							}
						}
						return nil
					}
					last := map[[2]int]int{} // (src, tag) → last seq received
					buf := make([]byte, 64)
					for i := range (n - 1) * perSender {
						src, tag := comm.AnySource, comm.AnyTag
						switch i % 4 {
						case 1:
							tag = i / 4 % tags
						case 2:
							src = 1 + i/4%(n-1)
						case 3:
							// A named receive, when a message it takes is
							// still to come.
							src, tag = 1+i/4%(n-1), comm.AnyTag
						}
						st, err := recvWithin(ctx, c, src, tag, buf)
						if errors.Is(err, errNothingLeft) {
							continue
						}
						if err != nil {
							return fmt.Errorf("receive %d (source %d, tag %d): %w", i, src, tag, err)
						}
						gotSrc, gotTag, seq := readWild(buf[:st.Bytes])
						if st.Source != gotSrc || st.Tag != gotTag || st.Bytes != 24 {
							return fmt.Errorf("receive %d: status %+v for a message from rank %d with tag %d", i, st, gotSrc, gotTag)
						}
						if src != comm.AnySource && gotSrc != src || tag != comm.AnyTag && gotTag != tag {
							return fmt.Errorf("receive %d of source %d, tag %d took rank %d's message with tag %d", i, src, tag, gotSrc, gotTag)
						}
						key := [2]int{gotSrc, gotTag}
						if prev, ok := last[key]; ok && seq <= prev {
							return fmt.Errorf("rank %d's message %d with tag %d came after its message %d", gotSrc, seq, gotTag, prev)
						}
						last[key] = seq
					}
					// Whatever the named receives skipped is still there.
					for {
						st, ok, err := c.Iprobe(comm.AnySource, comm.AnyTag)
						if err != nil || !ok {
							return err
						}
						if _, err := c.Recv(ctx, st.Source, st.Tag, buf); err != nil {
							return err
						}
						gotSrc, gotTag, seq := readWild(buf)
						key := [2]int{gotSrc, gotTag}
						if prev, ok := last[key]; ok && seq <= prev {
							return fmt.Errorf("rank %d's message %d with tag %d came after its message %d", gotSrc, seq, gotTag, prev)
						}
						last[key] = seq
					}
				})
			})
		}
	}
}

var errNothingLeft = errors.New("nothing left to match")

// recvWithin receives from src with tag unless a named source or tag
// has nothing more to come: a probe of everything tells when the
// receive's own sources are done, which keeps the test free of timing.
func recvWithin(ctx context.Context, c *comm.Comm, src, tag int, buf []byte) (comm.Status, error) {
	if src == comm.AnySource && tag == comm.AnyTag {
		return c.Recv(ctx, src, tag, buf)
	}
	st, ok, err := c.Iprobe(src, tag)
	if err != nil {
		return st, err
	}
	if !ok {
		return st, errNothingLeft
	}
	return c.Recv(ctx, src, tag, buf)
}

// TestWildcardTakesEarliest: a wildcard receive takes the message that
// arrived first, whichever rank sent it; probes make the arrival order
// certain.
func TestWildcardTakesEarliest(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 3, comm.WithTransport(tr))
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				switch c.Rank() {
				case 0:
					for _, from := range []int{2, 1} {
						if err := c.Send(ctx, from, 0, nil); err != nil { // your turn
							return err
						}
						if _, err := c.Probe(ctx, from, 5); err != nil {
							return err
						}
					}
					buf := make([]byte, 8)
					for _, want := range []int{2, 1} {
						st, err := c.Recv(ctx, comm.AnySource, 5, buf)
						if err != nil {
							return err
						}
						if st.Source != want || buf[0] != byte(want) {
							return fmt.Errorf("wildcard receive took rank %d's message; rank %d's arrived first", st.Source, want)
						}
					}
					return nil
				default:
					if _, err := c.Recv(ctx, 0, 0, nil); err != nil {
						return err
					}
					return c.Send(ctx, 0, 5, []byte{byte(c.Rank())})
				}
			})
		})
	}
}

// TestWildcardPostingOrder: a message goes to the earliest posted receive
// that matches it, whether that one is named or a wildcard.
func TestWildcardPostingOrder(t *testing.T) {
	for _, tr := range transports {
		for _, namedFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/namedFirst=%v", tr, namedFirst), func(t *testing.T) {
				cs := newJob(t, 2, comm.WithTransport(tr))
				runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					if c.Rank() == 1 {
						if _, err := c.Recv(ctx, 0, 1, nil); err != nil { // both posted
							return err
						}
						for i := range 2 {
							if err := c.Send(ctx, 0, 5, []byte{byte(i)}); err != nil {
								return err
							}
						}
						return nil
					}
					named, wild := make([]byte, 1), make([]byte, 1)
					var reqs [2]*comm.Request
					var err error
					post := []func() error{
						func() error { reqs[0], err = c.Irecv(1, 5, named); return err },
						func() error { reqs[1], err = c.Irecv(comm.AnySource, comm.AnyTag, wild); return err },
					}
					if !namedFirst {
						post[0], post[1] = post[1], post[0]
					}
					for _, p := range post {
						if err := p(); err != nil {
							return err
						}
					}
					if err := c.Send(ctx, 1, 1, nil); err != nil {
						return err
					}
					if _, err := comm.WaitAll(ctx, reqs[:]); err != nil {
						return err
					}
					first := named
					if !namedFirst {
						first = wild
					}
					if first[0] != 0 {
						return fmt.Errorf("the receive posted first got message %d", first[0])
					}
					return nil
				})
			})
		}
	}
}

// TestProbe: Iprobe with nothing there, a blocking Probe that a later
// message ends, a receive of the probed message, and a wildcard receive
// too small for the message, which names both sizes and leaves it.
func TestProbe(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr))
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					if _, err := c.Recv(ctx, 0, 1, nil); err != nil {
						return err
					}
					return c.Send(ctx, 0, 9, make([]byte, 100))
				}
				if _, ok, err := c.Iprobe(comm.AnySource, comm.AnyTag); err != nil || ok {
					return fmt.Errorf("Iprobe with nothing sent: found %v, err %v", ok, err)
				}
				if err := c.Send(ctx, 1, 1, nil); err != nil {
					return err
				}
				st, err := c.Probe(ctx, comm.AnySource, comm.AnyTag)
				if err != nil {
					return err
				}
				if st != (comm.Status{Source: 1, Tag: 9, Bytes: 100}) {
					return fmt.Errorf("Probe: %+v", st)
				}
				_, err = c.Recv(ctx, comm.AnySource, comm.AnyTag, make([]byte, 10))
				var te *comm.TruncateError
				if !errors.As(err, &te) || !errors.Is(err, comm.ErrTruncated) || te.Len != 100 || te.Cap != 10 {
					return fmt.Errorf("a 100-byte message into 10 bytes: %v", err)
				}
				st, err = c.Recv(ctx, st.Source, st.Tag, make([]byte, 128))
				if err != nil {
					return err
				}
				if st.Bytes != 100 {
					return fmt.Errorf("received %d bytes of the probed message", st.Bytes)
				}
				if _, ok, err := c.Iprobe(1, comm.AnyTag); err != nil || ok {
					return fmt.Errorf("Iprobe after the receive: found %v, err %v", ok, err)
				}
				return nil
			})
		})
	}
}

// TestWildcardsStayInTheirCommunicator: a wildcard receive on one
// communicator never takes a message of another, nor the library's own.
func TestWildcardsStayInTheirCommunicator(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr))
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				sub, err := c.Split(ctx, 0, c.Rank())
				if err != nil {
					return err
				}
				defer sub.Close()
				if c.Rank() == 1 {
					if err := c.Send(ctx, 0, 3, []byte("parent")); err != nil {
						return err
					}
					if _, err := c.Recv(ctx, 0, 1, nil); err != nil {
						return err
					}
					return sub.Send(ctx, 0, 3, []byte("child"))
				}
				if _, err := c.Probe(ctx, 1, 3); err != nil {
					return err
				}
				if _, ok, err := sub.Iprobe(comm.AnySource, comm.AnyTag); err != nil || ok {
					return fmt.Errorf("the child's Iprobe saw the parent's message: %v %v", ok, err)
				}
				if err := c.Send(ctx, 1, 1, nil); err != nil {
					return err
				}
				buf := make([]byte, 16)
				st, err := sub.Recv(ctx, comm.AnySource, comm.AnyTag, buf)
				if err != nil {
					return err
				}
				if got := string(buf[:st.Bytes]); got != "child" {
					return fmt.Errorf("the child's wildcard receive took %q", got)
				}
				st, err = c.Recv(ctx, comm.AnySource, comm.AnyTag, buf)
				if err != nil {
					return err
				}
				if got := string(buf[:st.Bytes]); got != "parent" {
					return fmt.Errorf("the parent's wildcard receive took %q", got)
				}
				return nil
			})
		})
	}
}

// TestIsend: sends started with Isend, and Sends between them, arrive in
// the order they were issued; two ranks that Isend large messages to
// each other before either receives do not wait for one another.
func TestIsend(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr))
			const count = 40
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				peer := 1 - c.Rank()
				big := make([]byte, 4<<20)
				for i := range big {
					big[i] = byte(i * (c.Rank() + 1))
				}
				out, err := c.Isend(peer, 1, big)
				if err != nil {
					return err
				}
				in := make([]byte, len(big))
				if _, err := c.Recv(ctx, peer, 1, in); err != nil {
					return err
				}
				if st, err := out.Wait(ctx); err != nil || st.Bytes != len(big) {
					return fmt.Errorf("Isend's Wait: %+v, %v", st, err)
				}
				for i := range in {
					if in[i] != byte(i*(peer+1)) {
						return fmt.Errorf("byte %d of the exchange is %d", i, in[i])
					}
				}
				if c.Rank() == 0 {
					var reqs []*comm.Request
					for i := range count {
						if i%5 == 4 {
							if err := c.Send(ctx, 1, 2, []byte{byte(i)}); err != nil {
								return err
							}
							continue
						}
						r, err := c.Isend(1, 2, []byte{byte(i)})
						if err != nil {
							return err
						}
						reqs = append(reqs, r)
					}
					_, err := comm.WaitAll(ctx, reqs)
					return err
				}
				buf := make([]byte, 1)
				for i := range count {
					if _, err := c.Recv(ctx, 0, 2, buf); err != nil {
						return err
					}
					if buf[0] != byte(i) {
						return fmt.Errorf("message %d arrived %d-th", buf[0], i)
					}
				}
				return nil
			})
		})
	}
}

// TestWaitAny: receives posted from every rank complete in whatever
// order the messages come; WaitAny returns each once. A WaitAny whose
// context ends leaves the requests pending.
func TestWaitAny(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const n = 4
			cs := newJob(t, n, comm.WithTransport(tr))
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() != 0 {
					if _, err := c.Recv(ctx, 0, 1, nil); err != nil {
						return err
					}
					return c.Send(ctx, 0, 2, []byte{byte(c.Rank())})
				}
				reqs := make([]*comm.Request, n-1)
				bufs := make([][]byte, n-1)
				for i := range reqs {
					bufs[i] = make([]byte, 1)
					var err error
					if reqs[i], err = c.Irecv(i+1, 2, bufs[i]); err != nil {
						return err
					}
				}
				short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
				_, _, err := comm.WaitAny(short, reqs)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("WaitAny with nothing sent: %v", err)
				}
				for _, r := range []int{3, 1, 2} {
					if err := c.Send(ctx, r, 1, nil); err != nil {
						return err
					}
				}
				seen := map[int]bool{}
				for range n - 1 {
					i, st, err := comm.WaitAny(ctx, reqs)
					if err != nil {
						return err
					}
					if reqs[i] != nil || seen[i] || st.Source != i+1 || bufs[i][0] != byte(i+1) {
						return fmt.Errorf("WaitAny returned %d (%+v) again or wrong", i, st)
					}
					seen[i] = true
				}
				return nil
			})
		})
	}
}

// TestSendrecv: a ring of Sendrecv calls, every rank sending right and
// receiving from the left at once.
func TestSendrecv(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 4, comm.WithTransport(tr))
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me, size := c.Rank(), c.Size()
				out := payload(me, (me+1)%size, 0, 1<<20)
				in := make([]byte, len(out))
				st, err := c.Sendrecv(ctx, out, (me+1)%size, 4, in, comm.AnySource, comm.AnyTag)
				if err != nil {
					return err
				}
				if st.Source != (me+size-1)%size || st.Tag != 4 {
					return fmt.Errorf("Sendrecv status %+v", st)
				}
				return checkPayload(in, st.Source, me, 0)
			})
		})
	}
}

// TestTypedSendRecv: Send and Recv of typed slices, and a receive of
// another element type, which fails naming both.
func TestTypedSendRecv(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr))
			errs := run(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 0 {
					if err := comm.Send(ctx, c, 1, 0, []float64{1.5, -2, 3}); err != nil {
						return err
					}
					return comm.Send(ctx, c, 1, 1, []float32{1, 2})
				}
				got := make([]float64, 4)
				st, err := comm.Recv(ctx, c, comm.AnySource, 0, got)
				if err != nil {
					return err
				}
				if st.Bytes != 24 || got[0] != 1.5 || got[1] != -2 || got[2] != 3 {
					return fmt.Errorf("typed receive: %+v %v", st, got)
				}
				_, err = comm.Recv(ctx, c, 0, 1, make([]float64, 2))
				return err
			})
			require.NoError(t, errs[0])
			require.ErrorIs(t, errs[1], comm.ErrMismatch)
			assert.Contains(t, errs[1].Error(), "float32")
			assert.Contains(t, errs[1].Error(), "float64")
		})
	}
}

// TestTypedNonblocking: Isend, Irecv and Sendrecv of typed slices carry
// them whole, finished by Wait, WaitAny or WaitAll; a typed receive of
// another element type, or of a part of an element, fails when waited
// for, naming both types, whichever way it is waited for.
func TestTypedNonblocking(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr))
			errs := run(t, cs, func(ctx context.Context, c *comm.Comm) error {
				peer := 1 - c.Rank()
				if c.Rank() == 0 {
					a, err := comm.Isend(c, 1, 0, []float64{1.5, -2, 3})
					if err != nil {
						return err
					}
					b, err := comm.Isend(c, 1, 1, []int32{7, 8})
					if err != nil {
						return err
					}
					if _, err := comm.WaitAll(ctx, []*comm.Request{a, b}); err != nil {
						return err
					}
					for tag, bad := range []any{[]float32{1}, []byte{1, 2, 3}, []float32{2}} {
						var err error
						switch v := bad.(type) {
						case []float32:
							err = comm.Send(ctx, c, 1, 10+tag, v)
						case []byte:
							err = c.Send(ctx, 1, 10+tag, v)
						}
						if err != nil {
							return err
						}
					}
				} else {
					f := make([]float64, 3)
					i := make([]int32, 2)
					rf, err := comm.Irecv(c, comm.AnySource, 0, f)
					if err != nil {
						return err
					}
					ri, err := comm.Irecv(c, 0, comm.AnyTag, i)
					if err != nil {
						return err
					}
					reqs := []*comm.Request{rf, ri}
					for range 2 {
						if _, _, err := comm.WaitAny(ctx, reqs); err != nil {
							return err
						}
					}
					if !slices.Equal(f, []float64{1.5, -2, 3}) || !slices.Equal(i, []int32{7, 8}) {
						return fmt.Errorf("received %v and %v", f, i)
					}
					// Another type, waited for with Wait; bytes that are not
					// whole int32s, with WaitAll; another type, with WaitAny.
					r, err := comm.Irecv(c, 0, 10, make([]float64, 1))
					if err != nil {
						return err
					}
					if _, err := r.Wait(ctx); !errors.Is(err, comm.ErrMismatch) || !strings.Contains(err.Error(), "float32") || !strings.Contains(err.Error(), "float64") {
						return fmt.Errorf("float32 into float64 with Wait: %v", err)
					}
					if r, err = comm.Irecv(c, 0, 11, make([]int32, 1)); err != nil {
						return err
					}
					if _, err := comm.WaitAll(ctx, []*comm.Request{r}); !errors.Is(err, comm.ErrMismatch) || !strings.Contains(err.Error(), "3 bytes") {
						return fmt.Errorf("3 bytes into int32 with WaitAll: %v", err)
					}
					if r, err = comm.Irecv(c, 0, 12, make([]int64, 1)); err != nil {
						return err
					}
					if _, _, err := comm.WaitAny(ctx, []*comm.Request{r}); !errors.Is(err, comm.ErrMismatch) {
						return fmt.Errorf("float32 into int64 with WaitAny: %v", err)
					}
				}
				got := make([]uint16, 2)
				st, err := comm.Sendrecv(ctx, c, []uint16{uint16(c.Rank()), 9}, peer, 5, got, comm.AnySource, 5)
				if err != nil {
					return err
				}
				if st.Source != peer || st.Bytes != 4 || got[0] != uint16(peer) || got[1] != 9 {
					return fmt.Errorf("Sendrecv: %+v %v", st, got)
				}
				// Element types that differ, as MPI_Sendrecv's may.
				mine, theirs := []any{[]int32{4}, []float64{2.5}}[c.Rank()], []any{[]float64{0}, []int32{0}}[c.Rank()]
				switch send := mine.(type) {
				case []int32:
					_, err = comm.Sendrecv(ctx, c, send, peer, 7, theirs.([]float64), peer, 7)
				case []float64:
					_, err = comm.Sendrecv(ctx, c, send, peer, 7, theirs.([]int32), peer, 7)
				}
				if err != nil || !reflect.DeepEqual(theirs, []any{[]float64{2.5}, []int32{4}}[c.Rank()]) {
					return fmt.Errorf("Sendrecv of int32 for float64: %v, %v", theirs, err)
				}
				_, err = comm.Sendrecv(ctx, c, []uint16{1}, peer, 6, make([]float32, 1), peer, 6)
				if !errors.Is(err, comm.ErrMismatch) {
					return fmt.Errorf("Sendrecv of uint16 into float32: %v", err)
				}
				return nil
			})
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}
		})
	}
}

// TestTypedWildcardAllocs: a steady round trip of typed messages, the
// echo taken by a wildcard receive, allocates nothing, whichever typed
// calls make it: Send and a wildcard Recv, Isend and a named Irecv, a
// Sendrecv, a Probe before a named Recv.
func TestTypedWildcardAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items); make test runs this without -race")
	}
	ctx := context.Background()
	ways := []struct {
		name string
		trip func(c *comm.Comm, out, in []float32) error
	}{
		{"Send/Recv(AnySource)", func(c *comm.Comm, out, in []float32) error {
			if err := comm.Send(ctx, c, 1, 1, out); err != nil {
				return err
			}
			_, err := comm.Recv(ctx, c, comm.AnySource, 2, in)
			return err
		}},
		{"Isend/Irecv", func(c *comm.Comm, out, in []float32) error {
			rr, err := comm.Irecv(c, 1, 2, in)
			if err != nil {
				return err
			}
			sr, err := comm.Isend(c, 1, 1, out)
			if err != nil {
				return err
			}
			if _, err := sr.Wait(ctx); err != nil {
				return err
			}
			_, err = rr.Wait(ctx)
			return err
		}},
		{"Sendrecv", func(c *comm.Comm, out, in []float32) error {
			_, err := comm.Sendrecv(ctx, c, out, 1, 1, in, 1, 2)
			return err
		}},
		{"Probe/Recv", func(c *comm.Comm, out, in []float32) error {
			if err := comm.Send(ctx, c, 1, 1, out); err != nil {
				return err
			}
			st, err := c.Probe(ctx, comm.AnySource, comm.AnyTag)
			if err != nil {
				return err
			}
			_, err = comm.Recv(ctx, c, st.Source, st.Tag, in)
			return err
		}},
	}
	for _, tr := range transports {
		for _, way := range ways {
			t.Run(tr+"/"+way.name, func(t *testing.T) {
				cs := newJob(t, 2, comm.WithTransport(tr))
				const rounds = 200
				echo := make(chan error, 1)
				go func() {
					buf := make([]float32, 256)
					for range rounds + 1 {
						st, err := comm.Recv(ctx, cs[1], comm.AnySource, comm.AnyTag, buf)
						if err == nil {
							err = comm.Send(ctx, cs[1], st.Source, st.Tag+1, buf[:st.Bytes/4])
						}
						if err != nil {
							echo <- err
							return
						}
					}
					echo <- nil
				}()
				out, in := make([]float32, 256), make([]float32, 256)
				roundTrip := func() { require.NoError(t, way.trip(cs[0], out, in)) }
				roundTrip()
				allocs := testing.AllocsPerRun(rounds-1, roundTrip)
				require.NoError(t, <-echo)
				require.Zero(t, allocs, "allocations per round trip")
			})
		}
	}
}

// TestWildcardTimeoutFailsTheCallAlone: a receive or probe from any
// source that the timeout ends blames no rank: it fails with ErrTimeout,
// and the communicator goes on.
func TestWildcardTimeoutFailsTheCallAlone(t *testing.T) {
	cs := newJob(t, 2, comm.WithTimeout(200*time.Millisecond))
	// Not a receive: rank 1 would time out waiting for it.
	timedOut := make(chan struct{})
	release := sync.OnceFunc(func() { close(timedOut) })
	runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		if c.Rank() == 1 {
			<-timedOut
			return c.Send(ctx, 0, 2, []byte{5})
		}
		defer release()
		calls := map[string]func() error{
			"Recv":  func() error { _, err := c.Recv(ctx, comm.AnySource, 2, nil); return err },
			"Probe": func() error { _, err := c.Probe(ctx, comm.AnySource, comm.AnyTag); return err },
			"WaitAny": func() error {
				r, err := c.Irecv(comm.AnySource, 2, make([]byte, 1))
				if err != nil {
					return err
				}
				reqs := []*comm.Request{r}
				if _, _, err = comm.WaitAny(ctx, reqs); !errors.Is(err, comm.ErrTimeout) || reqs[0] == nil {
					return fmt.Errorf("WaitAny finished the receive (%v) or did not time out: %v", reqs[0] == nil, err)
				}
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				_, err = reqs[0].Wait(cancelled) // withdraw it
				if !errors.Is(err, context.Canceled) {
					return fmt.Errorf("withdrawing the receive: %v", err)
				}
				return comm.ErrTimeout
			},
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, comm.ErrTimeout) {
				return fmt.Errorf("%s from any source with nothing sent: %v", name, err)
			}
		}
		release()
		buf := make([]byte, 1)
		if _, err := c.Recv(ctx, 1, 2, buf); err != nil || buf[0] != 5 {
			return fmt.Errorf("a named receive after the timeouts: %v", err)
		}
		return nil
	})
}

// TestIsendWithdrawn: a send still queued behind another when its Wait's
// context ends is dropped, and the messages after it arrive in order.
func TestIsendWithdrawn(t *testing.T) {
	for _, tr := range []string{"mem", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			// A budget of one small early message: the large one after
			// it waits in its link until rank 1 receives.
			cs := newJob(t, 2, comm.WithTransport(tr), comm.WithUnexpectedLimit(2<<10))
			queued := make(chan struct{})
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					<-queued
					big := make([]byte, 64<<20)
					for tag, buf := range [][]byte{make([]byte, 1), big} {
						if _, err := c.Recv(ctx, 0, tag, buf); err != nil {
							return err
						}
					}
					st, err := c.Recv(ctx, 0, comm.AnyTag, make([]byte, 8))
					if err != nil {
						return err
					}
					if st.Tag != 9 {
						return fmt.Errorf("after the large message came tag %d; the withdrawn send has tag 2, the next 9", st.Tag)
					}
					return nil
				}
				var reqs []*comm.Request
				for tag, b := range [][]byte{{1}, make([]byte, 64<<20), {2}} {
					r, err := c.Isend(1, tag, b)
					if err != nil {
						return err
					}
					reqs = append(reqs, r)
				}
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				if _, err := reqs[2].Wait(cancelled); !errors.Is(err, context.Canceled) {
					return fmt.Errorf("Wait of a queued send with its context ended: %v", err)
				}
				close(queued)
				if _, err := comm.WaitAll(ctx, reqs[:2]); err != nil {
					return err
				}
				return c.Send(ctx, 1, 9, []byte{9})
			})
		})
	}
}
