package collective

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/errtest"
	"github.com/gocoll/gocoll/internal/objcodec"
)

type runInfo struct {
	Name   string
	Rank   int
	Labels map[string]float64
	Vocab  []string
}

// infoOf is rank r's value. gob decodes an empty slice as nil, so rank
// 0's vocabulary is nil rather than empty.
func infoOf(r int) runInfo {
	v := runInfo{Name: fmt.Sprint("worker-", r), Rank: r, Labels: map[string]float64{"lr": 0.1 * float64(r)}}
	for i := range r {
		v.Vocab = append(v.Vocab, fmt.Sprint("word", i))
	}
	return v
}

// jsonCodec is a codec of the caller's, which counts its calls.
type jsonCodec struct{ appends, decodes *atomic.Int64 }

func newJSONCodec() jsonCodec { return jsonCodec{new(atomic.Int64), new(atomic.Int64)} }

func (j jsonCodec) Append(b []byte, v any) ([]byte, error) {
	j.appends.Add(1)
	data, err := json.Marshal(v)
	return append(b, data...), err
}

func (j jsonCodec) Decode(b []byte, v any) error {
	j.decodes.Add(1)
	return json.Unmarshal(b, v)
}

// objectCodecs are the codecs every object test runs with: the default
// (no option), both of the package's and one of the caller's.
func objectCodecs() []struct {
	name string
	opts []Option
} {
	return []struct {
		name string
		opts []Option
	}{
		{"default", nil},
		{"raw", []Option{WithObjectCodec(RawCodec)}},
		{"gob", []Option{WithObjectCodec(GobCodec)}},
		{"json", []Option{WithObjectCodec(newJSONCodec())}},
	}
}

// TestObjects runs every object helper with every codec, with a root
// other than 0.
func TestObjects(t *testing.T) {
	for _, oc := range objectCodecs() {
		for _, n := range []int{1, 2, 3, 5} {
			t.Run(fmt.Sprintf("%s/n=%d", oc.name, n), func(t *testing.T) {
				cs := job(t, n)
				root := n / 2
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					return objectRoundTrips(ctx, c, root, infoOf, oc.opts)
				})
			})
		}
	}
}

// objectRoundTrips calls every object helper with rank r's value
// valueOf(r) and checks what each returns.
func objectRoundTrips[T any](ctx context.Context, c *comm.Comm, root int, valueOf func(int) T, opts []Option) error {
	me, n := c.Rank(), c.Size()
	var v T
	if me == root {
		v = valueOf(root)
	}
	if err := BcastObject(ctx, c, &v, root, opts...); err != nil {
		return err
	}
	if !reflect.DeepEqual(v, valueOf(root)) {
		return fmt.Errorf("BcastObject gave %+v", v)
	}
	all, err := AllgatherObject(ctx, c, valueOf(me), opts...)
	if err != nil {
		return err
	}
	gathered, err := GatherObject(ctx, c, valueOf(me), root, opts...)
	if err != nil {
		return err
	}
	if me != root && gathered != nil {
		return fmt.Errorf("GatherObject returned %d values off the root", len(gathered))
	}
	for r := range n {
		if !reflect.DeepEqual(all[r], valueOf(r)) {
			return fmt.Errorf("AllgatherObject[%d] = %+v", r, all[r])
		}
		if me == root && !reflect.DeepEqual(gathered[r], valueOf(r)) {
			return fmt.Errorf("GatherObject[%d] = %+v", r, gathered[r])
		}
	}
	var values []T
	if me == root {
		for r := range n {
			values = append(values, valueOf(r))
		}
	}
	mine, err := ScatterObject(ctx, c, values, root, opts...)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(mine, valueOf(me)) {
		return fmt.Errorf("ScatterObject gave %+v", mine)
	}
	return nil
}

type sample struct {
	ID    int
	Name  string
	Grad  []float32
	Flags []bool
}

// sampleOf is rank r's sample: small on even ranks (its encoding fits
// every control block), large on odd ones, so that the helpers take
// their inline and their second-call paths in one call.
func sampleOf(r int) sample {
	s := sample{ID: r, Name: strings.Repeat("n", r+1)}
	if r%2 == 1 {
		s.Grad = make([]float32, 3000+r)
		for i := range s.Grad {
			s.Grad[i] = float32(i * r)
		}
		s.Flags = []bool{true, false, r%3 == 0}
	}
	return s
}

