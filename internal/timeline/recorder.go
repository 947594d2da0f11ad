package timeline

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Span is one span of a rank's timeline: a collective call, or a step or
// wait inside it (which the viewer nests by time containment on the same
// lane).
//
// Each lane is a thread track of its own in the viewer, named when the
// writer first meets it: reuse a few lane numbers (the lowest one free,
// say) rather than give every async call a new one.
type Span struct {
	Name       string // e.g. "Allreduce", "step 2", "wait"
	Cat        string // "collective", "step", "wait", "send", ...
	Start, End int64  // nanoseconds on the recorder's clock (Recorder.Now)
	Comm       uint64 // communicator id (written as the hex string arg "comm")
	Seq        uint64 // the call's sequence number on its communicator
	Bytes      int64  // bytes of the call or step; 0: omitted
	Peer       int    // the peer of a step or wait, -1: none (omitted)
	Step       int    // -1: none (omitted)
	Algorithm  string // "" omitted
	Transport  string // "" omitted
	Lane       int    // 0 for blocking calls, others for async calls
}

// bufferSpans is the number of spans each of a recorder's two buffers
// holds: 1 MiB each (a Span is 128 bytes on 64-bit machines), the spans
// of a few hundred ring allreduces of 8 ranks with their steps and waits.
// The writer encodes a span in about 250 ns (BenchmarkEncode on the
// project's 2-core machine), a full buffer in about 2 ms, so spans are
// dropped only when a rank makes more than 8192 of them within the 2 ms,
// or more than about 4 million a second for long.
const bufferSpans = 8192

// flushBytes is how much encoded text the writer gathers before it writes
// it to the file: large enough that writes are few, small enough that a
// rank killed in the middle loses little of what was handed over.
const flushBytes = 64 << 10

// Recorder records the spans of one rank and writes them to its trace
// file. Its methods are safe for concurrent use.
type Recorder struct {
	rank, size int
	start      time.Time // wall clock and monotonic reading of Open

	mu           sync.Mutex
	cur          []Span // takes new spans; nil once closed
	spare        []Span // the other buffer while idle, nil while the writer has it
	dropped      int64  // spans dropped since the writer last reported them
	dropAt       int64  // Start of the first of them
	droppedTotal int64
	closed       bool

	full chan []Span   // a full buffer for the writer; room for the one in flight
	done chan struct{} // closed when the writer has ended

	// Owned by the writer goroutine until done is closed, then by Close.
	f     *os.File
	out   []byte       // encoded events not yet written
	lanes map[int]bool // lanes whose thread_name the file has
	err   error        // the first write error

	closeOnce sync.Once
	closeErr  error

	// beforeWrite, when set (by tests, before the writer starts), runs
	// in the writer before it encodes each buffer.
	beforeWrite func()
}

// Open creates the trace file of rank `rank` of a job of `size` ranks at
// path and starts its clock. The file begins with the clock's wall-clock
// start and the rank's process and thread names, so that even a rank
// that dies before Close leaves a file Merge can place.
func Open(path string, rank, size int) (*Recorder, error) {
	r, err := open(path, rank, size, bufferSpans)
	if err != nil {
		return nil, err
	}
	go r.writer()
	return r, nil
}

// open is Open without the writer goroutine, with spans per buffer.
func open(path string, rank, size, spans int) (*Recorder, error) {
	return openAt(path, rank, size, spans, time.Now())
}

// openAt is open with the clock started at start.
func openAt(path string, rank, size, spans int, start time.Time) (*Recorder, error) {
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("timeline: rank %d of %d ranks", rank, size)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	r := &Recorder{
		rank:  rank,
		size:  size,
		start: start,
		cur:   make([]Span, 0, spans),
		spare: make([]Span, 0, spans),
		full:  make(chan []Span, 1),
		done:  make(chan struct{}),
		f:     f,
		out:   make([]byte, 0, flushBytes+4<<10),
		lanes: map[int]bool{0: true},
	}
	r.out = appendHeader(r.out, r.rank, r.size, r.start)
	if _, err := f.Write(r.out); err != nil {
		f.Close()
		return nil, fmt.Errorf("timeline: %w", err)
	}
	r.out = r.out[:0]
	return r, nil
}

// Now is nanoseconds since Open on a monotonic clock. A nil recorder's is
// 0.
func (r *Recorder) Now() int64 {
	if r == nil {
		return 0
	}
	return int64(time.Since(r.start))
}

