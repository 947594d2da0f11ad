package flight

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gocoll/gocoll/internal/ranklist"
)

// worldID is the id of the world communicator, which spans the job.
// Diagnoses name every other communicator by its id.
const worldID = 1

// Dump is what one rank knew when it dumped.
type Dump struct {
	Rank, Size int       // world rank and world size
	Time       time.Time // when the dump was taken (wall clock)
	Reason     string    // why: "SIGUSR1", or the failure's text
	Comms      []Comm
}

// Comm is one communicator on the dumping rank.
type Comm struct {
	ID      uint64
	Rank    int    // the dumping rank's rank in it
	Group   []int  // world rank of each member
	LastSeq uint64 // the sequence number of the last operation this rank started on it (0: none)
	Ops     []Op   // its last operations on this rank, oldest first (at most a few dozen)
}

// Op is one operation (collective call or Split) on a communicator.
type Op struct {
	Seq  uint64
	Kind string // "Allreduce", "Bcast", ...
	Call string // the whole call as errors print it: "Allreduce(65536 × float32, sum) with ring"
	// Running: the operation runs on this rank now: the blocking
	// collective in progress, or an async one (AllreduceAsync) not
	// finished yet. An operation that does not run is done.
	Running bool
	Async   bool // issued by AllreduceAsync
	// The last wait in which the operation was found slow: the
	// communicator rank it waited for (-1: none recorded), the step of
	// the algorithm (-1: unknown) and since when. A running operation
	// waits there still; a done one keeps it as history.
	WaitFor int
	Step    int
	Since   time.Time
}

// WriteJSON writes d as one indented JSON document and a newline. The
// keys are the Go field names. Indented, because a person opens the file
// when the diagnosis is not enough.
func (d *Dump) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "\t")
	// A call's text holds no markup, and "<" is easier to read than "\u003c".
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("flight: writing the dump of rank %d: %w", d.Rank, err)
	}
	return nil
}

