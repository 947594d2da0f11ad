package flight

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at is s seconds after t0.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// dump is rank's dump of a world of size, taken at second s.
func dump(rank, size, s int, comms ...Comm) *Dump {
	return &Dump{Rank: rank, Size: size, Time: at(s), Reason: "communicator timeout", Comms: comms}
}

// world is rank's world communicator in a world of size.
func world(rank, size int, lastSeq uint64, ops ...Op) Comm {
	group := make([]int, size)
	for i := range group {
		group[i] = i
	}
	return Comm{ID: worldID, Rank: rank, Group: group, LastSeq: lastSeq, Ops: ops}
}

// done is an operation that is done, with no wait recorded.
func done(seq uint64, kind string) Op {
	return Op{Seq: seq, Kind: kind, Call: kind + "(1024 × float32, sum)", WaitFor: -1, Step: -1}
}

// runs is an operation that runs, with no wait recorded.
func runs(seq uint64, kind string) Op {
	op := done(seq, kind)
	op.Running = true
	return op
}

// waiting is an operation that runs and waits in step for comm rank
// waitFor since second since.
func waiting(seq uint64, kind string, waitFor, step, since int) Op {
	op := waited(seq, kind, waitFor, step, since)
	op.Running = true
	return op
}

// waited is an operation that is done, and was slow in step waiting for
// comm rank waitFor since second since.
func waited(seq uint64, kind string, waitFor, step, since int) Op {
	op := done(seq, kind)
	op.WaitFor, op.Step, op.Since = waitFor, step, at(since)
	return op
}

// async is op issued by AllreduceAsync.
func async(op Op) Op {
	op.Async = true
	return op
}

