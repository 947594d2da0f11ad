package collective

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/wire"
)

// shmJob is a job whose ranks share a segment, as processes of one host
// do with the auto transport.
func shmJob(t testing.TB, n int, opts ...comm.Option) []*comm.Comm {
	t.Helper()
	cs := job(t, n, append([]comm.Option{comm.WithTransport("auto")}, opts...)...)
	for _, c := range cs {
		require.Equal(t, n > 1, (*core.Comm)(c).Segment() != nil, "rank %d's segment", c.Rank())
	}
	return cs
}

// TestShm is the conformance matrix of the shared-memory algorithms
// among ranks of this process, both with Shm asked for and chosen by the
// selector; TestShmBetweenProcesses runs it among processes.
func TestShm(t *testing.T) {
	for _, v := range []struct {
		algo Algorithm
		slot int // 0: the default
	}{
		// 4 KiB slots make every count above a few hundred take rounds.
		{Shm, 4096},
		{Auto, 0},
	} {
		t.Run(fmt.Sprintf("%s/slot=%d", v.algo, v.slot), func(t *testing.T) {
			algo := v.algo
			var opts []comm.Option
			if v.slot > 0 {
				opts = append(opts, comm.WithSegmentSlot(v.slot))
			}
			for _, n := range rankCounts {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
					cs := shmJob(t, n, opts...)
					checkShm(t, cs, algo)
					t.Run("barrier", func(t *testing.T) { checkBarrier(t, cs) })
				})
			}
		})
	}
}

// TestShmReceivedAround runs the shared-memory conformance matrix with
// every rank taking what it receives out of the slots around the caches
// (kernel.CopyAround), which otherwise only operations of
// receiveAroundMin bytes do. In 64 KiB slots the largest counts cross
// rounds, and their takes are long enough to go around the caches (from
// 4 KiB).
func TestShmReceivedAround(t *testing.T) {
	defer func(min int) { receiveAroundMin = min }(receiveAroundMin)
	receiveAroundMin = 0
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			checkShm(t, shmJob(t, n, comm.WithSegmentSlot(64<<10)), Shm)
		})
	}
}

// checkShm runs every collective that has a shared-memory algorithm on
// the ranks cs, every root, the counts of the other algorithms' tests
// (which cross the segment's rounds), and non-commutative reductions.
func checkShm(t *testing.T, cs []*comm.Comm, algo Algorithm) {
	n := len(cs)
	t.Run("allreduce", func(t *testing.T) { checkAllreduceTypes(t, cs, algo) })
	rootedCase(t, n, func(t *testing.T, root int, full bool) {
		checkReduce[float32](t, cs, algo, codec.Sum, root, countsFor(n, full))
		checkReduce[float64](t, cs, algo, codec.Avg, root, countsFor(n, false))
		checkReduce[codec.BFloat16](t, cs, algo, codec.Max, root, countsFor(n, false))
		checkBcast[float32](t, cs, algo, root, countsFor(n, full))
		checkBcast[uint8](t, cs, algo, root, countsFor(n, false))
		checkGather[float32](t, cs, algo, root, countsFor(n, full))
		checkGather[int32](t, cs, algo, root, countsFor(n, false))
		checkScatter[float32](t, cs, algo, root, countsFor(n, full))
		checkScatter[uint16](t, cs, algo, root, countsFor(n, false))
		checkGatherv[float32](t, cs, algo, root, countsFor(n, full))
		checkScatterv[float64](t, cs, algo, root, countsFor(n, false))
	})
	t.Run("allgather", func(t *testing.T) {
		checkAllgather[float32](t, cs, algo, countsFor(n, true))
		checkAllgather[codec.BFloat16](t, cs, algo, countsFor(n, false))
	})
	t.Run("alltoall", func(t *testing.T) {
		checkAlltoall[float32](t, cs, algo, countsFor(n, true))
		checkAlltoall[int16](t, cs, algo, countsFor(n, false))
	})
	t.Run("allgatherv", func(t *testing.T) {
		checkAllgatherv[float32](t, cs, algo, countsFor(n, true))
		checkAllgatherv[uint8](t, cs, algo, countsFor(n, false))
	})
	t.Run("reducescatter", func(t *testing.T) {
		checkReduceScatter[float32](t, cs, algo, codec.Sum, countsFor(n, true))
		checkReduceScatter[float64](t, cs, algo, codec.Avg, countsFor(n, false))
		checkReduceScatter[int32](t, cs, algo, codec.Max, countsFor(n, false))
		checkReduceScatter[uint64](t, cs, algo, packedMatMul, countsFor(n, false))
	})
	t.Run("scan", func(t *testing.T) {
		for _, inclusive := range []bool{true, false} {
			checkScan[float32](t, cs, inclusive, algo, codec.Sum, countsFor(n, true))
			checkScan[float64](t, cs, inclusive, algo, codec.Avg, countsFor(n, false))
			checkScan[uint64](t, cs, inclusive, algo, packedMatMul, countsFor(n, false))
		}
	})
	t.Run("non-commutative", func(t *testing.T) { checkNonCommutative(t, cs, algo) })
}

