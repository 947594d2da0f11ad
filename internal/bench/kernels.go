package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
)

// The data every rank sends are pseudo-random whole numbers in float32,
// and the first element of each block is a stamp that changes from call
// to call. Every sum of them over the ranks is exact in whatever order an
// algorithm adds, so that a result can be checked for equality, even
// through a lossy codec: whole numbers up to exactUpTo(codec) survive its
// rounding, and the values are kept small enough that a sum over the
// ranks stays below that. They are random rather than a short repeating
// pattern so that the lossless codecs meet data that shrinks as little as
// real float32 data does: zstd and s2 leave a MiB of it uncompressed, as
// they do a MiB of normally distributed float32, where they shrink a MiB
// of the period-7 pattern that mpi_coll_bench.c sends to almost nothing.

// exactUpTo is the bound up to which every whole number keeps its value
// in a result of a call with codec c: float32 holds whole numbers exactly
// up to 2^24, bf16 (8 significant bits) up to 2^8 and fp16 (11) up to
// 2^11.
// With codecAuto the call may get either lossy codec, so the stricter
// bound holds.
func exactUpTo(c codec.ID) int {
	switch c {
	case codec.BF16, codecAuto:
		return 1 << 8
	case codec.FP16:
		return 1 << 11
	}
	return 1 << 24
}

// values are the data of a kernel whose elements each rank fills with at
// most top: the pattern, from 1 to top, so that a missing contribution
// always changes a sum, and the stamps, from 0 to top.
type values struct {
	top int
	// The stamp of rank r before call it is it%iters + r%ranks: each
	// rank's stamp, and the sum of all ranks' stamps, differs from the
	// previous call's, and blocks from different ranks differ where top
	// leaves room.
	iters, ranks int
}

// newValues returns the values for top, at least 1. The stamps take up to
// 64 ranks' and 1024 calls' worth of room, as much as top leaves them:
// their largest, (iters-1) + (ranks-1), is at most top, and iters is at
// least 2, so that consecutive calls' stamps differ.
func newValues(top int) values {
	ranks := min(64, max(top/2, 1))
	return values{top: top, ranks: ranks, iters: min(1024, top-ranks+2)}
}

// pattern is the value rank r sends at element i.
func (v values) pattern(r, i int) float32 {
	// A multiplicative hash of (r, i), so that neighbouring elements and
	// ranks differ.
	x := uint32(r)*0x9e3779b1 ^ uint32(i)*0x85ebca77
	x ^= x >> 15
	x *= 0x2c1b3c6d
	x ^= x >> 12
	return float32(1 + x%uint32(v.top))
}

// stamp is the value rank r writes into the first element of each block
// before call it, so that a call that leaves an earlier call's result in
// place fails the check after it.
func (v values) stamp(r, it int) float32 { return float32(it%v.iters + r%v.ranks) }

// sumOver adds f(r) over the n ranks.
func sumOver(n int, f func(r int) float32) float32 {
	var s float32
	for r := range n {
		s += f(r)
	}
	return s
}

// A kernel is one point of a sweep on one rank: its buffers, the timed
// call and the checks around it.
type kernel struct {
	values
	ctx     context.Context
	c       *comm.Comm
	p       point
	me, n   int
	opts    []collective.Option
	out     []float32          // this rank's result, which the checks read
	prepare func(it int)       // before the barrier of call it, untimed
	call    func() error       // the timed call
	stamped func(it int) error // after call it, untimed: the stamps
	check   func() error       // after the last call: every element

	registered bool        // buffers come from collective.Alloc
	allocated  [][]float32 // those to Free
	allocErr   error       // the first allocation that failed
}

// buffer returns n zeroed elements, in registered memory when the sweep
// asks for it.
func (k *kernel) buffer(n int) []float32 {
	if !k.registered || n == 0 || k.allocErr != nil {
		return make([]float32, n)
	}
	b, err := collective.Alloc[float32](n)
	if err != nil {
		k.allocErr = fmt.Errorf("registered buffer of %d bytes on rank %d: %w", 4*n, k.me, err)
		return make([]float32, n)
	}
	k.allocated = append(k.allocated, b)
	return b
}

