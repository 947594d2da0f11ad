package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/cputime"
)

// Config describes a sweep. The zero value of each field means its
// default.
type Config struct {
	// Collectives to measure, by the names in Collectives. Empty means
	// allreduce, bcast and gather, the three the anchors measure.
	Collectives []string
	// Sizes in bytes, as ParseSizes returns them. See BusFactor for what
	// each collective's bytes count.
	Sizes []int64
	// Algorithms to measure each collective with: "auto" for the
	// selector's choice, "all" for every algorithm the collective accepts
	// on the communicator, or names as collective.ParseAlgorithm spells
	// them. A name measures the collectives it applies to and is left out
	// of the others. Empty means auto.
	Algorithms []string
	// Chunks are the chunk sizes in bytes (collective.WithChunkSize) to
	// measure each pipelined algorithm with (ring_chunked, chain), as
	// named; the others, and auto, run with the default chunk. Empty
	// means the default only.
	Chunks []int
	// Codecs are the wire codecs (collective.WithCompression) to measure
	// each algorithm and chunk size with, as codec.Parse spells
	// them, or "auto", which passes no codec and so leaves it to
	// GOCOLL_CODEC or the tuning table (to measure a table against the
	// defaults); empty means none. The shared-memory algorithms (shm,
	// hierarchical) do not compress and are measured with none only; auto
	// leaves the algorithm to the selector, which avoids them under a
	// codec. Barrier and the object collectives take no codec and are
	// measured once, uncompressed. The data are float32, which the lossy
	// codecs (bf16, fp16) apply to; Bytes and the bandwidths still count
	// the float32 bytes, not those on the wire (see BusFactor).
	Codecs []string
	// Iters fixes the timed calls per point; 0 means Iterations(bytes,
	// Scale).
	Iters int
	// Scale multiplies the automatic iteration count; 0 means 1.
	Scale float64
	// Objects adds, after allreduce and allgather, their object-encoded
	// object counterparts (allreduce_object, allgather_object). They take
	// no codec, so Codecs must include none.
	Objects bool
	// Registered places every rank's buffers in registered memory
	// (collective.Alloc), so that the shared-memory calls move data
	// straight between them; Impl then defaults to "gocoll-registered".
	// Without a segment (tcp links) the calls run as with ordinary
	// buffers, and the rows' link says so.
	Registered bool
	// Impl and Transport fill the columns of the same names; Impl
	// defaults to "gocoll".
	Impl, Transport string
}

// DefaultCollectives are what a Config without Collectives measures.
var DefaultCollectives = []string{"allreduce", "bcast", "gather"}

// request is a parsed Config: its algorithms and codecs.
type request struct {
	algos  algoRequest
	codecs []codec.ID
}

// withDefaults returns a copy of cfg with its defaults filled in and
// checked, and its algorithms and codecs parsed.
func (cfg Config) withDefaults() (Config, request, error) {
	if len(cfg.Collectives) == 0 {
		cfg.Collectives = DefaultCollectives
	}
	for _, name := range cfg.Collectives {
		if !slices.Contains(Collectives, name) {
			return cfg, request{}, fmt.Errorf("unknown collective %q (want %s)", name, strings.Join(Collectives, ", "))
		}
	}
	if len(cfg.Sizes) == 0 {
		return cfg, request{}, errors.New("no message sizes to measure")
	}
	for _, b := range cfg.Sizes {
		if b < 1 {
			return cfg, request{}, fmt.Errorf("message size %d: want at least 1 byte", b)
		}
	}
	if len(cfg.Codecs) == 0 {
		cfg.Codecs = []string{codec.None.String()}
	}
	var req request
	for _, name := range cfg.Codecs {
		c, err := parseCodec(name)
		if err != nil {
			return cfg, request{}, err
		}
		req.codecs = append(req.codecs, c)
	}
	for _, c := range cfg.Chunks {
		if c < 1 {
			return cfg, request{}, fmt.Errorf("chunk size %d: want at least 1 byte", c)
		}
	}
	if cfg.Iters < 0 {
		return cfg, request{}, fmt.Errorf("iteration count %d: want a positive count, or 0 for the automatic one", cfg.Iters)
	}
	if cfg.Scale < 0 || math.IsNaN(cfg.Scale) || math.IsInf(cfg.Scale, 0) {
		return cfg, request{}, fmt.Errorf("iteration scale %v: want a positive factor", cfg.Scale)
	}
	if cfg.Scale == 0 {
		cfg.Scale = 1
	}
	if cfg.Objects && !slices.ContainsFunc(cfg.Collectives, func(c string) bool { return objectCollectives[c] != "" }) {
		return cfg, request{}, fmt.Errorf("the object sweep measures allreduce, bcast and allgather, and the collectives (%s) include none of them",
			strings.Join(cfg.Collectives, ", "))
	}
	if cfg.Objects && !slices.Contains(req.codecs, codec.None) {
		return cfg, request{}, fmt.Errorf("the object collectives take no codec and are measured uncompressed, and the codecs (%s) leave out none",
			strings.Join(cfg.Codecs, ", "))
	}
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = []string{"auto"}
	}
	switch {
	case cfg.Impl != "":
	case cfg.Registered:
		cfg.Impl = "gocoll-registered"
	default:
		cfg.Impl = "gocoll"
	}
	var err error
	req.algos, err = parseAlgorithms(cfg.Algorithms, cfg.Collectives)
	return cfg, req, err
}