func TestDiagnose(t *testing.T) {
	stale := dump(2, 3, -5, world(2, 3, 811, done(811, "Allreduce")))
	asleep := dump(2, 3, 60, world(2, 3, 811, done(811, "Allreduce")))
	asleep.Reason = "SIGUSR1"
	otherArgs := runs(5, "Allreduce")
	otherArgs.Call = "Allreduce(2048 × float32, sum)"

	var ring []*Dump
	for r := range 10 {
		if r == 3 {
			ring = append(ring, dump(r, 10, 41, world(r, 10, 3, done(3, "Allreduce"))))
			continue
		}
		ring = append(ring, dump(r, 10, 41, world(r, 10, 4, done(3, "Allreduce"), waiting(4, "Allreduce", (r+9)%10, 0, 36))))
	}

	tests := []struct {
		name  string
		size  int
		dumps []*Dump
		want  []string
	}{{
		name: "a rank skips a collective",
		size: 4,
		dumps: []*Dump{
			dump(3, 4, 41, world(3, 4, 812, done(811, "Allreduce"), waiting(812, "Allreduce", 2, 2, 2))),
			dump(0, 4, 41, world(0, 4, 812, done(811, "Allreduce"), waiting(812, "Allreduce", 2, 1, 0))),
			dump(2, 4, 41, world(2, 4, 811, done(811, "Allreduce"))),
			// #811 is done: its wait is history.
			dump(1, 4, 41, world(1, 4, 812, waited(811, "Allreduce", 2, 0, -1), waiting(812, "Allreduce", 2, 2, 1))),
		},
		want: []string{"ranks 0, 1 and 3 wait in Allreduce #812 steps 1 and 2 for rank 2 (for up to 41s); " +
			"rank 2 has not called #812: it is in its own code (its last call, Allreduce #811, is done; it dumped 41s into the wait)"},
	}, {
		name: "a rank sleeps in its own code",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 812, done(811, "Allreduce"), waiting(812, "Allreduce", 2, 0, 0))),
			dump(1, 3, 41, world(1, 3, 812, done(811, "Allreduce"), waiting(812, "Allreduce", 2, 0, 0))),
			asleep,
		},
		want: []string{"ranks 0 and 1 wait in Allreduce #812 step 0 for rank 2 (for up to 41s); " +
			"rank 2 has not called #812: it is in its own code (its last call, Allreduce #811, is done; it dumped 1m0s into the wait)"},
	}, {
		name: "the awaited rank dumped before the wait",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 812, waiting(812, "Allreduce", 2, 0, 0))),
			dump(1, 3, 41, world(1, 3, 812, waiting(812, "Allreduce", 2, 0, 0))),
			stale,
		},
		want: []string{"ranks 0 and 1 wait in Allreduce #812 step 0 for rank 2 (for up to 41s); " +
			"rank 2 has not called #812: it is in its own code (its last call, Allreduce #811, is done; " +
			"it dumped 5s before the wait began, so it may have called since)"},
	}, {
		name: "different collectives",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 5, runs(5, "Bcast"))),
			dump(1, 2, 41, world(1, 2, 5, waiting(5, "Allreduce", 0, 0, 38))),
		},
		want: []string{"rank 1 waits in Allreduce #5 step 0 for rank 0 (for 3s); rank 0 is in Bcast #5: the ranks called different collectives"},
	}, {
		name: "different collectives, one done",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 5, done(5, "Bcast"))),
			dump(1, 2, 41, world(1, 2, 5, async(waiting(5, "Allreduce", 0, 0, 38)))),
		},
		want: []string{"rank 1 waits in AllreduceAsync #5 step 0 for rank 0 (for 3s); rank 0 called Bcast #5: the ranks called different collectives"},
	}, {
		name: "different arguments",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 5, otherArgs)),
			dump(1, 2, 41, world(1, 2, 5, waiting(5, "Allreduce", 0, 0, 38))),
		},
		want: []string{"rank 1 waits in Allreduce #5 step 0 for rank 0 (for 3s); rank 0 is in Allreduce #5 as Allreduce(2048 × float32, sum), " +
			"rank 1 as Allreduce(1024 × float32, sum): the calls do not match"},
	}, {
		name: "a chain to a rank without a dump",
		size: 3,
		dumps: []*Dump{
			dump(1, 3, 41, world(1, 3, 7, waiting(7, "Allreduce", 2, 1, 37))),
			dump(0, 3, 41, world(0, 3, 7, waiting(7, "Allreduce", 1, 1, 36))),
		},
		want: []string{"rank 0 waits in Allreduce #7 step 1 for rank 1 (for 5s), which waits in step 1 for rank 2 (for 4s); " +
			"rank 2 wrote no dump (it died, or hangs where it cannot answer)"},
	}, {
		name: "late steps",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 7, waiting(7, "Allreduce", 1, lastStep, 37))),
			dump(1, 3, 41, world(1, 3, 7, waiting(7, "Allreduce", 2, 1<<20+3, 36))),
		},
		want: []string{"rank 0 waits in Allreduce #7 in its last step for rank 1 (for 4s), which waits in phase 1 step 3 for rank 2 (for 5s); " +
			"rank 2 wrote no dump (it died, or hangs where it cannot answer)"},
	}, {
		name: "ranks wait in different phases",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 7, waiting(7, "Allreduce", 2, 1<<20, 37))),
			dump(1, 3, 41, world(1, 3, 7, waiting(7, "Allreduce", 2, 4, 36))),
		},
		want: []string{"ranks 0 and 1 wait in Allreduce #7 step 4 and phase 1 step 0 for rank 2 (for up to 5s); " +
			"rank 2 wrote no dump (it died, or hangs where it cannot answer)"},
	}, {
		name: "ranks wait for each other",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 9, waiting(9, "Allreduce", 1, 2, 38))),
			dump(1, 2, 41, world(1, 2, 9, waiting(9, "Allreduce", 0, 2, 38))),
		},
		want: []string{"rank 0 waits in Allreduce #9 step 2 for rank 1 (for 3s), which waits in step 2 for rank 0 (for 3s): ranks 0 and 1 wait for each other"},
	}, {
		name: "a sub-communicator",
		size: 4,
		dumps: []*Dump{
			dump(0, 4, 41, world(0, 4, 0)),
			dump(1, 4, 41, world(1, 4, 0), Comm{ID: 0x2a, Rank: 0, Group: []int{1, 3}, LastSeq: 3,
				Ops: []Op{done(2, "Allreduce"), waiting(3, "Allreduce", 1, 0, 39)}}),
			dump(2, 4, 41, world(2, 4, 0)),
			dump(3, 4, 41, world(3, 4, 0), Comm{ID: 0x2a, Rank: 1, Group: []int{1, 3}, LastSeq: 2,
				Ops: []Op{done(2, "Allreduce")}}),
		},
		want: []string{
			"rank 1 waits in Allreduce #3 on comm 0x2a step 0 for rank 3 (for 2s); rank 3 has not called #3 on comm 0x2a: " +
				"it is in its own code (its last call, Allreduce #2, is done; it dumped 2s into the wait)",
			"ranks 0 and 2 are idle in their own code",
		},
	}, {
		name: "communicators called in different orders",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 7, waiting(7, "Bcast", 1, 0, 36)),
				Comm{ID: 0x2a, Rank: 0, Group: []int{0, 1}, LastSeq: 2, Ops: []Op{done(2, "Allreduce")}}),
			dump(1, 2, 41, world(1, 2, 6, done(6, "Bcast")),
				Comm{ID: 0x2a, Rank: 1, Group: []int{0, 1}, LastSeq: 3, Ops: []Op{done(2, "Allreduce"), waiting(3, "Allreduce", 0, 0, 36)}}),
		},
		want: []string{"rank 0 waits in Bcast #7 step 0 for rank 1 (for 5s); " +
			"rank 1 has not called #7: it waits in Allreduce #3 on comm 0x2a step 0 for rank 0 (for 5s); " +
			"rank 0 has not called #3 on comm 0x2a: it waits in Bcast #7 step 0 for rank 1 (for 5s): " +
			"ranks 0 and 1 wait for each other (they call collectives on the world and comm 0x2a in different orders)"},
	}, {
		name:  "a long ring",
		size:  10,
		dumps: ring,
		want: []string{"rank 2 waits in Allreduce #4 step 0 for rank 1 (for 5s), which waits in step 0 for rank 0 (for 5s), " +
			"which waits in step 0 for rank 9 (for 5s), … 4 more ranks …, which waits in step 0 for rank 4 (for 5s), " +
			"which waits in step 0 for rank 3 (for 5s); rank 3 has not called #4: it is in its own code " +
			"(its last call, Allreduce #3, is done; it dumped 5s into the wait)"},
	}, {
		name: "an async operation",
		size: 2,
		dumps: []*Dump{
			// #9 waited long ago and is done.
			dump(0, 2, 41, world(0, 2, 10, async(waited(9, "Allreduce", 1, 0, 0)), async(waiting(10, "Allreduce", 1, 0, 40)))),
			dump(1, 2, 41, world(1, 2, 9, async(done(9, "Allreduce")))),
		},
		want: []string{"rank 0 waits in AllreduceAsync #10 step 0 for rank 1 (for 1s); " +
			"rank 1 has not called #10: it is in its own code (its last call, AllreduceAsync #9, is done; it dumped 1s into the wait)"},
	}, {
		name: "async operations beside a blocking one",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 5, async(waiting(3, "Allreduce", 2, 1, 30)), async(runs(4, "Allreduce")), waiting(5, "Allreduce", 2, 0, 35))),
			dump(1, 3, 41, world(1, 3, 3, async(waiting(3, "Allreduce", 2, 1, 31)))),
		},
		want: []string{
			"ranks 0 and 1 wait in AllreduceAsync #3 step 1 for rank 2 (for up to 11s); rank 2 wrote no dump (it died, or hangs where it cannot answer)",
			"rank 0 waits in Allreduce #5 step 0 for rank 2 (for 6s); rank 2 wrote no dump (it died, or hangs where it cannot answer)",
		},
	}, {
		name: "async and blocking calls of one operation",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 3, async(waiting(3, "Allreduce", 2, 1, 30)))),
			dump(1, 3, 41, world(1, 3, 3, waiting(3, "Allreduce", 2, 1, 31))),
		},
		want: []string{"ranks 0 and 1 wait in Allreduce #3 step 1 for rank 2 (for up to 11s); rank 2 wrote no dump (it died, or hangs where it cannot answer)"},
	}, {
		name: "a rank waits in an async operation",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 3, waiting(3, "Allreduce", 1, 0, 36))),
			dump(1, 3, 41, world(1, 3, 2, done(2, "Allreduce")),
				Comm{ID: 0x2a, Rank: 0, Group: []int{1, 2}, LastSeq: 5, Ops: []Op{async(waiting(5, "Allreduce", 1, 1, 38))}}),
		},
		want: []string{"rank 0 waits in Allreduce #3 step 0 for rank 1 (for 5s); " +
			"rank 1 has not called #3: it waits in AllreduceAsync #5 on comm 0x2a step 1 for rank 2 (for 3s); " +
			"rank 2 wrote no dump (it died, or hangs where it cannot answer)"},
	}, {
		name: "a rank waits in a blocking call rather than an async one",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 3, waiting(3, "Allreduce", 1, 0, 36))),
			dump(1, 3, 41, world(1, 3, 2, async(waiting(1, "Allreduce", 2, 0, 30)), waiting(2, "Allreduce", 2, 0, 38))),
		},
		want: []string{
			"rank 0 waits in Allreduce #3 step 0 for rank 1 (for 5s); " +
				"rank 1 has not called #3: it waits in Allreduce #2 step 0 for rank 2 (for 3s); " +
				"rank 2 wrote no dump (it died, or hangs where it cannot answer)",
			"rank 1 waits in AllreduceAsync #1 step 0 for rank 2 (for 11s); rank 2 wrote no dump (it died, or hangs where it cannot answer)",
		},
	}, {
		name: "the awaited rank runs an async operation",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 5, waiting(5, "Allreduce", 1, 0, 40))),
			dump(1, 2, 41, world(1, 2, 4, done(3, "Bcast"), async(runs(4, "Allreduce")))),
		},
		want: []string{"rank 0 waits in Allreduce #5 step 0 for rank 1 (for 1s); " +
			"rank 1 has not called #5: it is in its own code (its last call, AllreduceAsync #4, still runs; it dumped 1s into the wait)"},
	}, {
		name: "the awaited rank has finished the operation",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 5, async(waiting(5, "Allreduce", 1, 0, 40)))),
			dump(1, 2, 41, world(1, 2, 6, async(done(5, "Allreduce")), runs(6, "Bcast"))),
		},
		want: []string{"rank 0 waits in AllreduceAsync #5 step 0 for rank 1 (for 1s); " +
			"rank 1 has finished #5: it is in Bcast #6, with no wait recorded"},
	}, {
		name: "a rank waits in another collective",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 8, waiting(8, "Allreduce", 1, 0, 30))),
			dump(1, 3, 41, world(1, 3, 7, waiting(7, "Allreduce", 2, 3, 20))),
			dump(2, 3, 41, world(2, 3, 7, runs(7, "Allreduce"))),
		},
		want: []string{"rank 0 waits in Allreduce #8 step 0 for rank 1 (for 11s); " +
			"rank 1 has not called #8: it waits in Allreduce #7 step 3 for rank 2 (for 21s); rank 2 is in Allreduce #7 too, with no wait recorded"},
	}, {
		name: "unusable, nil and repeated dumps",
		size: 2,
		dumps: []*Dump{
			nil,
			dump(0, 2, 41, world(0, 2, 3, waiting(3, "Allreduce", 1, 0, 40))),
			dump(0, 2, 30, world(0, 2, 2, done(2, "Allreduce"))),
			dump(1, 3, 41, world(1, 3, 3)),
			dump(7, 2, 41),
		},
		want: []string{
			"rank 0 waits in Allreduce #3 step 0 for rank 1 (for 1s); rank 1's dump is unusable (world size 3, not 2)",
			"a dump is of rank 7, outside a world of 2",
		},
	}, {
		name: "the awaited rank lacks the communicator",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 0), Comm{ID: 0x2a, Group: []int{0, 1}, LastSeq: 1, Ops: []Op{waiting(1, "Allreduce", 1, 0, 40)}}),
			dump(1, 2, 41, world(1, 2, 0)),
		},
		want: []string{"rank 0 waits in Allreduce #1 on comm 0x2a step 0 for rank 1 (for 1s); rank 1 has no comm 0x2a (it has not made it yet, or has freed it)"},
	}, {
		name: "the awaited rank runs another collective",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 4, waiting(4, "Allreduce", 1, 0, 40))),
			dump(1, 2, 41, world(1, 2, 3, done(3, "Allreduce")), Comm{ID: 0x2a, Group: []int{1}, LastSeq: 9, Ops: []Op{runs(9, "Bcast")}}),
		},
		want: []string{"rank 0 waits in Allreduce #4 step 0 for rank 1 (for 1s); rank 1 has not called #4: it is in Bcast #9 on comm 0x2a, with no wait recorded"},
	}, {
		// The dump caught #3 as it started, before the rank recorded it.
		name: "the awaited rank starts another call",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 4, waiting(4, "Allreduce", 1, 0, 40))),
			dump(1, 2, 41, world(1, 2, 3)),
		},
		want: []string{"rank 0 waits in Allreduce #4 step 0 for rank 1 (for 1s); rank 1 has not called #4: it is in #3, with no wait recorded"},
	}, {
		name: "the awaited rank starts the call",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 4, waiting(4, "Allreduce", 1, 0, 40))),
			dump(1, 2, 41, world(1, 2, 4, done(3, "Allreduce"))),
		},
		want: []string{"rank 0 waits in Allreduce #4 step 0 for rank 1 (for 1s); " +
			"rank 1 is in #4 too, with no wait recorded"},
	}, {
		name: "a rank waits for itself",
		size: 1,
		dumps: []*Dump{func() *Dump {
			d := dump(0, 1, 41, world(0, 1, 1, waiting(1, "Allreduce", 0, -1, 0)))
			d.Comms[0].Ops[0].Since = d.Time.Add(-250 * time.Millisecond)
			return d
		}()},
		want: []string{"rank 0 waits in Allreduce #1 for rank 0 (for 250ms): rank 0 waits for itself"},
	}, {
		name: "nobody waits",
		size: 3,
		dumps: []*Dump{
			dump(0, 3, 41, world(0, 3, 4, done(4, "Allreduce"))),
			dump(2, 3, 41, world(2, 3, 4, done(4, "Allreduce"))),
			dump(1, 3, 41, world(1, 3, 4, done(4, "Allreduce"))),
		},
		want: []string{"no rank waits for another: ranks 0-2 are idle in their own code"},
	}, {
		// A done operation's wait is history, however recent.
		name: "nobody waits any more",
		size: 2,
		dumps: []*Dump{
			dump(0, 2, 41, world(0, 2, 4, waited(3, "Allreduce", 1, 0, 40), async(waited(4, "Allreduce", 1, 0, 40)))),
			dump(1, 2, 41, world(1, 2, 4, done(4, "Allreduce"))),
		},
		want: []string{"no rank waits for another: ranks 0 and 1 are idle in their own code"},
	}, {
		name: "nobody waits, some are busy or gone",
		size: 6,
		dumps: []*Dump{
			dump(0, 6, 41, world(0, 6, 4, done(4, "Allreduce"))),
			dump(1, 6, 41, world(1, 6, 5, done(4, "Allreduce"), async(runs(5, "Allreduce")))),
			dump(2, 6, 41, world(2, 6, 5, done(4, "Allreduce"), runs(5, "Allreduce"))),
			dump(4, 6, 41, world(4, 6, 5, runs(5, "Allreduce"))),
			dump(5, 7, 41, world(5, 7, 5, runs(5, "Allreduce"))),
		},
		want: []string{"no rank waits for another: rank 3 wrote no dump; rank 1 is in AllreduceAsync #5 with no wait recorded; " +
			"ranks 2 and 4 are in Allreduce #5 with no wait recorded; rank 5's dump is unusable (world size 7, not 6); rank 0 is idle in its own code"},
	}, {
		name: "no dumps",
		size: 2,
		want: []string{"no rank waits for another: ranks 0 and 1 wrote no dump"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Diagnose(tt.size, tt.dumps))
		})
	}
}