// free frees the kernel's registered buffers.
func (k *kernel) free() error {
	var errs []error
	for _, b := range k.allocated {
		errs = append(errs, collective.Free(b))
	}
	k.allocated = nil
	return errors.Join(errs...)
}

// builders set up each collective's kernel.
var builders = map[string]func(k *kernel){
	"allreduce":        (*kernel).allreduce,
	"reduce":           (*kernel).allreduce,
	"bcast":            (*kernel).bcast,
	"gather":           (*kernel).gather,
	"allgather":        (*kernel).gather,
	"allgatherv":       (*kernel).gather,
	"gatherv":          (*kernel).gather,
	"scatterv":         (*kernel).scatter,
	"scatter":          (*kernel).scatter,
	"reducescatter":    (*kernel).reduceScatter,
	"scan":             (*kernel).scan,
	"exscan":           (*kernel).scan,
	"alltoall":         (*kernel).alltoall,
	"barrier":          (*kernel).barrier,
	"allreduce_object": (*kernel).allreduceObject,
	"allgather_object": (*kernel).allgatherObject,
	"bcast_object":     (*kernel).bcastObject,
}

// newKernel sets up p on c, whose size p.top must allow (see
// point.checkable), with its buffers in registered memory if registered.
// Free must follow.
func newKernel(ctx context.Context, c *comm.Comm, p point, registered bool) (*kernel, error) {
	k := &kernel{values: newValues(p.top(c.Size())), ctx: ctx, c: c, p: p, me: c.Rank(), n: c.Size(), registered: registered,
		prepare: func(int) {}, stamped: func(int) error { return nil }, check: func() error { return nil }}
	// The codec is passed even when it is none, so that GOCOLL_CODEC or a
	// tuning table cannot compress a point its codec column calls
	// uncompressed; only codecAuto leaves the choice to them.
	if p.codec != codecAuto {
		k.opts = []collective.Option{collective.WithCompression(p.codec)}
	}
	if p.algo != collective.Auto {
		k.opts = append(k.opts, collective.WithAlgorithm(p.algo))
	}
	if p.chunk > 0 {
		k.opts = append(k.opts, collective.WithChunkSize(p.chunk))
	}
	builders[p.collective](k)
	if k.allocErr != nil {
		k.free() // the allocation's error is the one to report
		return nil, k.allocErr
	}
	return k, nil
}

// elems is the number of float32 elements in the point's bytes, and
// block the number in each rank's block of it.
func (k *kernel) elems() int { return int(k.p.bytes / 4) }
func (k *kernel) block() int { return k.elems() / k.n }

// VerifyError reports a wrong element in the result of a call.
type VerifyError struct {
	Collective string
	Algo       string
	Codec      string
	Bytes      int64
	Rank       int // the rank that holds the wrong value
	Index      int // the element of the rank's result
	Iteration  int // the call after which it was checked; -1 after the last
	Got, Want  float32
}

func (e *VerifyError) Error() string {
	when := "after the last call"
	if e.Iteration >= 0 {
		when = fmt.Sprintf("after call %d", e.Iteration)
	}
	with := e.Algo
	if e.Codec != codec.None.String() {
		with += " and " + e.Codec
	}
	return fmt.Sprintf("wrong result of %s of %d bytes with %s: rank %d holds %v at element %d, want %v (%s)",
		e.Collective, e.Bytes, with, e.Rank, e.Got, e.Index, e.Want, when)
}

// expect checks element i of the result against want after call it (-1:
// after the last).
func (k *kernel) expect(i, it int, want float32) error {
	if k.out[i] == want {
		return nil
	}
	return &VerifyError{Collective: k.p.collective, Algo: k.p.algoName(), Codec: codecName(k.p.codec), Bytes: k.p.bytes,
		Rank: k.me, Index: i, Iteration: it, Got: k.out[i], Want: want}
}

// expectBlocks checks that block q of m elements of the result starts
// with want(q, it) after call it.
func (k *kernel) expectBlocks(m, it int, want func(q, it int) float32) error {
	for q := range len(k.out) / m {
		if err := k.expect(q*m, it, want(q, it)); err != nil {
			return err
		}
	}
	return nil
}