// Validate reports what is wrong with cfg, if anything, without a
// communicator: what Run would refuse before it measures anything.
func (cfg Config) Validate() error {
	_, _, err := cfg.withDefaults()
	return err
}

// Iterations is how many calls a point of bytes times, as
// mpi_coll_bench.c counts them: about 256 MiB moved, at least 10 and at
// most 1000 calls, times scale, and never fewer than 2.
func Iterations(bytes int64, scale float64) int {
	it := min(max((256<<20)/max(bytes, 1), 10), 1000)
	return max(int(float64(it)*scale), 2)
}

// Warmup is how many untimed calls precede iters timed ones: a tenth, at
// least 2, as mpi_coll_bench.c warms up.
func Warmup(iters int) int { return max(iters/10, 2) }

// CPUCalls is how many calls a point makes after its iters timed ones to
// measure the CPU time a call takes.
func CPUCalls(iters int) int { return max(iters/4, 1) }

// How long a sweep runs barriers before its first point, and before a
// point that follows one whose slowest call took settleAfter or more
// (settle).
const (
	settleFirst   = 100 * time.Millisecond
	settleBetween = 30 * time.Millisecond
	settleAfter   = time.Millisecond
)

// settleBefore is how long to settle before the point after those of
// results.
func settleBefore(results []Result) time.Duration {
	switch {
	case len(results) == 0:
		return settleFirst
	case results[len(results)-1].MaxUS >= float64(settleAfter/time.Microsecond):
		return settleBetween
	}
	return 0
}

// settle runs barriers for d, as every rank agrees, before a point. A Go
// process's runtime monitor (sysmon) looks at the process every 20 µs in
// its first milliseconds, and again after it has found work to do (a
// long system call, a wake-up from its deep sleep), backing off to every
// 10 ms over about 25 ms; each look takes a CPU, the rank's own where
// it is bound to one or where the ranks fill the CPUs, so a point's
// first calls would otherwise stall for tens of microseconds now and
// then: 8 B Allreduce over shared memory, two ranks, as the first
// point: 99th percentile 40-80 µs against under 2 µs after settling.
//
// A point of long calls can leave the monitor so too. On a Zen 5 VM
// under PVM, where each look cost a rank 55-70 µs, every 124 µs, two
// ranks' 64 KiB Gathers after 64 MiB Bcasts (registered buffers, calls
// of about 2 ms) took 4.1-5.9 µs on average, 99th percentile 55-112,
// against 2.4-2.6 and 5.3-5.4 settling 100 ms in between (three runs
// each); 30 ms did as well as 100, and after 1 MiB and 16 MiB Bcasts
// (calls of 0.02 and 0.4 ms) the Gathers did not stall (2026-11-30).
// Points of short calls, most of a sweep's, need no settling, which
// would cost a sweep of hundreds of them seconds.
func settle(ctx context.Context, c *comm.Comm, d time.Duration) error {
	start := time.Now()
	for done := []int32{0}; done[0] == 0; {
		if time.Since(start) >= d {
			done[0] = 1
		}
		if err := collective.Allreduce(ctx, c, done, codec.Max); err != nil {
			return fmt.Errorf("settling before a point: %w", err)
		}
	}
	return nil
}

// codecAuto stands for "auto" in Config.Codecs: the call passes no
// codec, so GOCOLL_CODEC or the communicator's tuning table chooses it,
// which is how a tuned table is measured against the defaults.
const codecAuto = codec.ID(255)

// parseCodec is codec.Parse that also knows "auto".
func parseCodec(name string) (codec.ID, error) {
	if name == "auto" {
		return codecAuto, nil
	}
	return codec.Parse(name)
}

// codecName is what Result.Codec says of c.
func codecName(c codec.ID) string {
	if c == codecAuto {
		return "auto"
	}
	return c.String()
}

// A point is one measurement of a sweep.
type point struct {
	collective string // as Result.Collective
	algo       collective.Algorithm
	chunk      int // bytes per chunk of a pipelined algorithm; 0 for the default
	codec      codec.ID
	object     bool // encoded through the object collectives (RawCodec)
	bytes      int64
}