// Add records s; the recorder keeps a copy, not s. It does not allocate
// and never waits for the file: s goes into a buffer, and a full buffer
// goes to the recorder's writer goroutine while the other buffer takes
// new spans. When both are full, s is dropped and counted, and the file
// gets an instant event saying how many were dropped. Add after Close,
// and on a nil recorder, does nothing.
func (r *Recorder) Add(s *Span) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	if len(r.cur) == cap(r.cur) && !r.handOverLocked() {
		if r.dropped == 0 {
			r.dropAt = s.Start
		}
		r.dropped++
		r.droppedTotal++
		r.mu.Unlock()
		return
	}
	r.cur = append(r.cur, *s)
	if len(r.cur) == cap(r.cur) {
		// Hand it over now rather than at the next Add, so the writer
		// starts on it at once.
		r.handOverLocked()
	}
	r.mu.Unlock()
}

// handOverLocked gives the full current buffer to the writer and makes
// the spare one current, if the writer has given it back. The send never
// waits: the writer holds at most one buffer, and it took that one off
// the channel before it gave the spare back.
func (r *Recorder) handOverLocked() bool {
	if r.spare == nil {
		return false
	}
	r.full <- r.cur
	r.cur, r.spare = r.spare, nil
	return true
}

// Dropped is the number of spans Add has dropped because both buffers
// were full.
func (r *Recorder) Dropped() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.droppedTotal
}

// writer encodes the buffers Add hands over, until Close.
func (r *Recorder) writer() {
	defer close(r.done)
	for buf := range r.full {
		for buf != nil {
			r.writeSpans(buf)
			r.mu.Lock()
			dropped, at := r.dropped, r.dropAt
			r.dropped = 0
			var next []Span
			if !r.closed && len(r.cur) == cap(r.cur) {
				// The other buffer filled while this one was written:
				// take it straight away instead of waiting for an Add.
				next, r.cur = r.cur, buf[:0]
			} else {
				r.spare = buf[:0]
			}
			r.mu.Unlock()
			r.writeDropped(dropped, at)
			buf = next
		}
	}
}

// writeSpans encodes spans and writes them to the file. The spans are
// sorted by start, and a span before the spans it contains when they
// start together: Add gets a call after the steps inside it, as it ends
// after them, and viewers that read events in order (Perfetto) nest a
// span in the one open before it.
func (r *Recorder) writeSpans(spans []Span) {
	if r.beforeWrite != nil {
		r.beforeWrite()
	}
	slices.SortFunc(spans, func(a, b Span) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(b.End, a.End)
	})
	pid := pidOf(r.rank)
	for i := range spans {
		s := &spans[i]
		if !r.lanes[s.Lane] {
			r.lanes[s.Lane] = true
			r.out = appendThreadName(r.out, pid, s.Lane)
		}
		r.out = appendSpan(r.out, pid, s)
		if len(r.out) >= flushBytes {
			r.flush()
		}
	}
	r.flush()
	clear(spans) // let the strings go
}

// writeDropped writes the instant event that says n spans were dropped
// from at on, if n > 0.
func (r *Recorder) writeDropped(n, at int64) {
	if n == 0 {
		return
	}
	r.out = appendDropped(r.out, pidOf(r.rank), n, at)
	r.flush()
}

func (r *Recorder) flush() {
	if r.err == nil && len(r.out) > 0 {
		_, r.err = r.f.Write(r.out)
	}
	r.out = r.out[:0]
}

// Close writes the spans still buffered, ends the file and closes it. It
// returns the first error writing the file met; calling it again returns
// the same. A nil recorder's Close does nothing.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	r.closeOnce.Do(func() { r.closeErr = r.close() })
	return r.closeErr
}

func (r *Recorder) close() error {
	r.mu.Lock()
	r.closed = true
	cur := r.cur
	r.cur = nil
	// No Add sends after closed is set, so the channel may close; the
	// writer drains the buffer in flight and ends.
	close(r.full)
	r.mu.Unlock()
	<-r.done

	r.writeSpans(cur)
	r.mu.Lock()
	dropped, at := r.dropped, r.dropAt
	r.dropped = 0
	r.mu.Unlock()
	r.writeDropped(dropped, at)
	r.out = append(r.out, "\n]}\n"...)
	r.flush()
	err := errors.Join(r.err, r.f.Close())
	if err != nil {
		return fmt.Errorf("timeline: writing %s: %w", r.f.Name(), err)
	}
	return nil
}

// RankPath is the file rank `rank` writes when the user asked for a trace
// at path: ".rankN" goes before the extension ("trace.json" becomes
// "trace.rank3.json"), or at the end when there is none ("trace" becomes
// "trace.rank3").
func RankPath(path string, rank int) string {
	ext := filepath.Ext(path)
	if ext == filepath.Base(path) { // ".trace" is a name, not an extension
		ext = ""
	}
	return path[:len(path)-len(ext)] + ".rank" + strconv.Itoa(rank) + ext
}