// expectAll checks every element of the result but the first of each
// block of m against want(i) after the last call.
func (k *kernel) expectAll(m int, want func(i int) float32) error {
	for i := range k.out {
		if i%m == 0 {
			continue
		}
		if err := k.expect(i, -1, want(i)); err != nil {
			return err
		}
	}
	return nil
}

// allreduce sums each rank's vector out of place, as MPI_Allreduce with
// two buffers does (AllreduceInto); reduce does the same to rank 0 only,
// the one rank whose result it defines, as MPI_Reduce with two buffers
// does (ReduceInto).
func (k *kernel) allreduce() {
	send, out := k.buffer(k.elems()), k.buffer(k.elems())
	for i := range send {
		send[i] = k.pattern(k.me, i)
	}
	k.out = out
	k.prepare = func(it int) { send[0] = k.stamp(k.me, it) }
	if k.p.collective == "reduce" {
		k.call = func() error { return collective.ReduceInto(k.ctx, k.c, send, out, codec.Sum, 0, k.opts...) }
		if k.me != 0 {
			return
		}
	} else {
		k.call = func() error { return collective.AllreduceInto(k.ctx, k.c, send, out, codec.Sum, k.opts...) }
	}
	k.stamped = func(it int) error {
		return k.expect(0, it, sumOver(k.n, func(r int) float32 { return k.stamp(r, it) }))
	}
	k.check = func() error {
		return k.expectAll(len(k.out), func(i int) float32 {
			return sumOver(k.n, func(r int) float32 { return k.pattern(r, i) })
		})
	}
}

// scan sums each rank's vector with those of the ranks below it, its own
// included (scan) or not (exscan, where rank 0's stays as it was); bytes
// is the vector.
func (k *kernel) scan() {
	send, out := k.buffer(k.elems()), k.buffer(k.elems())
	for i := range send {
		send[i] = k.pattern(k.me, i)
	}
	k.out = out
	k.prepare = func(it int) {
		send[0] = k.stamp(k.me, it)
		copy(out, send)
	}
	upto := k.me + 1 // the ranks whose vectors rank me's result sums
	if k.p.collective == "exscan" {
		k.call = func() error { return collective.Exscan(k.ctx, k.c, out, codec.Sum, k.opts...) }
		upto = max(k.me, 1)
	} else {
		k.call = func() error { return collective.Scan(k.ctx, k.c, out, codec.Sum, k.opts...) }
	}
	k.stamped = func(it int) error {
		return k.expect(0, it, sumOver(upto, func(r int) float32 { return k.stamp(r, it) }))
	}
	k.check = func() error {
		return k.expectAll(len(k.out), func(i int) float32 {
			return sumOver(upto, func(r int) float32 { return k.pattern(r, i) })
		})
	}
}

// bcast sends rank 0's buffer, filled once; as in mpi_coll_bench.c only
// its first element changes from call to call.
func (k *kernel) bcast() {
	buf := k.buffer(k.elems())
	if k.me == 0 {
		for i := range buf {
			buf[i] = k.pattern(0, i)
		}
	}
	k.out = buf
	k.prepare = func(it int) {
		buf[0] = -1
		if k.me == 0 {
			buf[0] = k.stamp(0, it)
		}
	}
	k.call = func() error { return collective.Bcast(k.ctx, k.c, buf, 0, k.opts...) }
	k.stamped = func(it int) error { return k.expect(0, it, k.stamp(0, it)) }
	k.check = func() error { return k.expectAll(len(k.out), func(i int) float32 { return k.pattern(0, i) }) }
}

