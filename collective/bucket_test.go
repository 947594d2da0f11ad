package collective

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// testTensor is one registered tensor of a test: filled with a rank's
// input for a step, and checked against the sequential reference.
type testTensor interface {
	register(b *Bucketer) (int, error)
	fill(rank, step int)
	check(op codec.Op, ranks, step int) error
}

type testBuf[T codec.Elem] struct {
	buf  []T
	seed int
}

func (t *testBuf[T]) register(b *Bucketer) (int, error) { return Register(b, t.buf) }

func (t *testBuf[T]) fill(rank, step int) { copy(t.buf, input[T](rank, len(t.buf), t.seed+step)) }

func (t *testBuf[T]) check(op codec.Op, ranks, step int) error {
	inputs := make([][]T, ranks)
	for r := range inputs {
		inputs[r] = input[T](r, len(t.buf), t.seed+step)
	}
	return equalBits(t.buf, reference(op, inputs))
}

// spec makes a test tensor; the seed varies the inputs between tensors.
type spec func(seed int) testTensor

func of[T codec.Elem](n int) spec {
	return func(seed int) testTensor { return &testBuf[T]{buf: make([]T, n), seed: seed} }
}

// mixedLimit and mixedSpecs exercise every rule of bucket assignment:
// filling, overflow, a change of element type, a tensor that fills a
// bucket exactly, one larger than the limit, and empty tensors.
const mixedLimit = 4096

var mixedSpecs = []spec{
	of[float32](0), of[float32](1), of[float32](500), // bucket 0: 2004 bytes
	of[float32](600),                 // bucket 1: would overflow bucket 0
	of[float64](0), of[float64](100), // bucket 2: a new type
	of[float64](2000),                 // bucket 3: larger than the limit
	of[float64](3),                    // bucket 4: nothing joins an oversized bucket
	of[int32](7),                      // bucket 5
	of[codec.BFloat16](10),            // bucket 6
	of[float32](1024), of[float32](0), // bucket 7: exactly the limit, and an empty tensor
	of[float32](1), // bucket 8
}

// mixedPlan is the bucket assignment of mixedSpecs, as labels name it.
var mixedPlan = []string{
	"bucket 0 (tensors 0-2: 501 float32)",
	"bucket 1 (tensor 3: 600 float32)",
	"bucket 2 (tensors 4-5: 100 float64)",
	"bucket 3 (tensor 6: 2000 float64)",
	"bucket 4 (tensor 7: 3 float64)",
	"bucket 5 (tensor 8: 7 int32)",
	"bucket 6 (tensor 9: 10 bf16)",
	"bucket 7 (tensors 10-11: 1024 float32)",
	"bucket 8 (tensor 12: 1 float32)",
}

// newTestBucketer registers fresh tensors of specs with a new Bucketer.
func newTestBucketer(c *comm.Comm, op codec.Op, specs []spec, opts ...BucketOption) (*Bucketer, []testTensor, error) {
	b, err := NewBucketer(c, op, opts...)
	if err != nil {
		return nil, nil, err
	}
	ts := make([]testTensor, len(specs))
	for i, s := range specs {
		ts[i] = s(i * 11)
		j, err := ts[i].register(b)
		if err != nil {
			return nil, nil, err
		}
		if j != i {
			return nil, nil, fmt.Errorf("tensor %d registered as %d", i, j)
		}
	}
	return b, ts, nil
}

func planOf(b *Bucketer) []string {
	labels := make([]string, len(b.buckets))
	for i := range labels {
		labels[i] = b.label(i)
	}
	return labels
}

func TestBucketPlan(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name  string
		specs []spec
		opts  []BucketOption
		want  []string
	}{
		{name: "mixed", specs: mixedSpecs, opts: []BucketOption{WithBucketBytes(mixedLimit)}, want: mixedPlan},
		{
			name:  "default limit",
			specs: []spec{of[float32](mib), of[float32](mib), of[float32](mib), of[float32](mib), of[float32](mib), of[float32](mib), of[float32](mib)},
			want:  []string{"bucket 0 (tensors 0-5: 6291456 float32)", "bucket 1 (tensor 6: 1048576 float32)"},
		},
		{
			name:  "oversized first",
			specs: []spec{of[uint8](5), of[uint8](1), of[uint8](4)},
			opts:  []BucketOption{WithBucketBytes(4)},
			want:  []string{"bucket 0 (tensor 0: 5 uint8)", "bucket 1 (tensor 1: 1 uint8)", "bucket 2 (tensor 2: 4 uint8)"},
		},
		{name: "none", want: []string{}},
	}
	cs := job(t, 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _, err := newTestBucketer(cs[0], codec.Sum, tt.specs, tt.opts...)
			require.NoError(t, err)
			require.Equal(t, tt.want, planOf(b))
		})
	}
}

