package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gocoll/gocoll/comm"
)

// The tags of the job's messages. A task travels under tagTask plus its
// id, so that one message carries it and the worker's Probe learns both
// its size and its id; every other message has a tag of its own.
const (
	tagReady = 0  // worker → coordinator: ready for a task, with the previous task's result (resultSize bytes); empty the first time
	tagStop  = 1  // coordinator → worker: no more tasks; empty
	tagAddr  = 2  // worker → coordinator, baseline: the address of the worker's net/rpc server
	tagDone  = 3  // coordinator → worker, baseline: the baseline is over; empty
	tagTask  = 16 // coordinator → worker: task tag−tagTask, its []float64
)

// maxElems bounds a task's length: up to it every sum of the values
// newJob draws is exact (see newJob).
const maxElems = 1 << 20

// config is a job; the coordinator reads all of it, the workers Warmup
// and Baseline, so every rank must be given the same.
type config struct {
	Tasks    int    // how many tasks
	MinElems int    // the shortest task, in float64 elements
	MaxElems int    // the longest
	Seed     uint64 // seed of the task sizes and their data
	Warmup   int    // untimed passes of the job before the timed one, for each method
	Baseline bool   // also run the job over net/rpc
	Links    string // what carries the gocoll messages, for the header line
}

func defaultConfig() config {
	return config{Tasks: 200, MinElems: 1 << 10, MaxElems: 256 << 10, Seed: 1, Warmup: 1, Baseline: true}
}

// check refuses a job that cannot run.
func (cfg config) check() error {
	switch {
	case cfg.Tasks < 1:
		return fmt.Errorf("-tasks %d: want at least 1", cfg.Tasks)
	case cfg.MinElems < 1 || cfg.MaxElems < cfg.MinElems:
		return fmt.Errorf("-min %d, -max %d: want 1 ≤ min ≤ max", cfg.MinElems, cfg.MaxElems)
	case cfg.Warmup < 0:
		return fmt.Errorf("-warmup %d: want 0 or more", cfg.Warmup)
	case cfg.MaxElems > maxElems:
		return fmt.Errorf("-max %d: at most %d elements, for the sums to stay exact", cfg.MaxElems, maxElems)
	}
	return nil
}

// Result is what a worker computes of a task: its length, sum, sum of
// squares, minimum and maximum. net/rpc sends it with gob, which wants
// the type exported; gocoll sends its resultSize bytes (encode).
type Result struct {
	ID, Count            int
	Sum, SumSq, Min, Max float64
}

// resultSize is the length of an encoded Result: six 8-byte words.
const resultSize = 6 * 8

// compute is the work of task id: one cheap pass over data (about 1 ns
// an element), so that moving the data is what a run measures. The
// comparisons are plain ifs on locals: the builtin min and max, which
// order NaNs and signed zeros, made the loop six times as slow.
func compute(id int, data []float64) Result {
	lo, hi := math.Inf(1), math.Inf(-1)
	var sum, sumSq float64
	for _, x := range data {
		sum += x
		sumSq += x * x
		if x < lo {
			lo = x
		}
		if x > hi {
			hi = x
		}
	}
	return Result{ID: id, Count: len(data), Sum: sum, SumSq: sumSq, Min: lo, Max: hi}
}

// encode appends r's resultSize bytes to b, little-endian.
func (r Result) encode(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(r.ID))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Count))
	for _, f := range [...]float64{r.Sum, r.SumSq, r.Min, r.Max} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b
}

// decodeResult reads the Result that encode wrote to b[:resultSize].
func decodeResult(b []byte) Result {
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	return Result{
		ID: int(word(0)), Count: int(word(1)),
		Sum: math.Float64frombits(word(2)), SumSq: math.Float64frombits(word(3)),
		Min: math.Float64frombits(word(4)), Max: math.Float64frombits(word(5)),
	}
}

// job is the tasks, which only the coordinator holds: windows of random
// lengths into one pool of random values, and the result each must give.
type job struct {
	pool  []float64
	spans []span   // task id → its window of pool
	want  []Result // task id → its expected result
	bytes int64    // the tasks' payload
}

type span struct{ off, n int }

// newJob draws cfg's tasks. Their lengths are log-uniform between
// cfg.MinElems and cfg.MaxElems, so that small tasks, where a message's
// latency counts, are as common as large ones, where bandwidth does. The
// tasks are windows into a pool four times the longest, which keeps the
// coordinator's memory small whatever cfg.Tasks is. The values are
// multiples of 1/1024 in [-32, 32): the sum of up to maxElems of them, or
// of their squares, is exact in float64 in any order, so a result is right
// only if it is bit for bit the expected one.
func newJob(cfg config) *job {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x776f726b)) // "work"
	j := &job{pool: make([]float64, 4*cfg.MaxElems)}
	for i := range j.pool {
		j.pool[i] = float64(rng.IntN(1<<16)-1<<15) / 1024
	}
	ratio := float64(cfg.MaxElems) / float64(cfg.MinElems)
	for id := range cfg.Tasks {
		n := int(math.Round(float64(cfg.MinElems) * math.Pow(ratio, rng.Float64())))
		n = min(max(n, cfg.MinElems), cfg.MaxElems)
		s := span{off: rng.IntN(len(j.pool) - n + 1), n: n}
		j.spans = append(j.spans, s)
		j.want = append(j.want, compute(id, j.pool[s.off:][:n]))
		j.bytes += 8 * int64(n)
	}
	return j
}

