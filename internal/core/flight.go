package core

import (
	"bytes"
	"cmp"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/gocoll/gocoll/internal/flight"
	"github.com/gocoll/gocoll/internal/wire"
)

// The flight recorder. Every communicator's call table already holds this
// rank's last operations (callHistory of them) with their calls, and a
// wait that turns slow notes in its operation's record for whom it waits,
// at which step and since when (callTable.waiting). Nothing more is
// recorded while calls run: a dump reads the tables, and a blocking call
// runs when the communicator says so (Comm.busy). So the recorder costs
// the fast paths nothing.
//
// The rank dumps when its job fails (a timeout, an abort, a lost peer)
// and on SIGUSR1: to the file GOCOLL_DUMP names, with .rankN before the
// extension (package flight's RankPath), where gocoll run gathers the
// ranks' dumps and diagnoses them; or, without one, through the logger.

// dumpOps is how many of a communicator's last operations a dump holds.
const dumpOps = 32

// FlightDump is what this rank knows of its communicators now, for
// reason.
func (c *Comm) FlightDump(reason string) *flight.Dump { return c.ep.flightDump(reason) }

func (ep *endpoint) flightDump(reason string) *flight.Dump {
	d := &flight.Dump{Rank: ep.rank, Size: ep.size, Time: time.Now(), Reason: reason}
	ep.callsMu.Lock()
	tables := make([]*callTable, 0, len(ep.callTables))
	for _, t := range ep.callTables {
		tables = append(tables, t)
	}
	ep.callsMu.Unlock()
	for _, t := range tables {
		if fc, ok := t.flight(); ok {
			d.Comms = append(d.Comms, fc)
		}
	}
	slices.SortFunc(d.Comms, func(a, b flight.Comm) int { return cmp.Compare(a.ID, b.ID) })
	return d
}

// flight is the table's communicator as a dump shows it; false before
// the communicator exists on this rank.
func (t *callTable) flight() (flight.Comm, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.comm
	if c == nil {
		return flight.Comm{}, false
	}
	fc := flight.Comm{ID: c.id, Rank: t.rank, Group: slices.Clone(t.group), LastSeq: c.seq.Load()}
	busy := c.busy.Load()
	running := wire.Kind(busy & 0xff)
	blocking := running != 0 && running != busyStats
	recorded := false
	for i := range t.recs {
		rec := &t.recs[i]
		if !rec.local || rec.seq == 0 {
			continue
		}
		// The blocking call in progress has the last number, unless an
		// async call was issued from another goroutine meanwhile.
		fc.Ops = append(fc.Ops, flight.Op{Seq: rec.seq, Kind: rec.call.Kind.String(), Call: rec.call.String(),
			Running: blocking && rec.seq == fc.LastSeq, WaitFor: rec.waitFor, Step: rec.waitStep, Since: rec.waitSince})
		recorded = recorded || rec.seq == fc.LastSeq
	}
	for _, a := range t.async {
		i := slices.IndexFunc(fc.Ops, func(op flight.Op) bool { return op.Seq == a.seq })
		if i < 0 {
			i = len(fc.Ops)
			fc.Ops = append(fc.Ops, flight.Op{Seq: a.seq, Kind: a.call.Kind.String(), Call: a.call.String(), WaitFor: -1, Step: -1})
		}
		fc.Ops[i].Running, fc.Ops[i].Async = true, true
		recorded = recorded || a.seq == fc.LastSeq
	}
	// A call through the fast lines is recorded only if it waits long:
	// the communicator still knows the kind of the last one, and of the
	// running one.
	kind := wire.Kind(busy >> lastKindShift & 0xff)
	if blocking {
		kind = running
	}
	if !recorded && fc.LastSeq > 0 && kind != 0 {
		fc.Ops = append(fc.Ops, flight.Op{Seq: fc.LastSeq, Kind: kind.String(), Call: kind.String() + " (through the fast lines, not recorded)",
			Running: blocking, WaitFor: -1, Step: -1})
	}
	slices.SortFunc(fc.Ops, func(a, b flight.Op) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(fc.Ops) > dumpOps {
		fc.Ops = slices.Clone(fc.Ops[len(fc.Ops)-dumpOps:])
	}
	return fc, true
}

// AsyncCall notes, for the flight recorder, that the async call (from
// AllreduceAsync) numbered seq on c runs, or no longer does.
func (c *Comm) AsyncCall(seq uint64, call wire.Call, running bool) {
	t := c.calls
	t.mu.Lock()
	if running {
		t.async = append(t.async, asyncCall{seq, call})
	} else {
		t.async = slices.DeleteFunc(t.async, func(a asyncCall) bool { return a.seq == seq })
	}
	t.mu.Unlock()
}

// dump writes the flight recorder's dump for reason where it goes: the
// file that GOCOLL_DUMP names, or the log.
func (ep *endpoint) dump(reason string) {
	d := ep.flightDump(reason)
	if path := ep.opts.dumpPath; path != "" {
		f, err := os.Create(flight.RankPath(path, ep.rank))
		if err == nil {
			err = d.WriteJSON(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil {
			return
		}
		ep.log.Warn("flight recorder: dump not written", "path", path, "err", err)
	}
	var b bytes.Buffer
	if err := d.Format(&b); err != nil {
		ep.log.Warn("flight recorder: dump not formatted", "err", err)
		return
	}
	ep.log.Warn("flight recorder", "reason", reason, "dump", b.String())
}

// dumpOnSignal makes the rank dump whenever the process gets SIGUSR1
// (dumpSignal; where there is none, as on Windows, FlightDump is the way),
// until the endpoint closes, also after its job failed: gocoll run asks
// the ranks that are left for their dumps when one fails. Only a rank
// that Init started listens, and dumps when its job fails
// (Options.dumpOnFailure): the ranks NewLocal starts share their process
// with the program's own signals and logs (FlightDump serves them).
func (ep *endpoint) dumpOnSignal() {
	if dumpSignal == nil {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, dumpSignal)
	go func() {
		defer signal.Stop(sig)
		for {
			select {
			case <-sig:
				// A rank whose job failed dumped then, where its calls
				// failed; what it would dump now says less.
				if ep.err() == nil {
					ep.dump("SIGUSR1")
				}
			case <-ep.signalsDone:
				return
			}
		}
	}()
}