// shard ends with a raw block, which AllgatherObject sends from the
// owner's value when it is large.
type shard struct {
	Rank int
	Name string
	Data []float32
}

// shardOf is rank r's shard: large (placed) for r%4 == 0, small for 1, nil
// data for 2, and large behind a head too long for a gather block for 3.
func shardOf(r int) shard {
	s := shard{Rank: r, Name: fmt.Sprint("shard ", r)}
	n := []int{10_000, 100, 0, 20_000}[r%4]
	if r%4 == 3 {
		s.Name = strings.Repeat("long ", 40)
	}
	if n > 0 {
		s.Data = make([]float32, n)
		for i := range s.Data {
			s.Data[i] = float32(r*n + i)
		}
	}
	return s
}

// TestAllgatherObjectPlaced: values that end with a large slice send
// their head in the first Allgather's block and the slice from their
// owners' memory in the second call, beside small ones, nil ones and
// ones whose head is too long to go ahead, over memory, tcp and shared
// memory; the results share no memory with what the ranks passed.
func TestAllgatherObjectPlaced(t *testing.T) {
	for _, tr := range []string{"mem", "tcp", "shm"} {
		for _, n := range []int{2, 4, 5} {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := job(t, n, comm.WithTransport(tr))
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					everyLarge := func(r int) shard { return shardOf(4 * r) }
					for _, of := range []func(int) shard{everyLarge, shardOf} {
						mine := of(c.Rank())
						all, err := AllgatherObject(ctx, c, mine)
						if err != nil {
							return err
						}
						for r := range n {
							if want := of(r); !reflect.DeepEqual(all[r], want) {
								return fmt.Errorf("AllgatherObject[%d]: %d elements, name %q; want %d, %q", r, len(all[r].Data), all[r].Name, len(want.Data), want.Name)
							}
						}
						if len(mine.Data) > 0 {
							mine.Data[0] = -1
							if all[c.Rank()].Data[0] == -1 {
								return fmt.Errorf("rank %d's result shares memory with its value", c.Rank())
							}
						}
					}
					return nil
				})
				// Two calls each, of the blocks and of the rest: an
				// Allgather when every rank's rest has one length (the
				// first), else an Allgatherv.
				for r, c := range cs {
					require.Zero(t, callsOf(c, "Bcast"), "rank %d's Bcasts", r)
					require.Equal(t, uint64(3), callsOf(c, "Allgather"), "rank %d's Allgathers", r)
					require.Equal(t, uint64(1), callsOf(c, "Allgatherv"), "rank %d's Allgathervs", r)
				}
			})
		}
	}
}

// TestLargeObjects: encodings beyond the control blocks, mixed with small
// ones, over memory, tcp and shared memory.
func TestLargeObjects(t *testing.T) {
	for _, tr := range []string{"mem", "tcp", "shm"} {
		for _, oc := range objectCodecs()[1:3] {
			for _, n := range []int{2, 3} {
				t.Run(fmt.Sprintf("%s/%s/n=%d", tr, oc.name, n), func(t *testing.T) {
					cs := job(t, n, comm.WithTransport(tr))
					allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
						if err := objectRoundTrips(ctx, c, n-1, sampleOf, oc.opts); err != nil {
							return err
						}
						// Every sample small or every one large.
						small := func(int) sample { return sampleOf(0) }
						if err := objectRoundTrips(ctx, c, 0, small, oc.opts); err != nil {
							return err
						}
						large := func(r int) sample { return sampleOf(2*r + 1) }
						return objectRoundTrips(ctx, c, 0, large, oc.opts)
					})
				})
			}
		}
	}
}