// TestShmWaitIsKnocked: a rank that waits on the segment past its spin
// parks, and the rank it waits for wakes it with a knock on its socket:
// a futex sleep would be a system call, which at GOMAXPROCS=1 sets Go's
// runtime monitor looking every 20 µs (core's knock_linux.go).
//
// A park lasts 2 ms at most, and between two the waiter looks at the
// segment awake for a microsecond or so: a rank that rings then finds
// nobody asleep and rightly knocks on nobody. That failed CI once in a
// run of many (2026-11-30), so the test tries knocksTried times: a
// knock heard in any of them shows the way works.
func TestShmWaitIsKnocked(t *testing.T) {
	const knocksTried = 5
	cs := shmJob(t, 2)
	seg := (*core.Comm)(cs[0]).Segment()
	before := seg.Knocks()
	for range knocksTried {
		waited := make(chan error, 1)
		go func() { waited <- Barrier(t.Context(), cs[0]) }()
		require.Eventually(t, func() bool { return seg.Sleepers() > 0 }, time.Minute, time.Millisecond, "rank 0 never slept")
		require.NoError(t, Barrier(t.Context(), cs[1]))
		require.NoError(t, <-waited)
		if heardKnock(seg, before) {
			return
		}
	}
	t.Errorf("rank 0 heard no knock in %d waits", knocksTried)
}

// heardKnock reports whether seg's watcher has read more than before knocks,
// waiting a while for one that may still be on its way.
func heardKnock(seg *core.Segment, before uint64) bool {
	for range 1000 {
		if seg.Knocks() > before {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// TestShmRegistered runs the shared-memory matrix on buffers from Alloc,
// in every registeredMode, at every rank count.
func TestShmRegistered(t *testing.T) {
	for _, mode := range registeredModes {
		t.Run(mode.name, func(t *testing.T) {
			ranks := mode.ranks
			if ranks == nil {
				ranks = rankCounts
			}
			for _, n := range ranks {
				t.Run(fmt.Sprint("n=", n), func(t *testing.T) { mode.check(t, shmJob(t, n, mode.options()...)) })
			}
		})
	}
}

// registeredMode is a way of placing a job's buffers in registered
// memory, in which TestShmRegistered runs the matrix among goroutines and
// TestShmBetweenProcesses among processes.
type registeredMode struct {
	name string
	on   func(r int) bool // whether rank r's buffers come from Alloc
	// direct says that the calls go direct wherever the ranks share a
	// segment; where only some ranks' buffers are registered, every rank
	// takes the segment's slots instead.
	direct bool
	// split runs the matrix on the sub-communicators of the even and of
	// the odd ranks (Split) instead of on the job.
	split bool
	// single makes the calls that do not go direct copy once out of the
	// ranks' buffers wherever they can, and checks that they do; without
	// it they never do (WithSingleCopy, GOCOLL_SINGLE_COPY between
	// processes).
	single bool
	// ranks are the rank counts it runs at in process; all of rankCounts
	// when nil.
	ranks []int
}

// options are the options of a job in mode m.
func (m registeredMode) options() []comm.Option {
	return []comm.Option{comm.WithSingleCopy(m.singleCopy())}
}

// singleCopy is the single-copy setting of a job in mode m.
func (m registeredMode) singleCopy() string {
	if m.single {
		return core.SingleCopyCMA
	}
	return core.SingleCopyNone
}

var registeredModes = []registeredMode{
	{name: "all", on: func(int) bool { return true }, direct: true},
	{name: "mixed", on: func(r int) bool { return r%2 == 0 }},
	// Single copies out of ordinary buffers and registered ones alike.
	{name: "mixed, single copy", on: func(r int) bool { return r%2 == 0 }, single: true, ranks: []int{2, 3, 5}},
	// Sub-communicators of 2 and 1, 3 and 2, and 4 and 4 ranks: the
	// matrix at each size runs in the modes above.
	{name: "sub-communicators", on: func(int) bool { return true }, direct: true, split: true, ranks: []int{3, 5, 8}},
}

// check runs the matrix in mode m on cs, whose nil entries are ranks in
// other processes (see onEveryRank).
func (m registeredMode) check(t *testing.T, cs []*comm.Comm) {
	useRegistered(t, m.on)
	if !m.split {
		checkShmDirect(t, cs, m.direct, m.single)
		return
	}
	subs := make([][]*comm.Comm, 2)
	var mu sync.Mutex
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		color := c.Rank() % 2
		sub, err := c.Split(ctx, color, c.Rank())
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if subs[color] == nil {
			subs[color] = make([]*comm.Comm, sub.Size())
		}
		subs[color][sub.Rank()] = sub
		return nil
	})
	for color, sub := range subs {
		if sub == nil {
			continue // a job of one rank, or none of the color's ranks runs in this process
		}
		t.Run(fmt.Sprint("color=", color), func(t *testing.T) { checkShmDirect(t, sub, m.direct, m.single) })
	}
}

// TestDirectFrom: a rooted call goes direct from a larger size where the
// host's ranks outnumber its CPUs, since its direct path makes every rank
// wait for the others to be done with its buffer, a Bcast, whose root
// copies a share, from a smaller one than the others; other calls go
// direct from directMin wherever they run.
func TestDirectFrom(t *testing.T) {
	tests := []struct {
		kind    wire.Kind
		crowded bool
		want    int
	}{
		{wire.KindBcast, false, directMin},
		{wire.KindBcast, true, directMinCrowdedBcast},
		{wire.KindGather, true, directMinCrowded},
		{wire.KindScatter, true, directMinCrowded},
		{wire.KindGather, false, directMin},
		{wire.KindAllreduce, true, directMin},
		{wire.KindReduceScatter, true, directMin},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/crowded=%v", tt.kind, tt.crowded), func(t *testing.T) {
			require.Equal(t, tt.want, directFrom(tt.kind, tt.crowded))
		})
	}
}

