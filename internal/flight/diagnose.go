package flight

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocoll/gocoll/internal/ranklist"
)

// Diagnose reads the dumps of one job's ranks (any subset, in any order;
// size is the world size) and returns one line per finding, most useful
// first. Each line starts at ranks that wait and follows what they wait
// for, through each awaited rank's own dump, to a cause: a rank that
// called another collective, has not called the operation, wrote no dump,
// or ranks that wait for each other. Ranks that wait in the same operation
// for the same rank share a line. Then come the ranks no line explains:
// those without a dump, those in a collective with no wait recorded, and
// those idle in their own code. A job where nobody waits gives one line.
//
// A nil dump is skipped. Of two dumps of one rank the later one is used. A
// dump that contradicts itself or the world size is reported, not used.
func Diagnose(size int, dumps []*Dump) []string {
	g := &diagnosis{
		dumps:  make([]*Dump, size),
		bad:    make([]error, size),
		named:  make([]bool, size),
		waits:  make(map[waitKey]*wait),
		byRank: make(map[int][]*wait),
	}
	g.load(dumps)
	g.findWaits()
	found := g.chains()
	notes := g.notes()
	if len(found) == 0 {
		line := "no rank waits for another"
		if len(notes) > 0 {
			line += ": " + strings.Join(notes, "; ")
		}
		return []string{line}
	}
	lines := make([]string, 0, len(found)+len(notes))
	for _, f := range found {
		lines = append(lines, f.text)
	}
	return append(lines, notes...)
}

// A wait is an operation of one rank that runs and waits for another
// rank.
type wait struct {
	d       *Dump
	c       *Comm
	op      *Op
	awaited int // world rank
}

type waitKey struct {
	rank      int
	comm, seq uint64
}

type diagnosis struct {
	dumps    []*Dump // by world rank; nil: no usable dump
	bad      []error // by world rank: why its only dump was unusable
	unusable []string
	waits    map[waitKey]*wait
	all      []*wait         // by rank, comm and seq
	byRank   map[int][]*wait // each rank's waits, in the order of all
	named    []bool          // by world rank: a finding explains it
}

func (g *diagnosis) load(dumps []*Dump) {
	size := len(g.dumps)
	for _, d := range dumps {
		if d == nil {
			continue
		}
		if d.Rank < 0 || d.Rank >= size {
			g.unusable = append(g.unusable, fmt.Sprintf("a dump is of rank %d, outside a world of %d", d.Rank, size))
			continue
		}
		err := d.validate()
		if err == nil && d.Size != size {
			err = fmt.Errorf("world size %d, not %d", d.Size, size)
		}
		if err != nil {
			if g.bad[d.Rank] == nil {
				g.bad[d.Rank] = err
			}
			continue
		}
		if prev := g.dumps[d.Rank]; prev == nil || d.Time.After(prev.Time) {
			g.dumps[d.Rank] = d
		}
	}
}

// findWaits collects the waits: the operations that run and recorded a
// wait. One that does not run is done, whatever wait it recorded.
func (g *diagnosis) findWaits() {
	for r, d := range g.dumps {
		if d == nil {
			continue
		}
		for i := range d.Comms {
			c := &d.Comms[i]
			for j := range c.Ops {
				op := &c.Ops[j]
				if !op.Running || op.WaitFor < 0 {
					continue
				}
				w := &wait{d: d, c: c, op: op, awaited: c.Group[op.WaitFor]}
				g.waits[waitKey{r, c.ID, op.Seq}] = w
				g.all = append(g.all, w)
			}
		}
	}
	slices.SortFunc(g.all, func(a, b *wait) int {
		return cmp.Or(cmp.Compare(a.d.Rank, b.d.Rank), cmp.Compare(a.c.ID, b.c.ID), cmp.Compare(a.op.Seq, b.op.Seq))
	})
	for _, w := range g.all {
		g.byRank[w.d.Rank] = append(g.byRank[w.d.Rank], w)
	}
}

// A cause says how a chain of waits ends; findings sort by it, the causes
// that most often explain a hang by themselves first.
type cause int

const (
	mismatch  cause = iota // the ranks called different collectives
	cycle                  // the ranks wait for each other
	noDump                 // the awaited rank wrote no usable dump
	notCalled              // the awaited rank is elsewhere, usually its own code
	unclear                // the awaited rank runs the operation, or lacks the communicator
)

type finding struct {
	text  string
	cause cause
	ranks int // how many ranks wait in the chain
	first int // the first waiting rank
}