// gather collects every rank's block at rank 0 (gather, gatherv), and
// allgather and allgatherv at every rank; bytes is the whole gathered
// buffer. The v-collectives' counts are all equal, as OSU's
// osu_gatherv and osu_allgatherv have them.
func (k *kernel) gather() {
	m, all := k.block(), strings.HasPrefix(k.p.collective, "allgather")
	send := k.buffer(m)
	for i := range send {
		send[i] = k.pattern(k.me, i)
	}
	var out []float32
	if all || k.me == 0 {
		out = k.buffer(k.elems())
	}
	k.out = out
	k.prepare = func(it int) {
		send[0] = k.stamp(k.me, it)
		for q := range len(out) / m {
			out[q*m] = -1
		}
	}
	switch k.p.collective {
	case "allgather":
		k.call = func() error { return collective.Allgather(k.ctx, k.c, send, out, k.opts...) }
	case "allgatherv":
		counts := equalCounts(k.n, m, true)
		k.call = func() error { return collective.Allgatherv(k.ctx, k.c, send, out, counts, k.opts...) }
	case "gatherv":
		counts := equalCounts(k.n, m, k.me == 0)
		k.call = func() error { return collective.Gatherv(k.ctx, k.c, send, out, counts, 0, k.opts...) }
	default:
		k.call = func() error { return collective.Gather(k.ctx, k.c, send, out, 0, k.opts...) }
	}
	k.stamped = func(it int) error { return k.expectBlocks(m, it, k.stamp) }
	k.check = func() error { return k.expectAll(m, func(i int) float32 { return k.pattern(i/m, i%m) }) }
}

// equalCounts is the counts of a v-collective of n ranks with m elements
// each, where the rank needs them (root, or every rank of an Allgatherv);
// nil elsewhere, as MPI lets those ranks pass.
func equalCounts(n, m int, needs bool) []int {
	if !needs {
		return nil
	}
	return slices.Repeat([]int{m}, n)
}

// scatter sends block q of rank 0's buffer to rank q (scatter,
// scatterv); bytes is the whole scattered buffer.
func (k *kernel) scatter() {
	m := k.block()
	var send []float32
	if k.me == 0 {
		send = k.buffer(k.elems())
		for i := range send {
			send[i] = k.pattern(i/m, i%m)
		}
	}
	out := k.buffer(m)
	k.out = out
	k.prepare = func(it int) {
		for q := range len(send) / m {
			send[q*m] = k.stamp(q, it)
		}
		out[0] = -1
	}
	if k.p.collective == "scatterv" {
		counts := equalCounts(k.n, m, k.me == 0)
		k.call = func() error { return collective.Scatterv(k.ctx, k.c, send, counts, out, 0, k.opts...) }
	} else {
		k.call = func() error { return collective.Scatter(k.ctx, k.c, send, out, 0, k.opts...) }
	}
	k.stamped = func(it int) error { return k.expect(0, it, k.stamp(k.me, it)) }
	k.check = func() error { return k.expectAll(m, func(i int) float32 { return k.pattern(k.me, i) }) }
}

// reduceScatter sums each rank's vector and leaves block q of the sum at
// rank q; bytes is the vector.
func (k *kernel) reduceScatter() {
	m := k.block()
	send, out := k.buffer(k.elems()), k.buffer(m)
	for i := range send {
		send[i] = k.pattern(k.me, i)
	}
	k.out = out
	k.prepare = func(it int) {
		for q := range k.n {
			send[q*m] = k.stamp(k.me, it)
		}
		out[0] = -1
	}
	k.call = func() error { return collective.ReduceScatter(k.ctx, k.c, send, out, codec.Sum, k.opts...) }
	k.stamped = func(it int) error {
		return k.expect(0, it, sumOver(k.n, func(r int) float32 { return k.stamp(r, it) }))
	}
	k.check = func() error {
		return k.expectAll(m, func(i int) float32 {
			return sumOver(k.n, func(r int) float32 { return k.pattern(r, k.me*m+i) })
		})
	}
}

// alltoall sends block q of each rank's buffer to rank q; bytes is one
// rank's send buffer.
func (k *kernel) alltoall() {
	m := k.block()
	send, out := k.buffer(k.elems()), k.buffer(k.elems())
	for i := range send {
		send[i] = k.pattern(k.me, i)
	}
	k.out = out
	k.prepare = func(it int) {
		for q := range k.n {
			send[q*m] = k.stamp(k.me, it)
			out[q*m] = -1
		}
	}
	k.call = func() error { return collective.Alltoall(k.ctx, k.c, send, out, k.opts...) }
	k.stamped = func(it int) error { return k.expectBlocks(m, it, k.stamp) }
	k.check = func() error {
		return k.expectAll(m, func(i int) float32 { return k.pattern(i/m, k.me*m+i%m) })
	}
}

// barrier has nothing to check.
func (k *kernel) barrier() {
	k.call = func() error { return collective.Barrier(k.ctx, k.c) }
}