// TestBcastSplits: a direct Bcast is split wherever each rank has a CPU,
// and on a crowded host up to crowdedSplitMax.
func TestBcastSplits(t *testing.T) {
	tests := []struct {
		crowded bool
		bytes   int
		want    bool
	}{
		{false, directMin, true},
		{false, 64 << 20, true},
		{true, directMinCrowded, true},
		{true, crowdedSplitMax, true},
		{true, crowdedSplitMax + 1, false},
		{true, 64 << 20, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("crowded=%v/%d", tt.crowded, tt.bytes), func(t *testing.T) {
			require.Equal(t, tt.want, bcastSplits(tt.crowded, tt.bytes))
		})
	}
}

// TestRegisteredOutlivesCommunicator: registered memory belongs to the
// process, not to a communicator: after the communicator it served
// closes, each slice keeps its values, and another communicator goes
// direct on it.
func TestRegisteredOutlivesCommunicator(t *testing.T) {
	const n, count = 2, 1 << 14
	bufs := make([][]float32, n)
	for r := range bufs {
		b, err := Alloc[float32](count)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, Free(b)) })
		for i := range b {
			b[i] = float32(r + 1)
		}
		bufs[r] = b
	}
	sum := func(cs []*comm.Comm) {
		allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
			return Allreduce(ctx, c, bufs[c.Rank()], codec.Sum)
		})
	}
	first, err := comm.NewLocal(n, comm.WithTransport("auto"))
	require.NoError(t, err)
	sum(first)
	var wg sync.WaitGroup
	for _, c := range first {
		wg.Go(func() { require.NoError(t, c.Close()) })
	}
	wg.Wait()
	for r, b := range bufs {
		require.Equal(t, float32(3), b[count-1], "rank %d's buffer after Close", r)
	}
	second := shmJob(t, n)
	before := directOps(second)
	sum(second)
	for r, b := range bufs {
		require.Equal(t, float32(6), b[0], "rank %d's buffer", r)
	}
	for r, ops := range directOps(second) {
		require.Greater(t, ops, before[r], "rank %d's direct operations", r)
	}
}

// checkShmDirect runs the matrix on cs, then checkEachDirect. Where the
// calls must not go direct, no call of the matrix may either.
func checkShmDirect(t *testing.T, cs []*comm.Comm, direct, single bool) {
	direct = direct && len(cs) > 1 // a single rank has no segment
	single = single && !direct && len(cs) > 1
	before, beforeSingle := directOps(cs), singleOps(cs)
	checkShm(t, cs, Auto)
	if !direct {
		require.Equal(t, before, directOps(cs), "direct operations of the matrix")
	}
	if single {
		require.NotEqual(t, beforeSingle, singleOps(cs), "single copies of the matrix")
	}
	checkEachDirect(t, cs, direct, single)
}

// directElems is the whole count, in float32s, of each call that
// checkEachDirect makes: 512 KiB, twice directMinCrowded, the largest
// size from which a call goes direct (Bcast, Gather and Scatter where the
// host's ranks outnumber its CPUs, as three ranks do on a machine of two;
// 16 KiB, directMin, elsewhere). Every call then clears its threshold by
// a wide margin, at any rank count, crowded or not: the smallest, the
// mixed counts of Allgatherv at two ranks, still adds up to 128 KiB.
const directElems = 2 * directMinCrowded / 4