// A link is one piece of a chain: what the rank a wait awaits does about
// that wait's operation.
type link struct {
	text  string
	hop   bool  // the awaited rank waits in the same operation: next
	next  *wait // where the chain goes on, if anywhere
	cause cause // if next is nil
}

// chains turns the waits into findings. Each wait leads to at most one
// next wait, so the waits form chains that end in a cause or run into a
// cycle. A finding starts at the waits no other wait leads to, grouped by
// operation and awaited rank, and follows its chain to the end; the waits
// left over then lie on cycles alone, and one finding starts at the first
// wait of each.
func (g *diagnosis) chains() []finding {
	into := make(map[*wait]bool)
	for _, w := range g.all {
		if l := g.follow(w, w.op.Since); l.next != nil {
			into[l.next] = true
		}
	}
	type group struct {
		comm, seq uint64
		kind      string
		awaited   int
	}
	var order []group
	starts := make(map[group][]*wait)
	for _, w := range g.all {
		if into[w] {
			continue
		}
		k := group{w.c.ID, w.op.Seq, w.op.Kind, w.awaited}
		if starts[k] == nil {
			order = append(order, k)
		}
		starts[k] = append(starts[k], w)
	}
	visited := make(map[*wait]bool)
	var found []finding
	for _, k := range order {
		found = append(found, g.walk(starts[k], visited))
	}
	for _, w := range g.all {
		if !visited[w] {
			found = append(found, g.walk([]*wait{w}, visited))
		}
	}
	slices.SortStableFunc(found, func(a, b finding) int {
		return cmp.Or(cmp.Compare(a.cause, b.cause), cmp.Compare(b.ranks, a.ranks), cmp.Compare(a.first, b.first))
	})
	return found
}

// maxHops bounds the hops of one chain a finding spells out: in a ring of
// a thousand ranks, each waits for its neighbour.
const maxHops = 6

// walk follows the chain from starts, waits in one operation for one rank,
// and describes it.
func (g *diagnosis) walk(starts []*wait, visited map[*wait]bool) finding {
	first := starts[0]
	since := first.op.Since
	for _, w := range starts {
		visited[w] = true
		g.named[w.d.Rank] = true
		if since.IsZero() || !w.op.Since.IsZero() && w.op.Since.Before(since) {
			since = w.op.Since
		}
	}
	f := finding{first: first.d.Rank, ranks: len(starts)}
	path := []*wait{first}
	onPath := map[*wait]int{first: 0} // index in path
	var links []link
	var end string
	for cur := first; ; {
		l := g.follow(cur, since)
		g.named[cur.awaited] = true
		if i, ok := onPath[l.next]; ok {
			// The chain closed on itself. A hop would only repeat a wait
			// the line already names; another link says why the rank
			// waits there.
			if !l.hop {
				links = append(links, l)
			}
			f.cause, end = cycle, cycleText(path[i:])
			break
		}
		links = append(links, l)
		if l.next == nil {
			f.cause = l.cause
			break
		}
		cur, since = l.next, l.next.op.Since
		visited[cur] = true
		onPath[cur] = len(path)
		path = append(path, cur)
		f.ranks++
	}

	var b strings.Builder
	b.WriteString(startText(starts))
	for i := 0; i < len(links); {
		if !links[i].hop {
			b.WriteString(links[i].text)
			i++
			continue
		}
		j := i
		for j < len(links) && links[j].hop {
			j++
		}
		if j-i > maxHops {
			for _, l := range links[i : i+2] {
				b.WriteString(l.text)
			}
			fmt.Fprintf(&b, ", … %d more ranks …", j-i-4)
			i = j - 2
		}
		for _, l := range links[i:j] {
			b.WriteString(l.text)
		}
		i = j
	}
	b.WriteString(end)
	f.text = b.String()
	return f
}

// startText describes waits of one operation for one rank: "rank 3 waits
// in Allreduce #812 step 2 for rank 1 (for 41s)", or for several ranks
// "ranks 0 and 1 wait ... steps 1 and 2 ... (for up to 41s)". The
// operation is named AllreduceAsync if all of them issued it so.
func startText(ws []*wait) string {
	w := ws[0]
	var ranks, steps []int
	var longest time.Duration
	async := true
	for _, x := range ws {
		ranks = append(ranks, x.d.Rank)
		if x.op.Step >= 0 {
			steps = append(steps, x.op.Step)
		}
		if !x.op.Since.IsZero() {
			longest = max(longest, x.d.Time.Sub(x.op.Since))
		}
		async = async && x.op.Async
	}
	name := w.op.Kind
	if async {
		name = w.op.name()
	}
	var b strings.Builder
	b.WriteString(ranklist.Ranks(ranks))
	if len(ws) == 1 {
		b.WriteString(" waits")
	} else {
		b.WriteString(" wait")
	}
	slices.Sort(steps)
	fmt.Fprintf(&b, " in %s #%d%s%s for rank %d", name, w.op.Seq, commText(w.c.ID), opStepsText(slices.Compact(steps)), w.awaited)
	switch {
	case longest <= 0:
	case len(ws) == 1:
		fmt.Fprintf(&b, " (for %s)", duration(longest))
	default:
		fmt.Fprintf(&b, " (for up to %s)", duration(longest))
	}
	return b.String()
}