// TestDiagnoseOrder checks that findings come in the order of their
// causes, a mismatch first and a rank in its own code last, then by how
// many ranks they hold up.
func TestDiagnoseOrder(t *testing.T) {
	sub := func(id uint64, rank int, group []int, lastSeq uint64, ops ...Op) Comm {
		return Comm{ID: id, Rank: slices.Index(group, rank), Group: group, LastSeq: lastSeq, Ops: ops}
	}
	dumps := []*Dump{
		dump(0, 10, 41, world(0, 10, 3, async(waiting(3, "Allreduce", 1, 0, 40)))),
		dump(1, 10, 41, world(1, 10, 2, async(done(2, "Allreduce"))), sub(0x2d, 1, []int{1, 9}, 0)),
		dump(2, 10, 41, world(2, 10, 0), sub(0x2a, 2, []int{2, 3}, 5, waiting(5, "Allreduce", 1, 0, 38))),
		dump(3, 10, 41, world(3, 10, 0), sub(0x2a, 3, []int{2, 3}, 5, runs(5, "Bcast"))),
		dump(4, 10, 41, world(4, 10, 0), sub(0x2b, 4, []int{4, 5, 6}, 2, waiting(2, "Allreduce", 2, 0, 30))),
		dump(5, 10, 41, world(5, 10, 0), sub(0x2b, 5, []int{4, 5, 6}, 2, waiting(2, "Allreduce", 2, 0, 35))),
		dump(7, 10, 41, world(7, 10, 0), sub(0x2c, 7, []int{7, 8}, 1, waiting(1, "Allreduce", 1, 0, 40))),
		dump(8, 10, 41, world(8, 10, 0), sub(0x2c, 8, []int{7, 8}, 1, waiting(1, "Allreduce", 0, 0, 40))),
		dump(9, 10, 41, world(9, 10, 3, async(waiting(3, "Allreduce", 1, 1, 39))),
			sub(0x2d, 9, []int{1, 9}, 1, waiting(1, "Allreduce", 0, 0, 36))),
	}
	require.Equal(t, []string{
		"rank 2 waits in Allreduce #5 on comm 0x2a step 0 for rank 3 (for 3s); rank 3 is in Bcast #5: the ranks called different collectives",
		"rank 7 waits in Allreduce #1 on comm 0x2c step 0 for rank 8 (for 1s), which waits in step 0 for rank 7 (for 1s): ranks 7 and 8 wait for each other",
		"ranks 4 and 5 wait in Allreduce #2 on comm 0x2b step 0 for rank 6 (for up to 11s); rank 6 wrote no dump (it died, or hangs where it cannot answer)",
		"ranks 0 and 9 wait in AllreduceAsync #3 steps 0 and 1 for rank 1 (for up to 2s); " +
			"rank 1 has not called #3: it is in its own code (its last call, AllreduceAsync #2, is done; it dumped 2s into the wait)",
		"rank 9 waits in Allreduce #1 on comm 0x2d step 0 for rank 1 (for 5s); rank 1 has not called #1 on comm 0x2d: " +
			"it is in its own code (it has made no call on the communicator; it dumped 5s into the wait)",
	}, Diagnose(10, dumps))
}