// directChecks are the collectives that have a direct path or copy once,
// each as its test's check on counts of directElems in all, and how many
// calls of the collective that check makes. The rooted calls' roots
// differ, so that the first rank, a middle one and the last each lend
// their buffers.
var directChecks = []struct {
	name   string
	calls  int
	direct bool // whether it goes direct where every rank's buffers are registered
	single bool // whether it copies once out of ordinary buffers
	check  func(t *testing.T, cs []*comm.Comm)
}{
	{"allreduce", 1, true, true, func(t *testing.T, cs []*comm.Comm) {
		checkAllreduce[float32](t, cs, Auto, codec.Sum, []int{directElems})
	}},
	{"reducescatter", 1, true, true, func(t *testing.T, cs []*comm.Comm) {
		checkReduceScatter[float32](t, cs, Auto, codec.Sum, []int{perRank(len(cs))})
	}},
	// A commutative op to the middle rank, and a non-commutative one,
	// combined in rank order, to the last.
	{"reduce", 2, false, true, func(t *testing.T, cs []*comm.Comm) {
		checkReduce[float32](t, cs, Auto, codec.Sum, len(cs)/2, []int{directElems})
		checkReduce[uint64](t, cs, Auto, packedMatMul, len(cs)-1, []int{directElems / 2})
	}},
	{"bcast", 1, true, true, func(t *testing.T, cs []*comm.Comm) {
		checkBcast[float32](t, cs, Auto, len(cs)-1, []int{directElems})
	}},
	{"gather", 1, true, true, func(t *testing.T, cs []*comm.Comm) {
		checkGather[float32](t, cs, Auto, len(cs)/2, []int{perRank(len(cs))})
	}},
	{"scatter", 1, true, true, func(t *testing.T, cs []*comm.Comm) {
		checkScatter[float32](t, cs, Auto, 0, []int{perRank(len(cs))})
	}},
	// Out of place and in place.
	{"allgather", 2, true, true, func(t *testing.T, cs []*comm.Comm) {
		checkAllgather[float32](t, cs, Auto, []int{perRank(len(cs))})
	}},
	// Equal counts and mixed ones.
	{"allgatherv", 2, true, true, func(t *testing.T, cs []*comm.Comm) {
		checkAllgatherv[float32](t, cs, Auto, []int{perRank(len(cs))})
	}},
	{"alltoall", 1, true, true, func(t *testing.T, cs []*comm.Comm) {
		checkAlltoall[float32](t, cs, Auto, []int{perRank(len(cs))})
	}},
}

// perRank is each rank's share of directElems among n ranks.
func perRank(n int) int { return (directElems + n - 1) / n }

// checkEachDirect runs each of directChecks on cs and checks, collective
// by collective, that every call went direct on every rank in this
// process, or, where it must not go direct, that none did, and likewise
// that every call that can copied once where single says so, and none
// elsewhere: a collective that fell back to the slots would pass the
// matrix unnoticed.
func checkEachDirect(t *testing.T, cs []*comm.Comm, direct, single bool) {
	for _, dc := range directChecks {
		t.Run("direct/"+dc.name, func(t *testing.T) {
			want, wantSingle := 0, 0
			if direct && dc.direct {
				want = dc.calls
			}
			if single && dc.single {
				wantSingle = dc.calls
			}
			before, beforeSingle := directOps(cs), singleOps(cs)
			dc.check(t, cs)
			requireDirect(t, cs, before, want)
			for r, ops := range singleOps(cs) {
				if cs[r] != nil {
					require.Equal(t, wantSingle, int(ops-beforeSingle[r]), "rank %d's single copies", r)
				}
			}
		})
	}
}

// directOps is how many operations each rank's segment took direct: the
// communicator's, or where it spans hosts, the segment of the rank's
// host; 0 for a rank without one.
func directOps(cs []*comm.Comm) []uint64 {
	ops := make([]uint64, len(cs))
	for r, c := range cs {
		if c == nil {
			continue
		}
		s := (*core.Comm)(c).Segment()
		if h := (*core.Comm)(c).Hierarchy(); h != nil {
			s = h.Node.Segment()
		}
		if s != nil {
			ops[r] = s.DirectOps()
		}
	}
	return ops
}

// singleOps is how many operations each rank's segment took by a single
// copy; 0 for a rank without one.
func singleOps(cs []*comm.Comm) []uint64 {
	ops := make([]uint64, len(cs))
	for r, c := range cs {
		if c == nil {
			continue
		}
		if s := (*core.Comm)(c).Segment(); s != nil {
			ops[r] = s.SingleOps()
		}
	}
	return ops
}

// copiedSince reports whether every rank of cs in this process has
// copied once since singleOps said before.
func copiedSince(cs []*comm.Comm, before []uint64) bool {
	for r, ops := range singleOps(cs) {
		if ops <= before[r] {
			return false
		}
	}
	return true
}