// opStepsText names steps, sorted and distinct, after the operation they
// belong to: " step 2", " in its last step", or "" if none is known.
func opStepsText(steps []int) string {
	if len(steps) == 0 {
		return ""
	}
	s := stepsText(steps)
	if strings.HasPrefix(s, "its ") {
		return " in " + s
	}
	return " " + s
}

// where describes w after "waits": "in Bcast #7 on comm 0x2a step 0 for
// rank 1 (for 5s)".
func (w *wait) where() string {
	var steps []int
	if w.op.Step >= 0 {
		steps = []int{w.op.Step}
	}
	return fmt.Sprintf("in %s #%d%s%s for rank %d%s", w.op.name(), w.op.Seq, commText(w.c.ID),
		opStepsText(steps), w.awaited, forText(w.d.Time, w.op.Since))
}

// follow says what the rank w awaits does about w's operation, per its own
// dump. since is when the wait for it began, on the waiting rank's clock.
func (g *diagnosis) follow(w *wait, since time.Time) link {
	t, id, seq := w.awaited, w.c.ID, w.op.Seq
	d := g.dumps[t]
	if d == nil {
		if err := g.bad[t]; err != nil {
			return link{text: fmt.Sprintf("; rank %d's dump is unusable (%v)", t, err), cause: noDump}
		}
		return link{text: fmt.Sprintf("; rank %d wrote no dump (it died, or hangs where it cannot answer)", t), cause: noDump}
	}
	c := d.comm(id)
	if c == nil {
		return link{text: fmt.Sprintf("; rank %d has no comm %#x (it has not made it yet, or has freed it)", t, id), cause: unclear}
	}
	if op := c.op(seq); op != nil {
		in := "called"
		if op.Running {
			in = "is in"
		}
		switch {
		case op.Kind != w.op.Kind:
			return link{text: fmt.Sprintf("; rank %d %s %s: the ranks called different collectives", t, in, c.name(seq)), cause: mismatch}
		case op.Call != "" && w.op.Call != "" && op.Call != w.op.Call:
			return link{text: fmt.Sprintf("; rank %d %s %s as %s, rank %d as %s: the calls do not match",
				t, in, c.name(seq), op.Call, w.d.Rank, w.op.Call), cause: mismatch}
		}
	}
	if n := g.waits[waitKey{t, id, seq}]; n != nil {
		return link{text: fmt.Sprintf(", which waits%s for rank %d%s", stepText(" in", n.op.Step), n.awaited, forText(n.d.Time, n.op.Since)), hop: true, next: n}
	}
	if c.runs(seq) {
		return link{text: fmt.Sprintf("; rank %d is in %s too, with no wait recorded", t, c.name(seq)), cause: unclear}
	}
	what := "has finished"
	if seq > c.LastSeq {
		what = "has not called"
	}
	l := g.activity(d, c, since)
	l.text = fmt.Sprintf("; rank %d %s #%d%s: %s", t, what, seq, commText(id), l.text)
	return l
}

