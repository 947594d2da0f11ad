package collective

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
)

// rankCounts are the job sizes every collective is checked at. Under the
// race detector, which looks for goroutines that touch memory unordered
// and finds them at any size from 2, the sizes stop at 5: 4 is the power
// of two of more than one step, 3 and 5 the sizes that are not, and eight
// goroutine ranks took a third of the race run (49 of 137 s on a host of
// two CPUs); the normal run checks every size.
var rankCounts = func() []int {
	if raceEnabled {
		return []int{1, 2, 3, 4, 5}
	}
	return []int{1, 2, 3, 4, 5, 6, 7, 8}
}()

// watchdog bounds every job a test runs: a hang fails the test and names
// the ranks still running.
const watchdog = 60 * time.Second

// steadyAllocs is testing.AllocsPerRun of a collective's steady state,
// with the garbage collector off while it runs: a collection empties the
// buffer pools that a steady call takes from, and the ranks then fill
// them again with new allocations, which the count takes for the call's.
// CI saw it with 20 calls (311539f) and again with 50 (an Alltoall over
// auto counted one per call on a loaded runner). With the collector off
// every allocation still counts; only the refills go.
func steadyAllocs(rounds int, f func()) float64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	return testing.AllocsPerRun(rounds, f)
}

// job starts n ranks in this process (over mem, or tcp with
// comm.WithTransport("tcp")) and closes them when the test ends.
func job(t testing.TB, n int, opts ...comm.Option) []*comm.Comm {
	t.Helper()
	cs, err := comm.NewLocal(n, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
		wg.Wait()
	})
	return cs
}

// onEveryRank runs f for every rank in its own goroutine and returns each
// rank's error. A nil entry of cs is a rank in another process (see
// TestShmBetweenProcesses), which runs f there.
func onEveryRank(t testing.TB, cs []*comm.Comm, f func(ctx context.Context, c *comm.Comm) error) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	errs := make([]error, len(cs))
	done := make(chan int, len(cs))
	for i, c := range cs {
		if c == nil {
			done <- i
			continue
		}
		go func() {
			defer func() {
				if p := recover(); p != nil {
					// Abort the job, so that the others stop waiting for
					// this rank now rather than at the watchdog.
					errs[i] = fmt.Errorf("rank %d panicked: %v\n%s", i, p, debug.Stack())
					c.Abort(errs[i])
				}
				done <- i
			}()
			errs[i] = f(ctx, c)
		}()
	}
	finished := make([]bool, len(cs))
	for range cs {
		select {
		case i := <-done:
			finished[i] = true
		case <-time.After(watchdog + 5*time.Second):
			t.Fatalf("ranks still running after %v (finished: %v)", watchdog, finished)
		}
	}
	return errs
}

// allOK runs f on every rank and fails the test with each rank's error.
func allOK(t testing.TB, cs []*comm.Comm, f func(ctx context.Context, c *comm.Comm) error) {
	t.Helper()
	for r, err := range onEveryRank(t, cs, f) {
		require.NoError(t, err, "rank %d", r)
	}
}

// input is rank r's deterministic input of n elements for seed. Values are
// small integers (also for floats, BF16 and FP16), so sums and products
// over a few ranks are exact in every type and every algorithm's order of
// operations gives the same bits as the sequential reference.
func input[T codec.Elem](r, n, seed int) []T {
	// The values repeat every five elements: one period made with
	// fromInt's type switch, and the rest copied, since the matrices'
	// inputs were a tenth of collective's test time element by element.
	var period [5]T
	for i := range period {
		period[i] = fromInt[T]((r*7 + i*3 + seed) % 5)
	}
	return slices.Repeat(period[:], (n+4)/5)[:n:n]
}

// fromInt converts a small integer to T.
func fromInt[T codec.Elem](v int) T {
	var z T
	switch any(z).(type) {
	case codec.BFloat16:
		return any(codec.BFloat16FromFloat32(float32(v))).(T)
	case codec.Float16:
		return any(codec.Float16FromFloat32(float32(v))).(T)
	case float32:
		return any(float32(v)).(T)
	case float64:
		return any(float64(v)).(T)
	case int8:
		return any(int8(v)).(T)
	case int16:
		return any(int16(v)).(T)
	case int32:
		return any(int32(v)).(T)
	case int64:
		return any(int64(v)).(T)
	case uint8:
		return any(uint8(v)).(T)
	case uint16:
		return any(uint16(v)).(T)
	case uint32:
		return any(uint32(v)).(T)
	case uint64:
		return any(uint64(v)).(T)
	}
	panic("unreachable")
}

// reference reduces the inputs of ranks 0..n-1 in rank order with op,
// sequentially: the result every algorithm must match bit for bit.
func reference[T codec.Elem](op codec.Op, inputs [][]T) []T {
	out := append([]T(nil), inputs[0]...)
	for _, in := range inputs[1:] {
		if err := kernel.Reduce(op, out, in); err != nil {
			panic(err)
		}
	}
	kernel.Finish(op, out, len(inputs))
	return out
}

// counts are the buffer lengths every collective is checked with for n
// ranks: empty, one element, fewer elements than ranks, more, and sizes
// that take several chunks and leave remainders.
func counts(n int) []int {
	return []int{0, 1, max(n-1, 0), n + 1, 1000, 65537}
}

// countsFor is counts(n) for one case of a test. Under the race detector
// the largest count runs only in the cases marked full (one element type
// per collective and algorithm), which keeps the race run short; the
// normal run covers every case.
func countsFor(n int, full bool) []int {
	c := counts(n)
	if full || !raceEnabled {
		return c
	}
	return c[:len(c)-1]
}