// requireDirect requires the segment of every rank of cs in this process
// to have taken want operations direct since directOps said before.
func requireDirect(t *testing.T, cs []*comm.Comm, before []uint64, want int) {
	t.Helper()
	for r, ops := range directOps(cs) {
		if cs[r] != nil {
			require.Equal(t, want, int(ops-before[r]), "rank %d's direct operations", r)
		}
	}
}

// shmRankVar makes a process of this test binary a rank of
// TestShmBetweenProcesses's jobs; its value is the segment slot to set,
// or "default". shmRegisteredVar, when set, names the registeredMode to
// run the matrix in.
const (
	shmRankVar       = "GOCOLL_SHM_MATRIX_RANK"
	shmRegisteredVar = "GOCOLL_SHM_MATRIX_REGISTERED"
)

// TestShmBetweenProcesses runs the conformance matrix of the
// shared-memory algorithms in jobs of real processes, one for each rank
// count: gocoll run starts this test binary as the ranks, over the shm
// transport, and in each of them this test runs the matrix as its rank
// (only that rank's entry of the job's ranks is in the process).
func TestShmBetweenProcesses(t *testing.T) {
	if os.Getenv(shmRankVar) != "" {
		ctx, cancel := context.WithTimeout(context.Background(), watchdog)
		defer cancel()
		var opts []comm.Option
		if slot, _ := strconv.Atoi(os.Getenv(shmRankVar)); slot > 0 {
			opts = append(opts, comm.WithSegmentSlot(slot))
		}
		c, err := comm.Init(ctx, opts...)
		require.NoError(t, err)
		defer c.Close()
		require.Equal(t, c.Size() > 1, (*core.Comm)(c).Segment() != nil, "segment")
		cs := make([]*comm.Comm, c.Size())
		cs[c.Rank()] = c
		if name := os.Getenv(shmRegisteredVar); name == "" {
			checkShm(t, cs, Auto)
		} else {
			i := slices.IndexFunc(registeredModes, func(m registeredMode) bool { return m.name == name })
			if i < 0 {
				t.Fatalf("%s=%q: no such registeredMode", shmRegisteredVar, name)
			}
			registeredModes[i].check(t, cs)
		}
		t.Run("barrier", func(t *testing.T) {
			for range 20 {
				require.NoError(t, Barrier(ctx, c))
			}
		})
		return
	}
	if testing.Short() {
		t.Skip("builds the gocoll command and starts processes")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	gocoll := buildGocoll(t)
	// TestShm checks every size among goroutines; between processes a
	// power of two, an odd size and the largest suffice, with the default
	// slots and with 4 KiB ones, through which every count above a few
	// hundred takes rounds. Registered buffers run in every mode at one
	// rank, two, three and five: the last two outnumber the CPUs of a
	// small host (CI's has two), where rooted calls go direct only from
	// directMinCrowded (Bcasts from directMinCrowdedBcast). Three ranks
	// also run it without receipts (GOCOLL_RECEIPTS=0), where the small
	// rooted calls wait only for the lines they read.
	type variant struct {
		n                          int
		slot, registered, receipts string
	}
	var variants []variant
	for _, n := range []int{2, 3, 8} {
		variants = append(variants, variant{n, "default", "", "1"}, variant{n, "4096", "", "1"})
	}
	variants = append(variants, variant{3, "default", "", "0"})
	for _, n := range []int{1, 2, 3, 5} {
		for _, mode := range registeredModes {
			variants = append(variants, variant{n, "default", mode.name, "1"})
		}
	}
	for _, v := range variants {
		n := v.n
		t.Run(fmt.Sprintf("n=%d/slot=%s/registered=%s/receipts=%s", n, v.slot, v.registered, v.receipts), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			run := exec.CommandContext(ctx, gocoll, "run", "-n", fmt.Sprint(n), "--transport", "shm", "--timeout", "1m",
				exe, "-test.run=^TestShmBetweenProcesses$", "-test.v")
			run.Env = append(os.Environ(), shmRankVar+"="+v.slot, shmRegisteredVar+"="+v.registered, "GOCOLL_RECEIPTS="+v.receipts)
			if i := slices.IndexFunc(registeredModes, func(m registeredMode) bool { return m.name == v.registered }); i >= 0 {
				run.Env = append(run.Env, "GOCOLL_SINGLE_COPY="+registeredModes[i].singleCopy())
			}
			var output bytes.Buffer
			run.Stdout, run.Stderr = &output, &output
			require.NoError(t, run.Run(), "gocoll run:\n%s", output.String())
			for r := range n {
				require.Contains(t, output.String(), fmt.Sprintf("[%d] --- PASS: TestShmBetweenProcesses", r))
			}
		})
	}
}