func TestBucketOptionsRefused(t *testing.T) {
	cs := job(t, 1)
	_, err := NewBucketer(cs[0], codec.Sum, WithBucketBytes(0))
	require.ErrorIs(t, err, codec.ErrInvalid)
	require.ErrorContains(t, err, "bucket size 0 bytes")
	_, err = NewBucketer(nil, codec.Sum)
	require.ErrorIs(t, err, codec.ErrInvalid)

	b, err := NewBucketer(cs[0], codec.Xor)
	require.NoError(t, err)
	_, err = Register(b, make([]int8, 3))
	require.NoError(t, err)
	_, err = Register(b, make([]float32, 3))
	require.ErrorIs(t, err, codec.ErrInvalid)
	require.ErrorContains(t, err, "tensor 1 (3 float32)")
}

// A step's ways of marking tensors ready, on rank r in step s.
var bucketModes = []struct {
	name string
	step func(ctx context.Context, b *Bucketer, n, r, s int) error
}{
	{"AllreduceAll", func(ctx context.Context, b *Bucketer, _, _, _ int) error { return b.AllreduceAll(ctx) }},
	{"Ready in order", func(ctx context.Context, b *Bucketer, n, _, _ int) error {
		for i := range n {
			if err := b.Ready(ctx, i); err != nil {
				return err
			}
		}
		return b.Wait(ctx)
	}},
	{"Ready shuffled", func(ctx context.Context, b *Bucketer, n, r, s int) error {
		// A different order on every rank and in every step.
		for _, i := range rand.New(rand.NewPCG(uint64(r), uint64(s))).Perm(n) {
			if err := b.Ready(ctx, i); err != nil {
				return err
			}
		}
		return b.Wait(ctx)
	}},
	{"Ready concurrent", func(ctx context.Context, b *Bucketer, n, _, _ int) error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = b.Ready(ctx, i) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return b.Wait(ctx)
	}},
	{"some Ready, then AllreduceAll", func(ctx context.Context, b *Bucketer, n, r, _ int) error {
		for i := r % 2; i < n; i += 3 {
			if err := b.Ready(ctx, i); err != nil {
				return err
			}
		}
		return b.AllreduceAll(ctx)
	}},
}

func TestBucketer(t *testing.T) {
	const steps = 3
	for _, n := range []int{1, 2, 3, 4} {
		for _, op := range []codec.Op{codec.Sum, codec.Avg} {
			for _, mode := range bucketModes {
				t.Run(fmt.Sprintf("n=%d/%s/%s", n, op, mode.name), func(t *testing.T) {
					cs := job(t, n)
					allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
						b, ts, err := newTestBucketer(c, op, mixedSpecs, WithBucketBytes(mixedLimit))
						if err != nil {
							return err
						}
						for s := range steps {
							for _, x := range ts {
								x.fill(c.Rank(), s)
							}
							if err := mode.step(ctx, b, len(ts), c.Rank(), s); err != nil {
								return fmt.Errorf("step %d: %w", s, err)
							}
							for i, x := range ts {
								if err := x.check(op, n, s); err != nil {
									return fmt.Errorf("step %d, rank %d, tensor %d: %w", s, c.Rank(), i, err)
								}
							}
						}
						return nil
					})
				})
			}
		}
	}
}

// TestBucketerRegistered: where ranks share a host, the buckets lie in
// registered memory and their Allreduces go direct: all of them when
// every rank shares one host, and the phases inside each host of a
// Hierarchical Allreduce when they span hosts. Close frees the buckets,
// refuses to while a step runs, and ends the Bucketer.
func TestBucketerRegistered(t *testing.T) {
	layouts := []struct {
		name  string
		hosts []string // of each rank
	}{
		{"one host", []string{"a", "a", "a"}},
		{"two hosts", []string{"a", "a", "b", "b"}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			cs := job(t, len(l.hosts), comm.WithTransport("auto"), comm.WithHostIdentity(func(r int) string { return l.hosts[r] }))
			checkBucketerRegistered(t, cs)
		})
	}
}

