package collective

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/objcodec"
)

// workerResult is what a worker sends its coordinator in the object tests.
type workerResult struct {
	ID    int
	Name  string
	Grad  []float32
	Notes map[string]int
}

// TestObjectsPointToPoint: workers send results as objects, the
// coordinator receives them from any source with both codecs, and a
// message of another type is the receiver's error alone: the job goes
// on.
func TestObjectsPointToPoint(t *testing.T) {
	for _, tr := range []string{"mem", "tcp", "shm"} {
		for _, oc := range []struct {
			name string
			c    ObjectCodec
		}{{"raw", RawCodec}, {"gob", GobCodec}} {
			t.Run(tr+"/"+oc.name, func(t *testing.T) {
				const n = 4
				cs := job(t, n, comm.WithTransport(tr))
				opts := []Option{WithObjectCodec(oc.c)}
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					me := c.Rank()
					if me != 0 {
						r := workerResult{ID: me, Name: fmt.Sprint("rank ", me), Grad: make([]float32, 1000*me), Notes: map[string]int{"rank": me}}
						for i := range r.Grad {
							r.Grad[i] = float32(i * me)
						}
						if err := SendObject(ctx, c, 0, 7, r, opts...); err != nil {
							return err
						}
						if me == 1 {
							if err := SendObject(ctx, c, 0, 8, "not a workerResult", opts...); err != nil {
								return err
							}
						}
						return Barrier(ctx, c)
					}
					var seen []int
					for range n - 1 {
						r, st, err := RecvObject[workerResult](ctx, c, comm.AnySource, 7, opts...)
						if err != nil {
							return err
						}
						if r.ID != st.Source || st.Tag != 7 || len(r.Grad) != 1000*r.ID || r.Notes["rank"] != r.ID || r.Name != fmt.Sprint("rank ", r.ID) {
							return fmt.Errorf("workerResult %+v with status %+v", r.ID, st)
						}
						for i, g := range r.Grad {
							if g != float32(i*r.ID) {
								return fmt.Errorf("rank %d's gradient %d is %v", r.ID, i, g)
							}
						}
						seen = append(seen, st.Source)
					}
					slices.Sort(seen)
					if !slices.Equal(seen, []int{1, 2, 3}) {
						return fmt.Errorf("results from ranks %v", seen)
					}
					_, st, err := RecvObject[workerResult](ctx, c, comm.AnySource, comm.AnyTag, opts...)
					if !errors.Is(err, comm.ErrMismatch) || st.Source != 1 {
						return fmt.Errorf("a string received as a workerResult: %v (status %+v)", err, st)
					}
					return Barrier(ctx, c) // the job goes on
				})
			})
		}
	}
}