// TestBcastObjectInPlace: with RawCodec a slice or array of numbers goes
// straight into the receivers' variable, reusing its array when its
// capacity suffices; bools, which Decode must check, and arrays take the
// other paths, and all arrive whole.
func TestBcastObjectInPlace(t *testing.T) {
	const m = 100_000
	src := make([]float32, m)
	for i := range src {
		src[i] = float32(i) - 0.5
	}
	cs := job(t, 3)
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		root := 1
		for _, start := range []int{0, 10, m, 2 * m} {
			// The receivers start with a slice of capacity start.
			var v []float32
			var array *float32
			if start > 0 {
				v = make([]float32, 0, start)
				array = &v[:1][0]
			}
			if c.Rank() == root {
				v = src
			}
			if err := BcastObject(ctx, c, &v, root); err != nil {
				return err
			}
			if !reflect.DeepEqual(v, src) {
				return fmt.Errorf("start %d: BcastObject gave %d elements, want %d", start, len(v), m)
			}
			if c.Rank() != root && start >= m && &v[0] != array {
				return fmt.Errorf("start %d: BcastObject did not reuse the array", start)
			}
		}
		bools := make([]bool, 5000)
		for i := range bools {
			bools[i] = i%3 == 0
		}
		var b []bool
		if c.Rank() == root {
			b = bools
		}
		if err := BcastObject(ctx, c, &b, root); err != nil {
			return err
		}
		if !reflect.DeepEqual(b, bools) {
			return fmt.Errorf("BcastObject of bools gave %v", b[:10])
		}
		var a [512]float64
		if c.Rank() == root {
			for i := range a {
				a[i] = float64(i)
			}
		}
		if err := BcastObject(ctx, c, &a, root); err != nil {
			return err
		}
		if a[511] != 511 {
			return fmt.Errorf("BcastObject of an array gave %v", a[500:])
		}
		var empty []float32
		if c.Rank() == root {
			empty = []float32{}
		}
		if err := BcastObject(ctx, c, &empty, root); err != nil {
			return err
		}
		if empty == nil || len(empty) != 0 {
			return fmt.Errorf("BcastObject of an empty slice gave %#v", empty)
		}
		// A struct that ends with the slice goes in place too; one
		// whose head alone outgrows the control block goes whole; a
		// pointer at the end may be nil.
		type step struct {
			Name string
			Seq  int
			Grad *[]float32
		}
		for _, name := range []string{"n", strings.Repeat("long name ", 1000)} {
			for _, grad := range []*[]float32{&src, nil} {
				var s step
				if c.Rank() == root {
					s = step{Name: name, Seq: 7, Grad: grad}
				}
				if err := BcastObject(ctx, c, &s, root); err != nil {
					return err
				}
				if s.Name != name || s.Seq != 7 || (grad == nil) != (s.Grad == nil) || grad != nil && !reflect.DeepEqual(*s.Grad, src) {
					return fmt.Errorf("BcastObject of a step with a %d-byte name and grad %v gave a %d-byte name, seq %d, grad %v",
						len(name), grad != nil, len(s.Name), s.Seq, s.Grad != nil)
				}
			}
		}
		return nil
	})
}

// TestBcastObjectHints: a value broadcast again at about the same size
// takes one Bcast per BcastObject after the first, whether it grows a
// little or shrinks; one that grows beyond the hint takes two again, and
// so does every one beyond hintMax, or hintMaxSegment through a segment.
func TestBcastObjectHints(t *testing.T) {
	for _, tt := range []struct {
		transport string
		most      int
	}{{"mem", hintMax}, {"shm", hintMaxSegment}} {
		t.Run(tt.transport, func(t *testing.T) {
			cs := job(t, 3, comm.WithTransport(tt.transport))
			var sizes []int // in floats, a share of the most in one Bcast
			for _, share := range []float64{0.3, 0.3, 0.31, 0.24, 0.3, 0.73, 0.73, 1.22, 1.22} {
				sizes = append(sizes, int(share*float64(tt.most)/4))
			}
			// Two Bcasts: the first call, 0.3 after 0.24, 0.73 after 0.3,
			// and 1.22, beyond the most, both times.
			want := len(sizes) + 5
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				for i, n := range sizes {
					v := sample{Name: fmt.Sprint(i)}
					if c.Rank() == 2 {
						v.Grad = make([]float32, n)
						v.Grad[n-1] = float32(i)
					}
					if err := BcastObject(ctx, c, &v, 2); err != nil {
						return err
					}
					if len(v.Grad) != n || v.Grad[n-1] != float32(i) || v.Name != fmt.Sprint(i) {
						return fmt.Errorf("call %d: BcastObject gave %d elements", i, len(v.Grad))
					}
				}
				return nil
			})
			for r, c := range cs {
				require.Equal(t, uint64(want), callsOf(c, "Bcast"), "rank %d's Bcasts", r)
			}
		})
	}
}