func checkBucketerRegistered(t *testing.T, cs []*comm.Comm) {
	const steps = 3
	n := len(cs)
	specs := []spec{of[float32](20000), of[float64](3000), of[float32](70000), of[int32](5)}
	before := directOps(cs)
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		b, ts, err := newTestBucketer(c, codec.Avg, specs, WithBucketBytes(256<<10))
		if err != nil {
			return err
		}
		for s := range steps {
			for _, x := range ts {
				x.fill(c.Rank(), s)
			}
			if err := b.AllreduceAll(ctx); err != nil {
				return fmt.Errorf("step %d: %w", s, err)
			}
			for i, x := range ts {
				if err := x.check(codec.Avg, n, s); err != nil {
					return fmt.Errorf("step %d, rank %d, tensor %d: %w", s, c.Rank(), i, err)
				}
			}
		}
		if err := b.Ready(ctx, 3); err != nil {
			return err
		}
		if err := b.Close(); !errors.Is(err, codec.ErrInvalid) {
			return fmt.Errorf("Close during a step: got %v, want an error wrapping ErrInvalid", err)
		}
		if err := b.AllreduceAll(ctx); err != nil {
			return err
		}
		if err := b.Close(); err != nil {
			return err
		}
		if err := b.Ready(ctx, 0); !errors.Is(err, comm.ErrClosed) {
			return fmt.Errorf("Ready after Close: got %v, want an error wrapping comm.ErrClosed", err)
		}
		return b.Close()
	})
	for r, ops := range directOps(cs) {
		require.Greater(t, ops, before[r], "rank %d's direct operations", r)
	}
}

func TestBucketReadyRefused(t *testing.T) {
	tests := []struct {
		name   string
		marked []int
		bad    int
		want   string
	}{
		{name: "twice", marked: []int{3}, bad: 3, want: "tensor 3 marked ready twice"},
		{name: "twice, bucket started", marked: []int{0, 1, 2}, bad: 1, want: "tensor 1 marked ready twice"},
		{name: "negative", bad: -1, want: "tensor -1 marked ready, but 13 tensors"},
		{name: "past the end", marked: []int{5}, bad: 13, want: "tensor 13 marked ready, but 13 tensors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := job(t, 2)
			allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				b, ts, err := newTestBucketer(c, codec.Sum, mixedSpecs, WithBucketBytes(mixedLimit))
				if err != nil {
					return err
				}
				for _, x := range ts {
					x.fill(c.Rank(), 0)
				}
				for _, i := range tt.marked {
					if err := b.Ready(ctx, i); err != nil {
						return err
					}
				}
				err = b.Ready(ctx, tt.bad)
				if !errors.Is(err, codec.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
					return fmt.Errorf("Ready(%d): got %v, want an invalid argument saying %q", tt.bad, err, tt.want)
				}
				// The refusal changed nothing: the step completes.
				if err := b.AllreduceAll(ctx); err != nil {
					return err
				}
				for i, x := range ts {
					if err := x.check(codec.Sum, len(cs), 0); err != nil {
						return fmt.Errorf("tensor %d: %w", i, err)
					}
				}
				return nil
			})
		})
	}
}

func TestBucketRegisterAfterFirstStep(t *testing.T) {
	cs := job(t, 1)
	ctx := context.Background()
	b, _, err := newTestBucketer(cs[0], codec.Sum, mixedSpecs[:2])
	require.NoError(t, err)
	require.NoError(t, b.AllreduceAll(ctx))
	_, err = Register(b, make([]float32, 4))
	require.ErrorIs(t, err, codec.ErrInvalid)
	require.ErrorContains(t, err, "tensor 2 registered after the first step")
}

// TestBucketWaitUnready: Wait before every tensor was marked ready names
// the missing tensors and aborts the job, since the other ranks would
// wait for the buckets this rank never started.
func TestBucketWaitUnready(t *testing.T) {
	cs := job(t, 2, comm.WithTimeout(watchdog))
	errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
		b, _, err := newTestBucketer(c, codec.Sum, mixedSpecs, WithBucketBytes(mixedLimit))
		if err != nil {
			return err
		}
		for _, i := range []int{0, 1, 2, 3, 4, 5} {
			if err := b.Ready(ctx, i); err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			return b.Wait(ctx)
		}
		for i := 6; i < 13; i++ {
			if err := b.Ready(ctx, i); err != nil {
				return err
			}
		}
		return b.Wait(ctx)
	})
	require.ErrorIs(t, errs[0], codec.ErrInvalid)
	require.ErrorContains(t, errs[0], "before tensors 6, 7, 8, 9, 10, 11, 12 were marked ready")
	require.ErrorIs(t, errs[1], comm.ErrAborted)
	require.NotErrorIs(t, errs[1], comm.ErrTimeout)
}