func TestStepText(t *testing.T) {
	tests := []struct {
		steps []int
		want  string
	}{
		{[]int{0}, "step 0"},
		{[]int{1<<20 - 2}, "step 1048574"},
		{[]int{1<<20 - 1}, "its last step"},
		{[]int{1 << 20}, "phase 1 step 0"},
		{[]int{1<<20 + 3}, "phase 1 step 3"},
		{[]int{2<<20 + 5}, "phase 2 step 5"},
		{[]int{1, 2}, "steps 1 and 2"},
		{[]int{0, 1, 2, 3}, "steps 0-3"},
		{[]int{1<<20 + 0, 1<<20 + 3}, "phase 1 steps 0 and 3"},
		{[]int{1, 2, 1<<20 - 1}, "steps 1 and 2 and its last step"},
		{[]int{4, 1<<20 - 1, 1<<20 + 1, 2 << 20}, "step 4, its last step, phase 1 step 1 and phase 2 step 0"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, stepsText(tt.steps))
			if len(tt.steps) == 1 {
				require.Equal(t, " in "+tt.want, stepText(" in", tt.steps[0]))
			}
		})
	}
	require.Empty(t, stepText(" in", -1))
	require.Equal(t, " in its last step", opStepsText([]int{lastStep}))
	require.Equal(t, " phase 1 step 3", opStepsText([]int{1<<20 + 3}))
	require.Empty(t, opStepsText(nil))
}