// TestBcastObjectHeadBlock: after a BcastObject whose raw block went on
// its own and whose head was short, the next call's control block is
// headBlock bytes, which a segment moves in a fast line; a head that has
// grown too long for it goes whole in two Bcasts, after which the block
// is bcastBlock again, and then headBlock once more.
func TestBcastObjectHeadBlock(t *testing.T) {
	type headed struct {
		Name string
		Grad []float32 // raw, beyond hintMax: on its own
	}
	const root, n = 1, 40000
	long := strings.Repeat("a long name ", 20)
	calls := []struct {
		name      string
		wantBlock int // for the next call, after this one
	}{{"a", headBlock}, {"b", headBlock}, {long, bcastBlock}, {"c", headBlock}, {long + "d", bcastBlock}}
	for _, transport := range []string{"mem", "shm"} {
		t.Run(transport, func(t *testing.T) {
			cs := job(t, 3, comm.WithTransport(transport))
			key := hintKey{root: root, fp: objcodec.Fingerprint(reflect.TypeFor[headed]())}
			for i, call := range calls {
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					var v headed
					if c.Rank() == root {
						v = headed{Name: call.name, Grad: make([]float32, n)}
						v.Grad[n-1] = float32(i)
					}
					if err := BcastObject(ctx, c, &v, root); err != nil {
						return err
					}
					if v.Name != call.name || len(v.Grad) != n || v.Grad[n-1] != float32(i) {
						return fmt.Errorf("call %d: BcastObject gave a %d-byte name and %d elements", i, len(v.Name), len(v.Grad))
					}
					return nil
				})
				for r, c := range cs {
					require.Equal(t, call.wantBlock, hintsOf(c).blockSize(key, hintMaxOf(c)), "rank %d's block after call %d", r, i)
				}
			}
		})
	}
}

// callsOf counts c's calls of collective, by every algorithm.
func callsOf(c *comm.Comm, collective string) uint64 {
	calls := uint64(0)
	for _, s := range c.Stats() {
		if s.Collective == collective {
			calls += s.Calls
		}
	}
	return calls
}

// TestObjectsAcrossNamedTypes: RawCodec decodes a value into any type
// of the same structure, call after call, and GobCodec into any type gob
// reconciles.
func TestObjectsAcrossNamedTypes(t *testing.T) {
	type temp float32
	type wide struct {
		Name  string
		Temps []float32
		Extra int
	}
	type narrow struct{ Temps []float32 }
	cs := job(t, 3)
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		for i := range 3 {
			if c.Rank() == 0 {
				v := make([]temp, 30000)
				v[i] = temp(i)
				if err := BcastObject(ctx, c, &v, 0); err != nil {
					return err
				}
				w := wide{Name: "w", Temps: []float32{float32(i)}, Extra: 5}
				if err := BcastObject(ctx, c, &w, 0, WithObjectCodec(GobCodec)); err != nil {
					return err
				}
				continue
			}
			var v []float32
			if err := BcastObject(ctx, c, &v, 0); err != nil {
				return err
			}
			var n narrow
			if err := BcastObject(ctx, c, &n, 0, WithObjectCodec(GobCodec)); err != nil {
				return err
			}
			if len(v) != 30000 || v[i] != float32(i) || len(n.Temps) != 1 || n.Temps[0] != float32(i) {
				return fmt.Errorf("call %d: got %d elements and %v", i, len(v), n)
			}
		}
		return nil
	})
}

// TestObjectCodecOption: a codec passed with WithObjectCodec encodes and
// decodes every value, a nil one is refused, and the typed collectives
// ignore the option.
func TestObjectCodecOption(t *testing.T) {
	const n = 3
	cs := job(t, n)
	codecs := make([]jsonCodec, n)
	for r := range codecs {
		codecs[r] = newJSONCodec()
	}
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		jc := codecs[c.Rank()]
		if err := objectRoundTrips(ctx, c, 2, infoOf, []Option{WithObjectCodec(jc)}); err != nil {
			return err
		}
		if jc.appends.Load() == 0 || jc.decodes.Load() == 0 {
			return fmt.Errorf("the codec encoded %d and decoded %d values", jc.appends.Load(), jc.decodes.Load())
		}
		buf := []float32{1, 2}
		return Allreduce(ctx, c, buf, codec.Sum, WithObjectCodec(jc), WithObjectCodec(nil))
	})
	errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
		_, err := AllgatherObject(ctx, c, 1, WithObjectCodec(nil))
		return err
	})
	for r, err := range errs {
		require.ErrorIs(t, err, codec.ErrInvalid, "rank %d", r)
	}
}