// algoName is what Result.Algo says of p.
func (p point) algoName() string {
	if p.object {
		return "raw"
	}
	return p.algo.String()
}

func (p point) String() string {
	s := fmt.Sprintf("%s of %d bytes with %s", p.collective, p.bytes, p.algoName())
	if p.chunk > 0 {
		s += fmt.Sprintf(" in chunks of %d bytes", p.chunk)
	}
	if p.codec != codec.None {
		s += " and codec " + codecName(p.codec)
	}
	return s
}

// sums reports whether the named collective adds the ranks' data.
func sums(name string) bool {
	switch strings.TrimSuffix(name, "_object") {
	case "allreduce", "reduce", "reducescatter", "scan", "exscan":
		return true
	}
	return false
}

// top is the largest value one rank may put in an element of p among n
// ranks for the results to be exact: exactUpTo(p.codec), shared among the
// ranks where the collective sums.
func (p point) top(n int) int {
	if sums(p.collective) {
		return exactUpTo(p.codec) / n
	}
	return exactUpTo(p.codec)
}

// checkable says why p's results cannot be checked exactly on n ranks, if
// they cannot: a sum of n positive whole numbers passes exactUpTo.
func (p point) checkable(n int) error {
	if p.top(n) >= 1 {
		return nil
	}
	return fmt.Errorf("%s cannot be checked on %d ranks: the sweep checks sums exactly, and %s holds whole numbers exactly only up to %d; measure it on at most %d ranks",
		p, n, codecName(p.codec), exactUpTo(p.codec), exactUpTo(p.codec))
}

// plan lists the points of cfg on t, in the order they are measured:
// collective by collective, each algorithm over all sizes, the object
// counterpart last; a pipelined algorithm once per chunk size, and each
// algorithm and chunk size once per codec that it can compress with.
// Sizes a collective cannot split evenly are left out.
func (cfg Config) plan(req request, t topology) []point {
	var pts []point
	for _, name := range cfg.Collectives {
		for _, a := range req.algos.expand(name, t) {
			if name == "barrier" {
				pts = append(pts, point{collective: name, algo: a})
				continue
			}
			chunks := []int{0}
			if a.Pipelined() && len(cfg.Chunks) > 0 {
				chunks = cfg.Chunks
			}
			for _, chunk := range chunks {
				for _, c := range req.codecs {
					if c != codec.None && c != codecAuto && !a.Compresses() {
						continue
					}
					for _, b := range cfg.Sizes {
						if fits(name, b, t.ranks) {
							pts = append(pts, point{collective: name, algo: a, chunk: chunk, codec: c, bytes: b})
						}
					}
				}
			}
		}
		if obj := objectCollectives[name]; cfg.Objects && obj != "" {
			for _, b := range cfg.Sizes {
				if fits(name, b, t.ranks) {
					pts = append(pts, point{collective: obj, object: true, bytes: b})
				}
			}
		}
	}
	return pts
}

// fits reports whether bytes is a whole number of float32 elements that
// the collective can split into n equal blocks where it splits at all,
// as mpi_coll_bench.c skips gather sizes that are not a multiple of 4·n.
func fits(name string, bytes int64, n int) bool {
	switch name {
	case "gather", "gatherv", "scatter", "scatterv", "allgather", "allgatherv", "reducescatter", "alltoall":
		return bytes%(4*int64(n)) == 0
	}
	return bytes%4 == 0
}

// Run measures cfg's sweep on c. Every rank of c must call it with the
// same cfg. Each point is settled (settle), warmed up and then timed
// call by call, each call alone between barriers, as the OSU benchmarks
// and the anchors time them; its AvgUS is the largest per-rank average,
// MinUS and MaxUS the fastest and slowest single call on any rank. Every
// call's result is checked for equality, through a lossy codec too: the
// data are whole numbers that the codec holds exactly, which bounds the
// ranks a lossy codec can be measured on where the collective sums (256
// for bf16, 2048 for fp16). A wrong value ends the sweep with a
// *VerifyError. Each result's Algo and Link say what the point's calls
// ran, by c's Stats before and after them; a forced algorithm that did
// not run as asked ends the sweep too. progress, if not nil, is called
// after each point with the points done and in all. Every rank returns
// the same results: the ranks' calls agree on their algorithm, and the
// links of one host are all of a kind. On an error Run aborts c, so that
// the other ranks fail at once rather than wait for this one.
func Run(ctx context.Context, c *comm.Comm, cfg Config, progress func(done, total int)) ([]Result, error) {
	cfg, req, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	pts := cfg.plan(req, topologyOf(c))
	// Every rank plans alike, so every rank stops at the same error.
	if len(pts) == 0 {
		return nil, fmt.Errorf("nothing to measure: no size of %v bytes suits %s on %d ranks with %s and codec %s",
			cfg.Sizes, strings.Join(cfg.Collectives, ", "), c.Size(), strings.Join(cfg.Algorithms, ", "), strings.Join(cfg.Codecs, ", "))
	}
	for _, p := range pts {
		if err := p.checkable(c.Size()); err != nil {
			return nil, err
		}
	}
	results := make([]Result, 0, len(pts))
	for i, p := range pts {
		iters := cfg.Iters
		if iters == 0 {
			iters = Iterations(p.bytes, cfg.Scale)
		}
		k, err := newKernel(ctx, c, p, cfg.Registered)
		if err != nil {
			c.Abort(err)
			return results, err
		}
		if wait := settleBefore(results); wait > 0 {
			if err := settle(ctx, c, wait); err != nil {
				c.Abort(err)
				return results, errors.Join(err, k.free())
			}
		}
		r, err := measure(ctx, c, k, iters)
		err = errors.Join(err, k.free())
		if err != nil {
			c.Abort(err)
			return results, err
		}
		r.Impl, r.Transport = cfg.Impl, cfg.Transport
		results = append(results, r)
		if progress != nil {
			progress(i+1, len(pts))
		}
	}
	return results, nil
}