// equalBits compares two slices element by element as bits (so NaNs with
// equal payloads compare equal) and names the first difference.
func equalBits[T codec.Elem](got, want []T) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d elements, want %d", len(got), len(want))
	}
	g, w := codec.Bytes(got), codec.Bytes(want)
	if bytes.Equal(g, w) {
		return nil // the whole at once; element by element only to name a difference
	}
	size := len(g) / max(len(got), 1)
	for i := range got {
		if string(g[i*size:(i+1)*size]) != string(w[i*size:(i+1)*size]) {
			return fmt.Errorf("element %d is %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// rankCall is one rank's part in a test job: a collective call, made with
// arguments that may differ from rank to rank.
type rankCall func(ctx context.Context, c *comm.Comm) error

// requireRefused runs call on every rank of a fresh job of n ranks: the
// ranks in bad must fail with an error wrapping codec.ErrInvalid that
// names the rank and contains each of want. Their refusal aborts the
// job, so every other rank must fail too instead of hanging: in call
// itself, or, if it only had to send and finished before the abort
// reached it, in a receive from a refusing rank, which only the abort can
// end.
func requireRefused(t *testing.T, n int, bad []int, call rankCall, want ...string) {
	t.Helper()
	cs := job(t, n, comm.WithTimeout(watchdog))
	errs := onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
		err := call(ctx, c)
		if err != nil || slices.Contains(bad, c.Rank()) {
			return err
		}
		if _, err := c.Recv(ctx, bad[0], 0, make([]byte, 1)); err != nil {
			return err
		}
		return errors.New("a refusing rank sent a message after its refusal")
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		if slices.Contains(bad, r) {
			require.ErrorIs(t, err, codec.ErrInvalid, "rank %d", r)
			require.ErrorContains(t, err, fmt.Sprintf("on rank %d", r), "rank %d", r)
			for _, w := range want {
				require.ErrorContains(t, err, w, "rank %d", r)
			}
			continue
		}
		require.True(t, errors.Is(err, comm.ErrAborted) || errors.Is(err, codec.ErrInvalid),
			"rank %d: want the abort, got %v", r, err)
	}
}

// requireMismatch runs call, in which the ranks disagree, on every rank
// of a fresh job of n ranks (with opts), followed by a Barrier. Every
// rank must fail with an error wrapping comm.ErrMismatch (the mismatch itself
// or the abort it causes) that names both calls: each of want must be in
// its error. Of two ranks both fail inside call; of more, a rank whose
// part matched the ranks it exchanged data with may fail in the Barrier
// instead, with the abort. None may fail by the timeout, which is left
// long (the watchdog) so that a mismatch the check misses shows as a
// timeout error, not as a pass.
func requireMismatch(t *testing.T, n int, call rankCall, want []string, opts ...comm.Option) {
	t.Helper()
	cs := job(t, n, append([]comm.Option{comm.WithTimeout(watchdog)}, opts...)...)
	inCall := make([]bool, n)
	for r, err := range onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
		if err := call(ctx, c); err != nil {
			inCall[c.Rank()] = true
			return err
		}
		return Barrier(ctx, c)
	}) {
		require.Error(t, err, "rank %d", r)
		require.ErrorIs(t, err, comm.ErrMismatch, "rank %d", r)
		if n == 2 {
			require.True(t, inCall[r], "rank %d returned nil from the call; it failed after: %v", r, err)
		}
		require.NotErrorIs(t, err, comm.ErrTimeout, "rank %d", r)
		require.GreaterOrEqual(t, strings.Count(err.Error(), " called "), 2, "rank %d: %v does not name both calls", r, err)
		for _, w := range want {
			require.ErrorContains(t, err, w, "rank %d", r)
		}
	}
}

// registered says, while a test runs the checks on registered memory,
// whether rank r's buffers come from Alloc; nil: nobody's do. Set it
// with useRegistered.
var registered func(r int) bool

// useRegistered makes place put the buffers of the ranks that on names in
// registered memory until t ends, and then frees that memory.
func useRegistered(t testing.TB, on func(r int) bool) {
	registered = on
	t.Cleanup(func() {
		registered = nil
		regPool.drain(t)
	})
}

// place returns s, or when registered says so for rank, a copy of s in
// registered memory, which returns to regPool when the test ends.
func place[T codec.Elem](t testing.TB, rank int, s []T) []T {
	if registered == nil || !registered(rank) || len(s) == 0 {
		return s
	}
	b, err := regPool.get(len(s) * int(unsafe.Sizeof(s[0])))
	if err != nil {
		panic(err) // in a rank's goroutine: onEveryRank reports it
	}
	t.Cleanup(func() { regPool.put(b) })
	r := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(s))
	copy(r, s)
	return r
}

// regPool keeps the registered allocations of the cases that ended, by
// size, for the next cases of a test that place puts in registered
// memory: a fresh allocation's pages fault in at first touch, at 11 µs a
// page on a VM under PVM, where TestShmRegistered spent most of its time
// so.
var regPool = registeredPool{free: make(map[int][][]byte)}

type registeredPool struct {
	mu   sync.Mutex
	free map[int][][]byte // by length
}

func (p *registeredPool) get(n int) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bs := p.free[n]; len(bs) > 0 {
		p.free[n] = bs[:len(bs)-1]
		return bs[len(bs)-1], nil
	}
	return Alloc[byte](n)
}

func (p *registeredPool) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free[len(b)] = append(p.free[len(b)], b)
}

// drain frees every allocation in the pool: Free fails for one that a
// call still uses after its test ended.
func (p *registeredPool) drain(t testing.TB) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, bs := range p.free {
		for _, b := range bs {
			if err := Free(b); err != nil {
				t.Errorf("registered memory of %d bytes: %v", n, err)
			}
		}
		delete(p.free, n)
	}
}