// data is task id's values.
func (j *job) data(id int) []float64 {
	s := j.spans[id]
	return j.pool[s.off:][:s.n]
}

// check compares a worker's result of task id with the expected one.
func (j *job) check(id int, got Result) error {
	if want := j.want[id]; got != want {
		return fmt.Errorf("wrong result of task %d: got %+v, want %+v", id, got, want)
	}
	return nil
}

// pass is what the coordinator saw of one run of the whole job.
type pass struct {
	Method    string
	Elapsed   time.Duration
	Bytes     int64    // the tasks' payload and the results'
	Results   []Result // task id → the result a worker returned, checked
	PerWorker []int    // rank → tasks it did; rank 0 coordinates and does none
}

// newPass is an empty pass of j over size ranks.
func newPass(method string, j *job, size int) *pass {
	return &pass{
		Method:    method,
		Bytes:     j.bytes + int64(resultSize*len(j.spans)),
		Results:   make([]Result, len(j.spans)),
		PerWorker: make([]int, size),
	}
}

// coordinate runs j on rank 0 of c with gocoll's point-to-point calls:
// whichever worker asks (a receive from AnySource) gets the next task,
// until none is left, when each worker that asks is told to stop. It
// first waits for every worker's first request, a roll call, so that the
// clock starts with the whole fleet asking and a worker that starts late
// (ranks in goroutines of one busy process can wait milliseconds for a
// processor) still gets a task. Every result is checked as it comes; a
// wrong, missing or unasked-for one, or a request out of turn, fails the
// run. A worker told to stop may already ask for the next pass's first
// task, so consecutive passes need a Barrier between them (run's passes).
func coordinate(ctx context.Context, c *comm.Comm, j *job) (*pass, error) {
	p := newPass("gocoll", j, c.Size())
	const unseen, idle, stopped = -1, -2, -3
	holds := make([]int, c.Size()) // rank → the task it is doing, or unseen, idle or stopped
	for w := range holds {
		holds[w] = unseen
	}
	var buf [resultSize]byte
	// request receives the next request, from any worker, and checks the
	// result it carries.
	request := func() (int, error) {
		st, err := c.Recv(ctx, comm.AnySource, tagReady, buf[:])
		if err != nil {
			return 0, err
		}
		w := st.Source
		switch id := holds[w]; {
		case id >= 0 && st.Bytes == resultSize:
			r := decodeResult(buf[:])
			if err := j.check(id, r); err != nil {
				return w, fmt.Errorf("rank %d: %w", w, err)
			}
			p.Results[id] = r
			p.PerWorker[w]++
		case id >= 0:
			return w, fmt.Errorf("rank %d sent %d bytes for task %d, want a %d-byte result", w, st.Bytes, id, resultSize)
		case st.Bytes != 0:
			return w, fmt.Errorf("rank %d sent a %d-byte result holding no task", w, st.Bytes)
		case id != unseen:
			return w, fmt.Errorf("rank %d asked again without a task to report on", w)
		}
		holds[w] = idle
		return w, nil
	}
	next, working := 0, c.Size()-1
	// give sends worker w the next task, or stop when none is left.
	give := func(w int) error {
		if next == len(j.spans) {
			holds[w] = stopped
			working--
			return c.Send(ctx, w, tagStop, nil)
		}
		holds[w] = next
		next++
		return comm.Send(ctx, c, w, tagTask+holds[w], j.data(holds[w]))
	}

	fleet := make([]int, 0, c.Size()-1)
	for len(fleet) < c.Size()-1 {
		w, err := request()
		if err != nil {
			return nil, err
		}
		fleet = append(fleet, w)
	}
	start := time.Now()
	for _, w := range fleet {
		if err := give(w); err != nil {
			return nil, err
		}
	}
	for working > 0 {
		w, err := request()
		if err != nil {
			return nil, err
		}
		if err := give(w); err != nil {
			return nil, err
		}
	}
	p.Elapsed = time.Since(start)
	return p, nil
}

// work is a worker rank's loop: it asks rank 0 for a task, sending the
// previous task's result with the request, until rank 0 says stop. Probe
// tells it the length and the id of the task before it receives it, so
// its buffer grows to the longest task and is reused. It returns how many
// tasks it did.
func work(ctx context.Context, c *comm.Comm) (int, error) {
	var res [resultSize]byte
	ready := res[:0] // the first request carries no result
	var data []float64
	for done := 0; ; done++ {
		if err := c.Send(ctx, 0, tagReady, ready); err != nil {
			return done, err
		}
		st, err := c.Probe(ctx, 0, comm.AnyTag)
		if err != nil {
			return done, err
		}
		switch {
		case st.Tag == tagStop:
			_, err := c.Recv(ctx, 0, tagStop, nil)
			return done, err
		case st.Tag < tagTask:
			return done, fmt.Errorf("rank 0 sent a message with tag %d, neither a task nor stop", st.Tag)
		}
		n := st.Bytes / 8
		if cap(data) < n {
			data = make([]float64, n)
		}
		data = data[:n]
		if _, err := comm.Recv(ctx, c, 0, st.Tag, data); err != nil {
			return done, err
		}
		ready = compute(st.Tag-tagTask, data).encode(res[:0])
	}
}