// TestRecvObjectInto: a receiver that decodes each message into the same
// variable gets every value whole, keeps its gradient's array while the
// capacity suffices, and takes messages larger than its pooled buffer;
// a nil variable is refused.
func TestRecvObjectInto(t *testing.T) {
	lengths := []int{3, 5000, 5000, 100, 8000, 0, 8000}
	for _, tr := range []string{"mem", "tcp", "shm"} {
		t.Run(tr, func(t *testing.T) {
			cs := job(t, 2, comm.WithTransport(tr))
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					for i, m := range lengths {
						r := workerResult{ID: i, Grad: make([]float32, m)}
						for j := range r.Grad {
							r.Grad[j] = float32(i + j)
						}
						if err := SendObject(ctx, c, 0, 3, r); err != nil {
							return err
						}
					}
					return nil
				}
				if _, err := RecvObjectInto[workerResult](ctx, c, 1, 3, nil); !errors.Is(err, codec.ErrInvalid) {
					return fmt.Errorf("RecvObjectInto a nil value: %v", err)
				}
				var v workerResult
				var kept keptArray
				for i, m := range lengths {
					kept.expect(m)
					st, err := RecvObjectInto(ctx, c, comm.AnySource, 3, &v)
					if err != nil {
						return err
					}
					if st.Source != 1 || v.ID != i || len(v.Grad) != m {
						return fmt.Errorf("message %d: %d gradients of message %d from rank %d", i, len(v.Grad), v.ID, st.Source)
					}
					for j, g := range v.Grad {
						if g != float32(i+j) {
							return fmt.Errorf("message %d: gradient %d is %v", i, j, g)
						}
					}
					if err := kept.check(i, v.Grad); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// task ends with its raw block, so that SendObject sends it split.
type task struct {
	ID   int
	Name string
	Grad []float32
}

// TestObjectsSplit: values that end with a raw block of splitMin bytes
// or more go as a head and the value's own memory, and arrive whole
// through RecvObject and RecvObjectInto (whose slice keeps its array
// while its capacity suffices), beside smaller ones that go in one
// piece, over every transport. A split message is the encoding all the
// same: comm's Recv gets bytes that RawCodec decodes, a receiver that
// expects another type fails alone with ErrMismatch, naming the
// message's length, and so does one that decodes with GobCodec; the
// messages after them arrive intact.
func TestObjectsSplit(t *testing.T) {
	lengths := []int{0, 10, 300, 64 << 10 / 4, 1 << 20 / 4, 300, 1 << 20 / 4, 200 << 10 / 4}
	grad := func(i, m int) []float32 {
		g := make([]float32, m)
		for j := range g {
			g[j] = float32(i*7 + j)
		}
		return g
	}
	for _, tr := range []string{"mem", "tcp", "shm"} {
		t.Run(tr, func(t *testing.T) {
			cs := job(t, 2, comm.WithTransport(tr))
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					for i, m := range lengths {
						if err := SendObject(ctx, c, 0, 3, task{ID: i, Name: fmt.Sprint("task ", i), Grad: grad(i, m)}); err != nil {
							return err
						}
					}
					for i := range 4 {
						if err := SendObject(ctx, c, 0, 4, grad(i, 1<<20/4)); err != nil {
							return err
						}
					}
					return SendObject(ctx, c, 0, 4, "the last")
				}
				var v task
				var kept keptArray
				for i, m := range lengths {
					kept.expect(m)
					st, err := RecvObjectInto(ctx, c, comm.AnySource, 3, &v)
					if err != nil {
						return err
					}
					if st.Source != 1 || v.ID != i || v.Name != fmt.Sprint("task ", i) || !slices.Equal(v.Grad, grad(i, m)) {
						return fmt.Errorf("message %d: task %d %q with %d gradients from rank %d", i, v.ID, v.Name, len(v.Grad), st.Source)
					}
					if err := kept.check(i, v.Grad); err != nil {
						return err
					}
				}
				g, _, err := RecvObject[[]float32](ctx, c, 1, 4)
				if err != nil || !slices.Equal(g, grad(0, 1<<20/4)) {
					return fmt.Errorf("a []float32 through RecvObject: %d elements, %v", len(g), err)
				}
				st, err := c.Probe(ctx, 1, 4)
				if err != nil {
					return err
				}
				b := make([]byte, st.Bytes)
				if _, err := c.Recv(ctx, 1, 4, b); err != nil {
					return err
				}
				if err := RawCodec.Decode(b, &g); err != nil || !slices.Equal(g, grad(1, 1<<20/4)) {
					return fmt.Errorf("a split []float32 through comm's Recv and Decode: %v", err)
				}
				_, st, err = RecvObject[[]float64](ctx, c, 1, 4)
				if !errors.Is(err, comm.ErrMismatch) || !strings.Contains(err.Error(), "the 1048588 bytes from rank 1 with tag 4") {
					return fmt.Errorf("a []float32 received as []float64: %v (status %+v)", err, st)
				}
				_, st, err = RecvObject[[]float32](ctx, c, 1, 4, WithObjectCodec(GobCodec))
				if !errors.Is(err, comm.ErrMismatch) || st.Bytes != 1048588 {
					return fmt.Errorf("a split []float32 received with gob: %v (status %+v)", err, st)
				}
				last, _, err := RecvObject[string](ctx, c, 1, 4)
				if err != nil || last != "the last" {
					return fmt.Errorf("the message after: %q, %v", last, err)
				}
				return nil
			})
		})
	}
}

// TestSendObjectSplitsFromSplitMin: SendObject sends a value split, its
// raw block apart from its head, from splitMin bytes of block on, and in
// one piece below; the receiving side's Placer sees the difference.
func TestSendObjectSplitsFromSplitMin(t *testing.T) {
	cs := job(t, 2)
	for _, m := range []int{splitMin/4 - 1, splitMin / 4, 1 << 16} {
		t.Run(fmt.Sprint(m*4, "B"), func(t *testing.T) {
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					return SendObject(ctx, c, 0, 1, task{ID: 1, Grad: make([]float32, m)})
				}
				rest := -1
				place := func(head []byte, n int) ([]byte, error) {
					rest = n
					return make([]byte, n), nil
				}
				st, err := (*core.Comm)(c).RecvPlaced(ctx, 1, 1, make([]byte, 1<<20), place)
				if err != nil {
					return err
				}
				switch split := m*4 >= splitMin; {
				case split && rest != m*4:
					return fmt.Errorf("a block of %d bytes: the placer saw a rest of %d of %d bytes", m*4, rest, st.Bytes)
				case !split && rest != -1:
					return fmt.Errorf("a block of %d bytes went split", m*4)
				}
				return nil
			})
		})
	}
}