// cpuClock reads the process's CPU time; a test sets a clock of its own.
var cpuClock = cputime.Process

// measure times iters calls of k after its warm-up.
func measure(ctx context.Context, c *comm.Comm, k *kernel, iters int) (Result, error) {
	p := k.p
	// once makes call it between a barrier and the check of its stamps,
	// and returns its time and, withCPU, the CPU time the process spent
	// in it.
	once := func(it int, withCPU bool) (d, cpu time.Duration, err error) {
		k.prepare(it)
		if err := collective.Barrier(ctx, c); err != nil {
			return 0, 0, fmt.Errorf("barrier before %s: %w", p, err)
		}
		var cpu0 time.Duration
		if withCPU {
			cpu0 = cpuClock()
		}
		start := time.Now()
		err = k.call()
		d = time.Since(start)
		if withCPU {
			cpu = cpuClock() - cpu0
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", p, err)
		}
		return d, cpu, k.stamped(it)
	}
	// c's counts before the warm-up and after the last call tell what the
	// calls ran; the barriers between them count as another collective's,
	// or as the same barrier's.
	before := c.Stats()
	warm := Warmup(iters)
	var sum, cpu time.Duration
	calls := make([]time.Duration, 0, iters)
	for it := range warm + iters {
		d, _, err := once(it, false)
		if err != nil {
			return Result{}, err
		}
		if it >= warm {
			sum += d
			calls = append(calls, d)
		}
	}
	// The CPU time comes from calls of its own: reading it, a system
	// call of a microsecond or two, between the barrier and a timed call
	// held one rank back while the other waited for it in the call (8 B
	// Allreduce over shared memory, two ranks: 1.0-1.35 µs a call
	// against 0.8-1.07 without).
	cpuCalls := CPUCalls(iters)
	for i := range cpuCalls {
		_, d, err := once(warm+iters+i, true)
		if err != nil {
			return Result{}, err
		}
		cpu += d
	}
	// Each bracket also holds part of its two readings' system calls,
	// 1-1.5 µs, which made an 8 B call that took 0.65 µs look as if it
	// spent 2.5 µs of CPU time; as many empty brackets measure that part.
	cpuPer := max(cpu/time.Duration(cpuCalls)-cputime.Bracket(cpuClock, cpuCalls), 0)
	algo, link, err := p.ran(before, c.Stats())
	if err != nil {
		return Result{}, err
	}
	if err := k.check(); err != nil {
		return Result{}, err
	}
	// One Allreduce(Max) gives every rank the largest average, the
	// slowest call, negated the fastest, the largest CPU time and the
	// largest median and 99th percentile.
	slices.Sort(calls)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	t := []float64{us(sum) / float64(iters), us(calls[len(calls)-1]), -us(calls[0]), us(cpuPer),
		us(percentile(calls, 50)), us(percentile(calls, 99))}
	if err := collective.Allreduce(ctx, c, t, codec.Max); err != nil {
		return Result{}, fmt.Errorf("collecting the times of %s: %w", p, err)
	}
	r := Result{NP: c.Size(), Collective: p.collective, Bytes: p.bytes, Algo: algo, Link: link, Auto: p.algo == collective.Auto && !p.object,
		Chunk: p.chunk, Codec: codecName(p.codec), MaxUS: t[1], MinUS: -t[2], CPUUS: t[3], P50US: t[4], P99US: t[5]}
	r.SetTime(t[0])
	return r, nil
}

// percentile is the p-th percentile of sorted, the nearest rank's.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100 // ceil(n·p/100), the nearest rank
	return sorted[max(i, 1)-1]
}