// TestBucketMismatch: ranks that register different tensors, or reduce
// differently, fail naming the tensor or the bucket, never by the
// timeout.
func TestBucketMismatch(t *testing.T) {
	type setup func(r int) ([]spec, []BucketOption, codec.Op)
	tests := []struct {
		name  string
		setup setup
		want  []string
	}{
		{
			name: "length",
			setup: func(r int) ([]spec, []BucketOption, codec.Op) {
				return []spec{of[float32](10), of[float32](100 - 50*r)}, nil, codec.Sum
			},
			want: []string{"tensor 1 is", "100 float32 on rank 0", "50 float32 on rank 1"},
		},
		{
			name: "element type",
			setup: func(r int) ([]spec, []BucketOption, codec.Op) {
				if r == 0 {
					return []spec{of[float32](8)}, nil, codec.Sum
				}
				return []spec{of[float64](8)}, nil, codec.Sum
			},
			want: []string{"tensor 0 is", "8 float32 on rank 0", "8 float64 on rank 1"},
		},
		{
			name: "bucket size",
			setup: func(r int) ([]spec, []BucketOption, codec.Op) {
				return []spec{of[float32](8)}, []BucketOption{WithBucketBytes(1024 << r)}, codec.Sum
			},
			want: []string{"buckets of", "1024", "2048"},
		},
		{
			name: "number of tensors",
			setup: func(r int) ([]spec, []BucketOption, codec.Op) {
				return make([]spec, 2+r), nil, codec.Sum
			},
			want: []string{"checking that every rank registered the same", " called ", "Allgather"},
		},
		{
			name: "op",
			setup: func(r int) ([]spec, []BucketOption, codec.Op) {
				return []spec{of[float32](8), of[float32](9)}, nil, []codec.Op{codec.Sum, codec.Max}[r]
			},
			want: []string{"bucket 0 (tensors 0-1: 17 float32)", " called ", "sum", "max"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := job(t, 2, comm.WithTimeout(watchdog))
			for r, err := range onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
				specs, opts, op := tt.setup(c.Rank())
				for i := range specs {
					if specs[i] == nil {
						specs[i] = of[float32](4)
					}
				}
				b, _, err := newTestBucketer(c, op, specs, opts...)
				if err != nil {
					return err
				}
				return b.AllreduceAll(ctx)
			}) {
				require.Error(t, err, "rank %d", r)
				require.True(t, errors.Is(err, comm.ErrMismatch) || errors.Is(err, comm.ErrAborted), "rank %d: %v", r, err)
				require.NotErrorIs(t, err, comm.ErrTimeout, "rank %d", r)
				for _, w := range tt.want {
					require.ErrorContains(t, err, w, "rank %d", r)
				}
			}
		})
	}
}

// TestBucketCancel: a step whose context ends returns its error at once,
// with every bucket's allreduce ended, even when the buckets were started
// under another context and the other ranks never take part.
func TestBucketCancel(t *testing.T) {
	tests := []struct {
		name string
		step func(ctx context.Context, b *Bucketer) error
		want error
	}{
		{
			name: "AllreduceAll deadline",
			step: func(ctx context.Context, b *Bucketer) error {
				ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				return b.AllreduceAll(ctx)
			},
			want: context.DeadlineExceeded,
		},
		{
			name: "Wait cancelled",
			step: func(ctx context.Context, b *Bucketer) error {
				for i := range len(mixedSpecs) {
					if err := b.Ready(ctx, i); err != nil {
						return err
					}
				}
				waitCtx, cancel := context.WithCancel(ctx)
				time.AfterFunc(50*time.Millisecond, cancel)
				return b.Wait(waitCtx)
			},
			want: context.Canceled,
		},
		{
			name: "Ready cancelled",
			step: func(ctx context.Context, b *Bucketer) error {
				require.NoError(t, b.Ready(ctx, 0))
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				if err := b.Ready(cancelled, 1); !errors.Is(err, context.Canceled) {
					return fmt.Errorf("Ready with a cancelled context: %w", err)
				}
				return b.Wait(cancelled)
			},
			want: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := job(t, 2, comm.WithTimeout(watchdog))
			done := make(chan struct{})
			errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
				b, _, err := newTestBucketer(c, codec.Sum, mixedSpecs, WithBucketBytes(mixedLimit))
				if err != nil {
					return err
				}
				if err := b.AllreduceAll(ctx); err != nil { // the plan's check needs every rank
					return err
				}
				if c.Rank() != 0 {
					<-done
					return nil
				}
				defer close(done)
				start := time.Now()
				err = tt.step(ctx, b)
				if took := time.Since(start); took > 5*time.Second {
					return fmt.Errorf("the cancelled step took %v", took)
				}
				for i := range b.buckets {
					if b.buckets[i].req != nil {
						return fmt.Errorf("bucket %d still has a request after the step", i)
					}
				}
				return err
			})
			require.ErrorIs(t, errs[0], tt.want)
			require.NoError(t, errs[1])
		})
	}
}