// keptArray follows the array of a slice that RecvObjectInto decodes
// into again and again, which must stay while its capacity suffices:
// expect says how many elements the next value has, check sees the slice
// that received them.
type keptArray struct {
	array []float32
	grows bool
}

func (k *keptArray) expect(n int) { k.grows = n > cap(k.array) }

func (k *keptArray) check(message int, got []float32) error {
	switch {
	case k.grows:
		k.array = got
	case len(got) > 0 && &got[0] != &k.array[0]:
		return fmt.Errorf("message %d: %d elements in a new array", message, len(got))
	}
	return nil
}

// TestRecvObjectOfASplitOffItsHead: a split message whose header places
// the split a byte before or after the end of the encoding's head (a
// sender that is not SendObject) is still the encoding: the object
// receives, which cannot place its rest, decode it whole.
func TestRecvObjectOfASplitOffItsHead(t *testing.T) {
	want := task{ID: 7, Name: "seven", Grad: make([]float32, 4096)}
	for i := range want.Grad {
		want.Grad[i] = float32(i)
	}
	enc, err := RawCodec.Append(nil, &want)
	require.NoError(t, err)
	head, _, ok, err := objcodec.Split(nil, &want)
	require.NoError(t, err)
	require.True(t, ok)
	for _, off := range []int{-1, 1} {
		t.Run(fmt.Sprint("off by ", off), func(t *testing.T) {
			cs := job(t, 2)
			at := len(head) + off
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if c.Rank() == 1 {
					for range 2 {
						if err := (*core.Comm)(c).SendSplit(ctx, 0, 1, enc[:at], enc[at:]); err != nil {
							return err
						}
					}
					return nil
				}
				got, _, err := RecvObject[task](ctx, c, 1, 1)
				if err != nil || !reflect.DeepEqual(got, want) {
					return fmt.Errorf("RecvObject: task %d with %d gradients, %v", got.ID, len(got.Grad), err)
				}
				var into task
				if _, err := RecvObjectInto(ctx, c, 1, 1, &into); err != nil || !reflect.DeepEqual(into, want) {
					return fmt.Errorf("RecvObjectInto: task %d with %d gradients, %v", into.ID, len(into.Grad), err)
				}
				return nil
			})
		})
	}
}

// TestSendObjectRefusesWhatDoesNotEncode: a value gob cannot encode is
// the sender's error, naming the type, and nothing is sent.
func TestSendObjectRefusesWhatDoesNotEncode(t *testing.T) {
	cs := job(t, 2)
	err := SendObject(context.Background(), cs[0], 1, 0, func() {})
	require.ErrorIs(t, err, codec.ErrInvalid)
	require.ErrorContains(t, err, "func()")
	_, ok, err := cs[1].Iprobe(comm.AnySource, comm.AnyTag)
	require.NoError(t, err)
	require.False(t, ok, "something was sent")
}

// BenchmarkObjectPingPong sends a []float32 from rank 0 to rank 1 and
// back, as typed messages (comm.Send and comm.Recv into a buffer kept
// from call to call), as objects into a new value each time (SendObject
// and RecvObject) and into the same slice (RecvObjectInto), over links in
// memory, shared memory and tcp. An operation is one round trip.
func BenchmarkObjectPingPong(b *testing.B) {
	for _, tr := range []string{"mem", "auto", "tcp"} {
		for _, bytes := range []int{64 << 10, 1 << 20} {
			for _, how := range []string{"typed", "object", "into"} {
				b.Run(fmt.Sprintf("%s/%s/%dKiB", tr, how, bytes>>10), func(b *testing.B) {
					b.ReportAllocs()
					benchCollective(b, 2, bytes, comm.WithTransport(tr), func(ctx context.Context, c *comm.Comm, buf []float32) error {
						peer := 1 - c.Rank()
						for turn := range 2 {
							if turn == c.Rank() {
								if how == "typed" {
									if err := comm.Send(ctx, c, peer, 0, buf); err != nil {
										return err
									}
								} else if err := SendObject(ctx, c, peer, 0, buf); err != nil {
									return err
								}
								continue
							}
							var err error
							switch how {
							case "typed":
								_, err = comm.Recv(ctx, c, peer, 0, buf)
							case "object":
								_, _, err = RecvObject[[]float32](ctx, c, peer, 0)
							default:
								_, err = RecvObjectInto(ctx, c, peer, 0, &buf)
							}
							if err != nil {
								return err
							}
						}
						return nil
					})
				})
			}
		}
	}
}