// TestObjectMismatch: ranks that disagree on an object's type or codec
// all fail with ErrMismatch, in the call or, for a rank that had
// returned, in its next one, and the error names the type. None waits
// for the timeout.
func TestObjectMismatch(t *testing.T) {
	big32 := make([]float32, 50_000)
	bigInt := make([]int32, 50_000)
	type pair struct{ X, Y float64 }
	type other struct{ A, B float64 }
	tests := []struct {
		name string
		call func(ctx context.Context, c *comm.Comm) error
	}{
		{"BcastObject small", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 1 {
				return BcastObject(ctx, c, &pair{1, 2}, 1)
			}
			return BcastObject(ctx, c, &other{}, 1)
		}},
		{"BcastObject in place", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 0 {
				return BcastObject(ctx, c, &big32, 0)
			}
			v := append([]int32(nil), bigInt...)
			return BcastObject(ctx, c, &v, 0)
		}},
		{"BcastObject large", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 0 {
				v := sampleOf(1)
				return BcastObject(ctx, c, &v, 0)
			}
			var v struct{ Grad []float32 }
			return BcastObject(ctx, c, &v, 0)
		}},
		{"BcastObject codecs", func(ctx context.Context, c *comm.Comm) error {
			v := infoOf(2)
			if c.Rank() == 0 {
				return BcastObject(ctx, c, &v, 0, WithObjectCodec(GobCodec))
			}
			return BcastObject(ctx, c, &v, 0)
		}},
		{"AllgatherObject", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 2 {
				_, err := AllgatherObject(ctx, c, other{})
				return err
			}
			_, err := AllgatherObject(ctx, c, pair{})
			return err
		}},
		{"AllgatherObject in place", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 2 {
				_, err := AllgatherObject(ctx, c, bigInt)
				return err
			}
			_, err := AllgatherObject(ctx, c, big32)
			return err
		}},
		{"AllreduceObject", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 2 {
				v := append([]int32(nil), bigInt...)
				return AllreduceObject(ctx, c, &v, func(acc, x *[]int32) error { return nil })
			}
			v := append([]float32(nil), big32...)
			return AllreduceObject(ctx, c, &v, func(acc, x *[]float32) error { return nil })
		}},
		{"GatherObject", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 2 {
				_, err := GatherObject(ctx, c, sampleOf(1), 1)
				return err
			}
			_, err := GatherObject(ctx, c, pair{}, 1)
			return err
		}},
		{"ScatterObject", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 2 {
				_, err := ScatterObject(ctx, c, []pair{{}, {}, {}}, 2)
				return err
			}
			_, err := ScatterObject[other](ctx, c, nil, 2)
			return err
		}},
		{"ScatterObject large", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 2 {
				_, err := ScatterObject(ctx, c, []sample{sampleOf(1), sampleOf(3), sampleOf(5)}, 2)
				return err
			}
			_, err := ScatterObject[[]float64](ctx, c, nil, 2)
			return err
		}},
		{"BcastObject against Bcast", func(ctx context.Context, c *comm.Comm) error {
			if c.Rank() == 0 {
				return Bcast(ctx, c, make([]byte, bcastBlock), 0, WithReceipts(false))
			}
			var v int
			return BcastObject(ctx, c, &v, 0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := job(t, 3)
			errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
				if err := tt.call(ctx, c); err != nil {
					return err
				}
				return Barrier(ctx, c)
			})
			named := false
			for r, err := range errs {
				errtest.RequireSentinel(t, err, fmt.Sprintf("rank %d", r))
				require.ErrorIs(t, err, comm.ErrMismatch, "rank %d", r)
				named = named || strings.Contains(err.Error(), "do not decode as") || strings.Contains(err.Error(), "not an object's")
			}
			require.True(t, named, "no error names the type or the block: %v", errs)
		})
	}
}

// TestScatterObjectValues: root must pass one value per rank.
func TestScatterObjectValues(t *testing.T) {
	cs := job(t, 3)
	errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
		_, err := ScatterObject(ctx, c, []int{1, 2}, 1)
		return err
	})
	require.ErrorIs(t, errs[1], codec.ErrInvalid)
	require.ErrorContains(t, errs[1], "values has 2 elements")
	for r, err := range errs {
		errtest.RequireSentinel(t, err, fmt.Sprintf("rank %d", r))
	}
	_, err := ScatterObject(context.Background(), nil, []int{1}, 0)
	require.ErrorIs(t, err, codec.ErrInvalid)
}