// TestHierarchical runs Allreduce on jobs whose ranks claim to run on
// several hosts: shared memory inside each "host", tcp between them. The
// layouts cover equal and unequal ranks per host and hosts of one rank.
func TestHierarchical(t *testing.T) {
	layouts := []struct {
		name  string
		hosts []string // of each rank
	}{
		{"2x2", []string{"a", "a", "b", "b"}},
		{"interleaved", []string{"a", "b", "a", "b", "a", "b"}},
		{"3+1+2", []string{"a", "a", "b", "a", "c", "c"}},
		{"1+4", []string{"a", "b", "b", "b", "b"}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			n := len(l.hosts)
			cs := job(t, n, comm.WithTransport("auto"), comm.WithHostIdentity(func(r int) string { return l.hosts[r] }))
			for _, c := range cs {
				require.Nil(t, (*core.Comm)(c).Segment(), "the ranks do not share one host")
				require.NotNil(t, (*core.Comm)(c).Hierarchy())
			}
			for _, algo := range []Algorithm{Hierarchical, Auto} {
				t.Run(algo.String(), func(t *testing.T) {
					checkAllreduce[float32](t, cs, algo, codec.Sum, countsFor(len(cs), true))
					checkAllreduce[float64](t, cs, algo, codec.Avg, countsFor(len(cs), false))
					checkAllreduce[int32](t, cs, algo, codec.Max, countsFor(len(cs), false))
					checkAllreduce[codec.BFloat16](t, cs, algo, codec.Sum, countsFor(len(cs), false))
				})
			}
			t.Run("non-commutative", func(t *testing.T) {
				checkNonCommutative(t, cs, Auto)
			})
			// Registered buffers go direct inside each host of more
			// than one rank; where only the first host's ranks have
			// them, that host goes direct and the others through their
			// slots, in the same rounds.
			t.Run("registered", func(t *testing.T) {
				checkHierarchicalDirect(t, cs, l.hosts, func(int) bool { return true })
			})
			t.Run("registered on one host", func(t *testing.T) {
				checkHierarchicalDirect(t, cs, l.hosts, func(r int) bool { return l.hosts[r] == l.hosts[0] })
			})
		})
	}
}

// TestHierarchicalDirectRounds: with 4 KiB slots every count above a few
// hundred takes rounds, and a host that goes direct must combine the
// same shares, round by round, as the host that goes through its slots.
func TestHierarchicalDirectRounds(t *testing.T) {
	hosts := []string{"a", "a", "b", "b", "b"}
	cs := job(t, len(hosts), comm.WithTransport("auto"), comm.WithSegmentSlot(4096),
		comm.WithHostIdentity(func(r int) string { return hosts[r] }))
	checkHierarchicalDirect(t, cs, hosts, func(r int) bool { return hosts[r] == "a" })
}

// checkHierarchicalDirect runs Hierarchical Allreduce on cs, whose ranks
// run on hosts, with the buffers of the ranks that on names registered,
// and checks that the segments of the hosts whose ranks all have
// registered buffers, and only those, took operations direct.
func checkHierarchicalDirect(t *testing.T, cs []*comm.Comm, hosts []string, on func(r int) bool) {
	useRegistered(t, on)
	n := len(cs)
	before := directOps(cs)
	checkAllreduce[float32](t, cs, Hierarchical, codec.Sum, countsFor(n, true))
	checkAllreduce[float64](t, cs, Hierarchical, codec.Avg, countsFor(n, false))
	for r, ops := range directOps(cs) {
		if (*core.Comm)(cs[r]).Hierarchy().Node.Size() == 1 {
			continue
		}
		hostRegistered := true
		for q := range n {
			if hosts[q] == hosts[r] && !on(q) {
				hostRegistered = false
			}
		}
		if hostRegistered {
			require.Greater(t, ops, before[r], "rank %d's direct operations", r)
		} else {
			require.Equal(t, before[r], ops, "rank %d's direct operations", r)
		}
	}
}

// shmOnly tells the cases of the allocation tests that ask for Shm,
// which only communicators with a segment (transport auto) accept.
func shmOnly(name string) bool { return strings.HasSuffix(name, "/shm") }