// activity says what d's rank does instead of an operation on c that a
// wait begun at since awaits: it waits elsewhere (on c, and in a blocking
// collective, if it can), runs a blocking collective, or is in its own
// code, where async operations may run.
func (g *diagnosis) activity(d *Dump, c *Comm, since time.Time) link {
	// Of the rank's waits, one on c is the likeliest reason, and of
	// those, the blocking collective, which holds up the rank's code.
	score := func(w *wait) int {
		s := 0
		if w.c == c {
			s += 2
		}
		if !w.op.Async {
			s++
		}
		return s
	}
	var n *wait
	for _, w := range g.byRank[d.Rank] {
		if n == nil || score(w) > score(n) {
			n = w
		}
	}
	if n != nil {
		return link{text: "it waits " + n.where(), next: n}
	}
	on := c
	seq, ok := c.blocking()
	for i := 0; !ok && i < len(d.Comms); i++ {
		on = &d.Comms[i]
		seq, ok = on.blocking()
	}
	if ok {
		return link{text: fmt.Sprintf("it is in %s%s, with no wait recorded", on.name(seq), commText(on.ID)), cause: unclear}
	}
	var b strings.Builder
	b.WriteString("it is in its own code (")
	if n := len(c.Ops); n > 0 && c.Ops[n-1].Seq == c.LastSeq {
		// The last operation is recorded: otherwise it would be starting,
		// which runs (Comm.runs).
		last := &c.Ops[n-1]
		state := "is done"
		if last.Running {
			state = "still runs"
		}
		fmt.Fprintf(&b, "its last call, %s #%d, %s", last.name(), c.LastSeq, state)
	} else {
		b.WriteString("it has made no call on the communicator")
	}
	// The dump shows the rank before the wait began if it was taken
	// earlier (say, on an early SIGUSR1); the rank may have called since.
	// The two times come from two hosts' clocks.
	if !since.IsZero() {
		if dt := d.Time.Sub(since); dt >= 0 {
			fmt.Fprintf(&b, "; it dumped %s into the wait", duration(dt))
		} else {
			fmt.Fprintf(&b, "; it dumped %s before the wait began, so it may have called since", duration(-dt))
		}
	}
	b.WriteByte(')')
	return link{text: b.String(), cause: notCalled}
}

// blocking returns the operation of c that runs and is not async: the
// blocking collective in progress, or the last operation if it is
// starting, whatever it is (Comm.runs).
func (c *Comm) blocking() (uint64, bool) {
	for _, seq := range c.running() {
		if op := c.op(seq); op == nil || !op.Async {
			return seq, true
		}
	}
	return 0, false
}

// cycleText ends a chain that closed on the waits of path: ": ranks 0 and
// 1 wait for each other".
func cycleText(path []*wait) string {
	var ranks []int
	var comms []uint64
	for _, w := range path {
		ranks = append(ranks, w.d.Rank)
		comms = append(comms, w.c.ID)
	}
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	slices.Sort(comms)
	comms = slices.Compact(comms)
	if len(ranks) == 1 {
		return fmt.Sprintf(": rank %d waits for itself", ranks[0])
	}
	s := ": " + ranklist.Ranks(ranks) + " wait for each other"
	if len(comms) > 1 {
		// Each waits on one communicator for a rank blocked on another:
		// the ranks call collectives on them in different orders.
		names := make([]string, len(comms))
		for i, id := range comms {
			names[i] = "comm " + fmt.Sprintf("%#x", id)
			if id == worldID {
				names[i] = "the world"
			}
		}
		s += " (they call collectives on " + ranklist.Join(names) + " in different orders)"
	}
	return s
}

// notes describes the ranks no finding named: those without a usable dump,
// those with operations that run without a recorded wait, and idle ones,
// which run none.
func (g *diagnosis) notes() []string {
	var missing, idle []int
	var bad []string
	type op struct {
		comm uint64
		name string
	}
	var order []op
	running := make(map[op][]int)
	for r, d := range g.dumps {
		if g.named[r] {
			continue
		}
		if d == nil {
			if err := g.bad[r]; err != nil {
				bad = append(bad, fmt.Sprintf("rank %d's dump is unusable (%v)", r, err))
			} else {
				missing = append(missing, r)
			}
			continue
		}
		busy := false
		for i := range d.Comms {
			c := &d.Comms[i]
			for _, seq := range c.running() {
				busy = true
				k := op{c.ID, c.name(seq)}
				if running[k] == nil {
					order = append(order, k)
				}
				running[k] = append(running[k], r)
			}
		}
		if !busy {
			idle = append(idle, r)
		}
	}
	var notes []string
	if len(missing) > 0 {
		notes = append(notes, ranklist.Ranks(missing)+" wrote no dump")
	}
	for _, k := range order {
		ranks := running[k]
		verb := " is"
		if len(ranks) > 1 {
			verb = " are"
		}
		notes = append(notes, fmt.Sprintf("%s%s in %s%s with no wait recorded", ranklist.Ranks(ranks), verb, k.name, commText(k.comm)))
	}
	notes = append(notes, bad...)
	notes = append(notes, g.unusable...)
	switch len(idle) {
	case 0:
	case 1:
		notes = append(notes, ranklist.Ranks(idle)+" is idle in its own code")
	default:
		notes = append(notes, ranklist.Ranks(idle)+" are idle in their own code")
	}
	return notes
}

// commText names a communicator after an operation: "" for the world,
// which needs no name, else " on comm 0x2a".
func commText(id uint64) string {
	if id == worldID {
		return ""
	}
	return fmt.Sprintf(" on comm %#x", id)
}