// TestBucketAllocations: a step allocates nothing beyond what the
// AllreduceAsync of each bucket costs. The baseline is the same step done
// by hand: an AllreduceAsync per bucket under a cancellable context, as
// the Bucketer's run, all in flight, then waited for. That costs about 8
// allocations per bucket (7 under context.Background); whether a receive
// has to wait, and allocate for it, depends on timing, so the two may
// differ by a stray allocation.
func TestBucketAllocations(t *testing.T) {
	if raceEnabled || !codec.Aliasing {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items) and in the purego build (views copy)")
	}
	const rounds, buckets = 100, 16
	specs := make([]spec, 4*buckets)
	for i := range specs {
		specs[i] = of[float32](256) // 1 KiB, 4 per bucket of 4 KiB
	}
	cs := job(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bs := make([]*Bucketer, len(cs))
	flats := make([][][]float32, len(cs))
	for r, c := range cs {
		var err error
		bs[r], _, err = newTestBucketer(c, codec.Avg, specs, WithBucketBytes(4096))
		require.NoError(t, err)
		require.Len(t, bs[r].buckets, buckets)
		flats[r] = make([][]float32, buckets)
		for i := range flats[r] {
			flats[r][i] = make([]float32, 1024)
		}
	}
	reqs := make([][]*Request, len(cs))
	byHand := func(r int) error {
		reqs[r] = reqs[r][:0]
		for _, flat := range flats[r] {
			reqs[r] = append(reqs[r], AllreduceAsync(ctx, cs[r], flat, codec.Avg))
		}
		var err error
		for _, req := range reqs[r] {
			err = errors.Join(err, req.Wait(ctx))
		}
		return err
	}
	bucketed := func(r int) error { return bs[r].AllreduceAll(ctx) }

	measure := func(step func(r int) error) float64 {
		other := make(chan error, 1)
		go func() {
			for range rounds + 2 {
				if err := step(1); err != nil {
					other <- err
					return
				}
			}
			other <- nil
		}()
		run := func() { require.NoError(t, step(0)) }
		run() // warm-up; for the Bucketer, the check of the plan
		allocs := steadyAllocs(rounds, run)
		require.NoError(t, <-other)
		return allocs
	}
	baseline := measure(byHand)
	perStep := measure(bucketed)
	t.Logf("%v allocations per step of %d buckets; %v by hand", perStep, buckets, baseline)
	require.LessOrEqual(t, perStep, baseline+1)
}

// BenchmarkBucketer times a step of 1000 float32 tensors of 4 KiB each
// over 2 ranks of this process: one Allreduce per tensor against a
// Bucketer's AllreduceAll with the default buckets (all in one) and with
// 1 MiB buckets (four, overlapping).
func BenchmarkBucketer(b *testing.B) {
	const tensors, elems = 1000, 1024
	for _, tr := range []string{"mem", "auto", "tcp"} {
		for _, way := range []string{"per tensor", "bucketed 25MiB", "bucketed 1MiB"} {
			b.Run(tr+"/"+way, func(b *testing.B) {
				cs := job(b, 2, comm.WithTransport(tr))
				steps := make([]func(context.Context) error, len(cs))
				for r, c := range cs {
					bufs := make([][]float32, tensors)
					for i := range bufs {
						bufs[i] = make([]float32, elems)
					}
					if way == "per tensor" {
						steps[r] = func(ctx context.Context) error {
							for _, buf := range bufs {
								if err := Allreduce(ctx, c, buf, codec.Avg); err != nil {
									return err
								}
							}
							return nil
						}
						continue
					}
					limit := DefaultBucketBytes
					if way == "bucketed 1MiB" {
						limit = 1 << 20
					}
					bk, err := NewBucketer(c, codec.Avg, WithBucketBytes(limit))
					require.NoError(b, err)
					for _, buf := range bufs {
						_, err := Register(bk, buf)
						require.NoError(b, err)
					}
					steps[r] = bk.AllreduceAll
				}
				b.SetBytes(tensors * elems * 4)
				b.ReportAllocs()
				iters := b.N
				b.ResetTimer()
				allOK(b, cs, func(ctx context.Context, c *comm.Comm) error {
					for range iters {
						if err := steps[c.Rank()](ctx); err != nil {
							return err
						}
					}
					return nil
				})
			})
		}
	}
}