// TestShmDrift runs long sequences of operations in which only the root
// waits (Gather, Bcast), with and without barriers between them: ranks
// then run several operations ahead of one another, which the segment's
// call records must take without reporting a mismatch that is not there.
func TestShmDrift(t *testing.T) {
	const n, rounds = 4, 200
	cs := shmJob(t, n)
	allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		send, recv := make([]float32, 4), make([]float32, 4*n)
		for i := range rounds {
			if i%3 == 0 {
				if err := Barrier(ctx, c); err != nil {
					return err
				}
			}
			if err := Gather(ctx, c, send, recv, i%n); err != nil {
				return err
			}
			if err := Bcast(ctx, c, send, (i+1)%n); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestSlotParts: a round's parts fit the slot, Alltoall's in whole lines
// per rank, Gatherv's and Scatterv's behind the header of every rank's
// count; where they cannot, the part is 0, which the calls refuse with
// ErrInvalid rather than write past a slot.
func TestSlotParts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		alltoall      bool // alltoallPart, else vPart
		slot, p, size int
		want          int
	}{
		{"alltoall/default", true, 1 << 20, 8, 4, 16384},
		{"alltoall/a line each", true, 4096, 64, 8, 8},
		{"alltoall/too many ranks", true, 4096, 65, 8, 0},
		{"alltoall/bytes", true, 4096, 3, 1, 1344},
		{"v/default", false, 1 << 20, 8, 4, (512<<10 - 128) / 4},
		{"v/small slot", false, 4096, 8, 8, (4096 - 128) / 8},
		{"v/header fills the slot", false, 4096, 504, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.alltoall {
				got := vPart(tc.slot, tc.p, tc.size)
				require.Equal(t, tc.want, got)
				require.LessOrEqual(t, vHeader(tc.p)+got*tc.size, tc.slot, "header and part fit the slot")
				return
			}
			got := alltoallPart(tc.slot, tc.p, tc.size)
			require.Equal(t, tc.want, got)
			require.LessOrEqual(t, tc.p*got*tc.size, tc.slot, "the parts fit the slot")
			require.Zero(t, got*tc.size%64, "a part is whole lines")
		})
	}
	t.Run("alltoall refused", func(t *testing.T) {
		const n = 65
		cs := shmJob(t, n, comm.WithSegmentSlot(4096))
		for r, err := range onEveryRank(t, cs, func(ctx context.Context, c *comm.Comm) error {
			return Alltoall(ctx, c, make([]uint64, 2*n), make([]uint64, 2*n), WithAlgorithm(Shm))
		}) {
			require.ErrorIs(t, err, codec.ErrInvalid, "rank %d", r)
			require.ErrorContains(t, err, "needs segment slots of at least 4160 bytes, not 4096", "rank %d", r)
		}
	})
}

// TestAllgatherViews: the object helpers' Allgather hands every rank's
// part where it lies in the segment, this rank's included, for parts
// larger than a fast line and no larger than a round, over a segment and
// with the segment's algorithm only; otherwise it does not run, on every
// rank alike, and the caller gathers the parts itself.
func TestAllgatherViews(t *testing.T) {
	tests := []struct {
		name      string
		transport string
		bytes     int
		opts      []Option
		ran       bool
	}{
		{"a fast line", "shm", core.FastBytes, nil, false},
		{"past a fast line", "shm", core.FastBytes + 1, nil, true},
		{"64 KiB", "shm", 64 << 10, nil, true},
		{"a round", "shm", gatherRound, nil, true},
		{"past a round", "shm", gatherRound + 1, nil, false},
		{"links chosen", "shm", 64 << 10, []Option{WithAlgorithm(Ring)}, false},
		{"no segment", "mem", 64 << 10, nil, false},
	}
	for _, tt := range tests {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/n=%d", tt.name, n), func(t *testing.T) {
				cs := job(t, n, comm.WithTransport(tt.transport))
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					part := func(r int) []byte { return bytes.Repeat([]byte{byte(r + 1)}, tt.bytes) }
					called := false
					ran, err := allgatherViews(ctx, c, part(c.Rank()), tt.opts, func(parts [][]byte) {
						called = true
						s := (*core.Comm)(c).Segment()
						for r, p := range parts {
							if !bytes.Equal(p, part(r)) {
								t.Errorf("rank %d: rank %d's part differs", c.Rank(), r)
							}
							if !within(p, s.Half(0)) && !within(p, s.Half(1)) {
								t.Errorf("rank %d: rank %d's part is not in the segment", c.Rank(), r)
							}
						}
					})
					switch {
					case err != nil:
						return err
					case ran != tt.ran || called != tt.ran:
						return fmt.Errorf("ran %v, used %v; want %v", ran, called, tt.ran)
					}
					// The communicator goes on, its rounds in step.
					return Barrier(ctx, c)
				})
			})
		}
	}
}

// within reports whether b lies inside mem.
func within(b, mem []byte) bool {
	lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(mem))), uintptr(unsafe.Pointer(unsafe.SliceData(mem)))+uintptr(len(mem))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return at >= lo && at+uintptr(len(b)) <= hi
}

// TestSingleCopy: with single copies asked for, every collective that
// can copies once out of ordinary buffers, on every rank; where one rank
// cannot read the others' memory (it found out when the segment was
// made), none does, and every result is still right: the rank that
// decides each call goes through the slots, and so does everyone.
func TestSingleCopy(t *testing.T) {
	for _, tt := range []struct {
		name    string
		refused func(rank int) bool
	}{
		{"allowed", func(int) bool { return false }},
		{"refused to rank 1", func(r int) bool { return r == 1 }},
	} {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/n=%d", tt.name, n), func(t *testing.T) {
				cs := shmJob(t, n, comm.WithSingleCopy(core.SingleCopyCMA),
					comm.Option(core.WithSingleCopyRefused(tt.refused)))
				checkEachDirect(t, cs, false, !tt.refused(1))
			})
		}
	}
}