// TestObjectUnencodable: a value neither codec can encode aborts the job
// with ErrInvalid, naming the call, the rank and the type.
func TestObjectUnencodable(t *testing.T) {
	type unencodable struct{ C chan int }
	for _, oc := range objectCodecs()[:3] {
		t.Run(oc.name, func(t *testing.T) {
			cs := job(t, 2)
			errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
				v := unencodable{}
				return BcastObject(ctx, c, &v, 1, oc.opts...)
			})
			require.ErrorIs(t, errs[1], codec.ErrInvalid)
			require.ErrorContains(t, errs[1], "BcastObject on rank 1: encoding collective.unencodable")
			require.True(t, errors.Is(errs[0], comm.ErrAborted) || errors.Is(errs[0], codec.ErrInvalid), "rank 0: %v", errs[0])
		})
	}
}

// BenchmarkObjectBcast compares Bcast of a []float32 with BcastObject of
// the same slice through RawCodec and GobCodec, between 2 ranks over
// links in memory (mem), through shared memory (auto) and over loopback
// tcp. Each rank
// receives into the same variable every time, as a training loop would.
func BenchmarkObjectBcast(b *testing.B) {
	for _, tr := range []string{"mem", "auto", "tcp"} {
		for _, bytes := range []int{64 << 10, 1 << 20} {
			for _, how := range []string{"typed", "raw", "gob"} {
				b.Run(fmt.Sprintf("%s/%s/%dKiB", tr, how, bytes>>10), func(b *testing.B) {
					b.ReportAllocs()
					benchCollective(b, 2, bytes, comm.WithTransport(tr), func(ctx context.Context, c *comm.Comm, buf []float32) error {
						switch how {
						case "raw":
							return BcastObject(ctx, c, &buf, 0)
						case "gob":
							return BcastObject(ctx, c, &buf, 0, WithObjectCodec(GobCodec))
						}
						return Bcast(ctx, c, buf, 0)
					})
				})
			}
		}
	}
}

// BenchmarkObjectAllgather times AllgatherObject of a struct holding a
// gradient, through both codecs, against Allgather of the gradient into
// a buffer allocated once, like BenchmarkObjectBcast. AllgatherObject
// returns new values, so it allocates each gradient every time.
func BenchmarkObjectAllgather(b *testing.B) {
	for _, tr := range []string{"mem", "auto"} {
		for _, bytes := range []int{64 << 10, 1 << 20} {
			for _, how := range []string{"typed", "raw", "gob"} {
				b.Run(fmt.Sprintf("%s/%s/%dKiB", tr, how, bytes>>10), func(b *testing.B) {
					b.ReportAllocs()
					recvs := [2][]float32{make([]float32, bytes/2), make([]float32, bytes/2)}
					benchCollective(b, 2, bytes, comm.WithTransport(tr), func(ctx context.Context, c *comm.Comm, buf []float32) error {
						v := struct {
							ID   int
							Name string
							Grad []float32
						}{c.Rank(), "w", buf}
						switch how {
						case "raw":
							_, err := AllgatherObject(ctx, c, v)
							return err
						case "gob":
							_, err := AllgatherObject(ctx, c, v, WithObjectCodec(GobCodec))
							return err
						}
						return Allgather(ctx, c, buf, recvs[c.Rank()])
					})
				})
			}
		}
	}
}

// TestGobCodecChecksItsFraming: a gob stream whose message declares more
// bytes than follow is an error before encoding/gob reads it, which would
// first allocate what it declares (10 MiB for the 7 bytes below, found by
// FuzzRecvObject), and a length byte that no gob writes is an error, not
// a panic.
func TestGobCodecChecksItsFraming(t *testing.T) {
	valid, err := GobCodec.Append(nil, &[]int32{1, 2, 3})
	require.NoError(t, err)
	cases := []struct {
		name    string
		payload []byte
		ok      bool
	}{
		{"valid", valid, true},
		{"truncated", valid[:len(valid)-1], false},
		{"declares 808 MB", []byte("\xfa\x00\x000000"), false},
		{"length of 128 bytes", []byte{0x80}, false},
		{"length cut short", []byte{0xfe, 0x01}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v []int32
			before := allocatedBytes()
			err := GobCodec.Decode(tc.payload, &v)
			allocated := allocatedBytes() - before
			if tc.ok {
				require.NoError(t, err)
				require.Equal(t, []int32{1, 2, 3}, v)
				return
			}
			require.Error(t, err)
			require.Less(t, allocated, uint64(64<<10), "allocated bytes")
		})
	}
}