// ReadDump reads one dump written by WriteJSON. It rejects input that is
// not one JSON document, and a dump whose parts contradict each other, with
// an error that says what is wrong. Unknown keys are ignored: the launcher
// reading a dump may be older than the library that wrote it.
func ReadDump(r io.Reader) (*Dump, error) {
	dec := json.NewDecoder(r)
	d := new(Dump)
	if err := dec.Decode(d); err != nil {
		if err == io.EOF {
			return nil, errors.New("flight: reading a dump: empty input")
		}
		return nil, fmt.Errorf("flight: reading a dump: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("flight: reading a dump: data after the document")
	}
	if err := d.validate(); err != nil {
		return nil, fmt.Errorf("flight: invalid dump: %w", err)
	}
	return d, nil
}

// validate checks what Diagnose and Format rely on, so that they can index
// groups without checks: ranks inside their groups, ops in order, at most
// one blocking collective running per communicator. It lets the last
// operation be missing from Ops: a rank dumps without stopping its calls,
// and one may be starting (see Comm.runs).
func (d *Dump) validate() error {
	if d.Size <= 0 {
		return fmt.Errorf("world size %d", d.Size)
	}
	if d.Rank < 0 || d.Rank >= d.Size {
		return fmt.Errorf("rank %d outside a world of %d", d.Rank, d.Size)
	}
	if d.Time.IsZero() {
		return errors.New("no time")
	}
	ids := make(map[uint64]bool, len(d.Comms))
	for i := range d.Comms {
		c := &d.Comms[i]
		if ids[c.ID] {
			return fmt.Errorf("comm %#x appears twice", c.ID)
		}
		ids[c.ID] = true
		if err := c.validate(d); err != nil {
			return fmt.Errorf("comm %#x: %w", c.ID, err)
		}
	}
	return nil
}

func (c *Comm) validate(d *Dump) error {
	if c.ID == 0 {
		return errors.New("id 0")
	}
	if c.ID == worldID && len(c.Group) != d.Size {
		return fmt.Errorf("the world has %d members in a world of %d", len(c.Group), d.Size)
	}
	if c.Rank < 0 || c.Rank >= len(c.Group) {
		return fmt.Errorf("rank %d outside its group of %d", c.Rank, len(c.Group))
	}
	members := make(map[int]bool, len(c.Group))
	for _, m := range c.Group {
		if m < 0 || m >= d.Size {
			return fmt.Errorf("member %d outside a world of %d", m, d.Size)
		}
		if members[m] {
			return fmt.Errorf("member %d appears twice", m)
		}
		members[m] = true
	}
	if c.Group[c.Rank] != d.Rank {
		return fmt.Errorf("its rank %d is world rank %d, not the dumping rank %d", c.Rank, c.Group[c.Rank], d.Rank)
	}
	var prev, blocking uint64 // blocking: the running blocking collective, if any
	for _, op := range c.Ops {
		switch {
		case op.Seq == 0:
			return errors.New("operation #0 (numbers start at 1)")
		case op.Seq <= prev:
			return fmt.Errorf("operation #%d after #%d", op.Seq, prev)
		case op.Seq > c.LastSeq:
			return fmt.Errorf("operation #%d after the last, #%d", op.Seq, c.LastSeq)
		case op.Kind == "":
			return fmt.Errorf("operation #%d has no kind", op.Seq)
		case op.WaitFor < -1 || op.WaitFor >= len(c.Group):
			return fmt.Errorf("operation #%d waits for rank %d, outside its group of %d", op.Seq, op.WaitFor, len(c.Group))
		case op.Step < -1:
			return fmt.Errorf("operation #%d at step %d", op.Seq, op.Step)
		case op.Running && !op.Async && blocking != 0:
			return fmt.Errorf("blocking operations #%d and #%d both run", blocking, op.Seq)
		}
		if op.Running && !op.Async {
			blocking = op.Seq
		}
		prev = op.Seq
	}
	return nil
}

// comm returns d's communicator id, or nil.
func (d *Dump) comm(id uint64) *Comm {
	for i := range d.Comms {
		if d.Comms[i].ID == id {
			return &d.Comms[i]
		}
	}
	return nil
}

// op returns c's operation seq, or nil if it is not among the recorded ones.
func (c *Comm) op(seq uint64) *Op {
	for i := range c.Ops {
		if c.Ops[i].Seq == seq {
			return &c.Ops[i]
		}
	}
	return nil
}

// runs reports whether c's operation seq runs on the dumping rank: it is
// recorded as running, or it is the last one started and not recorded
// yet, which a dump catches as it starts (the engine numbers a call
// before it records it).
func (c *Comm) runs(seq uint64) bool {
	if op := c.op(seq); op != nil {
		return op.Running
	}
	return seq != 0 && seq == c.LastSeq
}

// running returns the operations of c that run (see runs), in order.
func (c *Comm) running() []uint64 {
	var seqs []uint64
	for i := range c.Ops {
		if c.Ops[i].Running {
			seqs = append(seqs, c.Ops[i].Seq)
		}
	}
	if c.LastSeq != 0 && c.op(c.LastSeq) == nil {
		seqs = append(seqs, c.LastSeq)
	}
	return seqs
}

// name names c's operation seq: "Allreduce #812", "AllreduceAsync #9", or
// "#812" if it is not recorded (a dump can catch a call as it starts).
func (c *Comm) name(seq uint64) string {
	if op := c.op(seq); op != nil {
		return op.name() + " #" + strconv.FormatUint(seq, 10)
	}
	return "#" + strconv.FormatUint(seq, 10)
}

// name is the function that issued op: its Kind, or "AllreduceAsync" for
// an async Allreduce.
func (op *Op) name() string {
	if op.Async {
		return op.Kind + "Async"
	}
	return op.Kind
}

// formatOps is how many of a communicator's last operations Format shows;
// the JSON dump has them all.
const formatOps = 3

// Format writes d for a person, for logs and stderr: a line on the dump,
// then for each communicator a line and its last few operations, and every
// operation that runs. A dump that ReadDump would reject is not written;
// the error says what is wrong with it.
func (d *Dump) Format(w io.Writer) error {
	if err := d.validate(); err != nil {
		return fmt.Errorf("flight: invalid dump: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rank %d of %d dumped at %s: %s\n", d.Rank, d.Size, d.Time.Format("2006-01-02T15:04:05.000Z07:00"), d.Reason)
	for i := range d.Comms {
		c := &d.Comms[i]
		fmt.Fprintf(&b, "  comm %#x", c.ID)
		if c.ID == worldID {
			b.WriteString(" (world)")
		}
		fmt.Fprintf(&b, ", rank %d of %d", c.Rank, len(c.Group))
		if c.ID != worldID {
			b.WriteString(" (world ranks ")
			for j, m := range c.Group {
				if j > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(strconv.Itoa(m))
			}
			b.WriteByte(')')
		}
		switch running := c.running(); {
		case len(running) > 0:
			seqs := make([]string, len(running))
			for j, seq := range running {
				seqs[j] = "#" + strconv.FormatUint(seq, 10)
			}
			fmt.Fprintf(&b, ": running %s\n", ranklist.Join(seqs))
		case c.LastSeq == 0:
			b.WriteString(": no operation yet\n")
		default:
			fmt.Fprintf(&b, ": idle after #%d\n", c.LastSeq)
		}
		var hidden []uint64 // a run of operations not shown
		for j := range c.Ops {
			op := &c.Ops[j]
			if j < len(c.Ops)-formatOps && !op.Running {
				hidden = append(hidden, op.Seq)
				continue
			}
			switch len(hidden) {
			case 0:
			case 1:
				fmt.Fprintf(&b, "    (#%d not shown)\n", hidden[0])
			default:
				fmt.Fprintf(&b, "    (#%d-#%d not shown)\n", hidden[0], hidden[len(hidden)-1])
			}
			hidden = hidden[:0]
			call := op.Call
			if call == "" {
				call = op.Kind
			}
			if op.Async {
				call = "async " + call
			}
			fmt.Fprintf(&b, "    #%d %s: %s\n", op.Seq, call, d.opState(c, op))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// opState describes op for Format: "waits in step 2 for rank 1 (for 41s)",
// "running", "done", "done (was slow in step 2 waiting for rank 1)".
func (d *Dump) opState(c *Comm, op *Op) string {
	switch {
	case op.WaitFor < 0 && op.Running:
		return "running"
	case op.WaitFor < 0:
		return "done"
	}
	step, who := stepText(" in", op.Step), " for rank "+strconv.Itoa(c.Group[op.WaitFor])
	if op.Running {
		return "waits" + step + who + forText(d.Time, op.Since)
	}
	return "done (was slow" + step + " waiting" + who + ")"
}

// Step numbers: the engine numbers the steps of phase P of an algorithm
// (a reduce, then a bcast) from P<<phaseBits, and the step just below
// phase 1, lastStep, is an algorithm's final one (a hand-back).
const (
	phaseBits = 20
	lastStep  = 1<<phaseBits - 1
)

// stepText is " step 2", " its last step" or " phase 1 step 3" after
// prefix for a known step, or "".
func stepText(prefix string, step int) string {
	if step < 0 {
		return ""
	}
	return prefix + " " + stepsText([]int{step})
}

// stepsText names known steps, sorted and distinct, for a person: "step
// 2", "steps 0-3", "its last step", "phase 1 steps 0 and 3", "steps 1
// and 2 and its last step".
func stepsText(steps []int) string {
	phase := func(s int) int {
		if s == lastStep {
			return -1
		}
		return s >> phaseBits
	}
	var parts []string
	for i := 0; i < len(steps); {
		p := phase(steps[i])
		var in []int // steps[i:j], within their phase
		j := i
		for ; j < len(steps) && phase(steps[j]) == p; j++ {
			in = append(in, steps[j]&lastStep)
		}
		i = j
		s := "step "
		if len(in) > 1 {
			s = "steps "
		}
		switch {
		case p < 0:
			parts = append(parts, "its last step")
		case p == 0:
			parts = append(parts, s+ranklist.Numbers(in))
		default:
			parts = append(parts, "phase "+strconv.Itoa(p)+" "+s+ranklist.Numbers(in))
		}
	}
	return ranklist.Join(parts)
}

// forText is " (for 41s)", how long a wait that began at since had lasted
// at now, or "" if since is not known.
func forText(now, since time.Time) string {
	if since.IsZero() || now.Before(since) {
		return ""
	}
	return " (for " + duration(now.Sub(since)) + ")"
}

// duration rounds d for a person: to seconds, or to milliseconds below one.
func duration(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

// RankPath returns where rank writes its dump when the user or the
// launcher named path (GOCOLL_DUMP=path), so that the ranks of one host do
// not overwrite each other: ".rankN" goes before the extension
// ("dump.json" becomes "dump.rank3.json"), and a name without one gets
// ".rankN.json". A path ending in a separator names a directory, in which
// the dump is "rankN.json".
func RankPath(path string, rank int) string {
	n := strconv.Itoa(rank)
	if path == "" || os.IsPathSeparator(path[len(path)-1]) {
		return path + "rank" + n + ".json"
	}
	ext := filepath.Ext(path)
	if ext == "" || ext == filepath.Base(path) {
		// No extension, or a dot file such as ".gocolldump", whose dot
		// starts the name.
		return path + ".rank" + n + ".json"
	}
	return strings.TrimSuffix(path, ext) + ".rank" + n + ext
}