// TestSingleCopyChosen: with the choice left to timing (auto), the root
// of each call tries both ways, the slots and then one copy, a run of
// each for every kind and size class (timed, every rank recording how
// long its part took), and every result of the matrix is right, on
// every pass: a class's first single copies come with its fifth call,
// or later where the host's first reach of a page is slow (three passes
// on a Zen 5 VM; shmem.SingleCopy.SetFirstReach), so the matrix runs
// until they have (twenty passes at most). Two ranks, so that the host
// is not crowded, where auto copies once in large Gathers, Scatters,
// Alltoalls, Reduces and Bcasts only.
func TestSingleCopyChosen(t *testing.T) {
	cs := shmJob(t, 2, comm.WithSingleCopy(core.SingleCopyAuto))
	require.False(t, (*core.Comm)(cs[0]).Segment().Crowded(), "two ranks of this process")
	before := singleOps(cs)
	for pass := 0; pass < 20 && !copiedSince(cs, before); pass++ {
		checkShm(t, cs, Auto)
	}
	for r, ops := range singleOps(cs) {
		require.Greater(t, ops, before[r], "rank %d's single copies", r)
	}
}

// TestCrowdedCopiesOnce: where the ranks outnumber the CPUs (here two
// ranks or fewer to a CPU), auto lets a Reduce of 256 KiB and a Bcast of
// 64 KiB or more copy once where a single copy's first reach of a page
// costs no more than a later one (shmem.FirstReach, which rank 0 asked
// when it made the segment, once a process), and never where it costs
// more; every result is right either way. A size class's first single
// copy comes with its fifth call, so forty calls are plenty.
func TestCrowdedCopiesOnce(t *testing.T) {
	const calls, root = 40, 1
	// A call makes rank c's call on its send, whose result lands in got,
	// and its want is every rank's got after it (nil: not checked).
	type caller func(ctx context.Context, c *comm.Comm, send, got []float32) error
	type wanted func(sends [][]float32, r int) []float32
	reduce := func(ctx context.Context, c *comm.Comm, send, got []float32) error {
		if c.Rank() != root {
			got = nil
		}
		return ReduceInto(ctx, c, send, got, codec.Sum, root)
	}
	reduced := func(sends [][]float32, r int) []float32 {
		if r != root {
			return nil
		}
		sum := make([]float32, len(sends[0]))
		for _, send := range sends {
			for i, v := range send {
				sum[i] += v
			}
		}
		return sum
	}
	bcast := func(ctx context.Context, c *comm.Comm, send, got []float32) error {
		if c.Rank() == root {
			copy(got, send)
		}
		return Bcast(ctx, c, got, root)
	}
	bcasted := func(sends [][]float32, r int) []float32 { return sends[root] }
	tests := []struct {
		name  string
		elems int // float32s
		call  caller
		want  wanted
	}{
		{"Reduce/256KiB", 64 << 10, reduce, reduced},
		{"Bcast/256KiB", 64 << 10, bcast, bcasted},
		{"Bcast/64KiB", 16 << 10, bcast, bcasted},
	}
	n := runtime.NumCPU() + 1
	shadowed := shmem.FirstReach() > 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := shmJob(t, n, comm.WithSingleCopy(core.SingleCopyAuto))
			require.True(t, (*core.Comm)(cs[0]).Segment().Crowded(), "%d ranks of this process on %d CPUs", n, runtime.NumCPU())
			sends, gots := make([][]float32, n), make([][]float32, n)
			for r := range sends {
				sends[r], gots[r] = make([]float32, tt.elems), make([]float32, tt.elems)
				for i := range sends[r] {
					sends[r][i] = float32(r + i%101)
				}
			}
			before := singleOps(cs)
			for call := 0; call < calls && (shadowed || !copiedSince(cs, before)); call++ {
				for _, got := range gots {
					clear(got)
				}
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					return tt.call(ctx, c, sends[c.Rank()], gots[c.Rank()])
				})
				for r, got := range gots {
					if want := tt.want(sends, r); want != nil {
						require.Equal(t, want, got, "call %d, rank %d's result", call, r)
					}
				}
			}
			if shadowed {
				require.Equal(t, before, singleOps(cs), "single copies where a page's first reach costs %v more", shmem.FirstReach())
			} else {
				require.True(t, copiedSince(cs, before), "no single copy in %d calls: before %v, after %v", calls, before, singleOps(cs))
			}
		})
	}
}
