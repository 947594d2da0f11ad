package flight

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sample is rank 3 of 4, stuck in an Allreduce on the world while a
// sub-communicator is idle.
func sample() *Dump {
	d := dump(3, 4, 41,
		world(3, 4, 812, done(810, "Allreduce"), waited(811, "Allreduce", 1, 2, -30), waiting(812, "Allreduce", 1, 2, 0)),
		Comm{ID: 0x2a, Rank: 1, Group: []int{1, 3}, LastSeq: 5, Ops: []Op{done(1, "Split"), done(2, "Bcast"), done(3, "Bcast"), done(4, "Bcast"), done(5, "Bcast")}},
	)
	d.Comms[1].Ops[4].Call = ""
	d.Comms[0].Ops[2].Call = "Allreduce(65536 × float32, sum) with ring <fast>"
	d.Reason = "SIGUSR1"
	return d
}

func TestJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		d    *Dump
	}{
		{"stuck", sample()},
		{"no communicators", dump(0, 1, 0)},
		{"fresh world", dump(1, 2, 5, world(1, 2, 0))},
		{"a call starting", dump(1, 2, 5, world(1, 2, 4, done(3, "Bcast")))},
		{"async calls beside a blocking one", dump(1, 2, 5, world(1, 2, 6,
			async(waiting(4, "Allreduce", 0, 1, 3)), async(done(5, "Allreduce")), runs(6, "Bcast")))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, tt.d.WriteJSON(&buf))
			require.True(t, strings.HasSuffix(buf.String(), "}\n"))
			got, err := ReadDump(&buf)
			require.NoError(t, err)
			require.Equal(t, tt.d, got)
		})
	}
}

func TestReadDumpRejects(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, sample().WriteJSON(&buf))
	good := buf.String()
	// edit returns the sample with its JSON changed by f.
	edit := func(f func(d *Dump)) string {
		d := sample()
		f(d)
		var buf bytes.Buffer
		require.NoError(t, d.WriteJSON(&buf))
		return buf.String()
	}
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty input"},
		{"truncated", good[:len(good)/2], "unexpected EOF"},
		{"garbage", "rank 3 is stuck", "invalid character"},
		{"an array", "[1, 2]", "cannot unmarshal array"},
		{"a wrong type", `{"Rank": "three"}`, "Dump.Rank"},
		{"an empty object", "{}", "world size 0"},
		{"null", "null", "world size 0"},
		{"two documents", good + good, "data after the document"},
		{"trailing garbage", good + "}", "data after the document"},
		{"rank outside the world", edit(func(d *Dump) { d.Rank = 4 }), "rank 4 outside a world of 4"},
		{"no time", edit(func(d *Dump) { d.Time = time.Time{} }), "no time"},
		{"a repeated comm", edit(func(d *Dump) { d.Comms[1].ID = 1 }), "comm 0x1 appears twice"},
		{"comm id 0", edit(func(d *Dump) { d.Comms[1].ID = 0 }), "id 0"},
		{"a short world", edit(func(d *Dump) { d.Comms[0].Group = []int{0, 1, 3} }), "the world has 3 members"},
		{"comm rank outside its group", edit(func(d *Dump) { d.Comms[1].Rank = 2 }), "comm 0x2a: rank 2 outside its group of 2"},
		{"member outside the world", edit(func(d *Dump) { d.Comms[1].Group[0] = 9 }), "member 9 outside a world of 4"},
		{"repeated member", edit(func(d *Dump) { d.Comms[1].Group = []int{3, 3} }), "member 3 appears twice"},
		{"another rank's comm", edit(func(d *Dump) { d.Comms[1].Rank = 0 }), "its rank 0 is world rank 1, not the dumping rank 3"},
		{"ops out of order", edit(func(d *Dump) { d.Comms[1].Ops[1].Seq = 1 }), "operation #1 after #1"},
		{"op #0", edit(func(d *Dump) { d.Comms[1].Ops[0].Seq = 0 }), "operation #0"},
		{"op after the last", edit(func(d *Dump) { d.Comms[1].LastSeq = 3 }), "operation #4 after the last, #3"},
		{"op without kind", edit(func(d *Dump) { d.Comms[1].Ops[0].Kind = "" }), "operation #1 has no kind"},
		{"wait outside the group", edit(func(d *Dump) { d.Comms[1].Ops[0].WaitFor = 2 }), "operation #1 waits for rank 2, outside its group of 2"},
		{"bad step", edit(func(d *Dump) { d.Comms[1].Ops[0].Step = -2 }), "operation #1 at step -2"},
		{"a running op after the last", edit(func(d *Dump) { d.Comms[0].LastSeq = 811 }), "operation #812 after the last, #811"},
		{"two blocking ops run", edit(func(d *Dump) { d.Comms[0].Ops[1].Running = true }), "comm 0x1: blocking operations #811 and #812 both run"},
		{"two blocking ops run apart", edit(func(d *Dump) { d.Comms[1].Ops[0].Running, d.Comms[1].Ops[4].Running = true, true }),
			"comm 0x2a: blocking operations #1 and #5 both run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ReadDump(strings.NewReader(tt.in))
			require.Nil(t, d)
			require.ErrorContains(t, err, tt.want)
			require.True(t, strings.HasPrefix(err.Error(), "flight: "), err.Error())
		})
	}
}

func TestReadDumpIgnoresUnknownKeys(t *testing.T) {
	in := `{"Rank": 0, "Size": 1, "Time": "2026-03-01T12:00:00Z", "Version": 2,
		"Comms": [{"ID": 1, "Rank": 0, "Group": [0], "Color": "red"}]}`
	d, err := ReadDump(strings.NewReader(in))
	require.NoError(t, err)
	want := dump(0, 1, 0, Comm{ID: 1, Group: []int{0}})
	want.Reason = ""
	require.Equal(t, want, d)
}

func TestFormat(t *testing.T) {
	withFresh := sample()
	withFresh.Comms = append(withFresh.Comms, world(3, 4, 0))
	withFresh.Comms[2].ID = 0x2b
	tests := []struct {
		name string
		d    *Dump
		want string
	}{{
		name: "stuck",
		d:    withFresh,
		want: `rank 3 of 4 dumped at 2026-03-01T12:00:41.000Z: SIGUSR1
  comm 0x1 (world), rank 3 of 4: running #812
    #810 Allreduce(1024 × float32, sum): done
    #811 Allreduce(1024 × float32, sum): done (was slow in step 2 waiting for rank 1)
    #812 Allreduce(65536 × float32, sum) with ring <fast>: waits in step 2 for rank 1 (for 41s)
  comm 0x2a, rank 1 of 2 (world ranks 1 3): idle after #5
    (#1-#2 not shown)
    #3 Bcast(1024 × float32, sum): done
    #4 Bcast(1024 × float32, sum): done
    #5 Bcast: done
  comm 0x2b, rank 3 of 4 (world ranks 0 1 2 3): no operation yet
`,
	}, {
		// Running operations show however old they are.
		name: "async calls",
		d: dump(0, 2, 41, world(0, 2, 6, async(waiting(2, "Allreduce", 1, -1, 40)), async(waited(3, "Allreduce", 1, 0, 30)),
			done(4, "Bcast"), async(runs(5, "Allreduce")), runs(6, "Allreduce"))),
		want: `rank 0 of 2 dumped at 2026-03-01T12:00:41.000Z: communicator timeout
  comm 0x1 (world), rank 0 of 2: running #2, #5 and #6
    #2 async Allreduce(1024 × float32, sum): waits for rank 1 (for 1s)
    (#3 not shown)
    #4 Bcast(1024 × float32, sum): done
    #5 async Allreduce(1024 × float32, sum): running
    #6 Allreduce(1024 × float32, sum): running
`,
	}, {
		name: "a call starting",
		d:    dump(1, 2, 5, world(1, 2, 4, done(3, "Bcast"))),
		want: `rank 1 of 2 dumped at 2026-03-01T12:00:05.000Z: communicator timeout
  comm 0x1 (world), rank 1 of 2: running #4
    #3 Bcast(1024 × float32, sum): done
`,
	}, {
		name: "late steps",
		d: dump(0, 2, 41, world(0, 2, 3, waited(1, "Allreduce", 1, lastStep, 20), waited(2, "Allreduce", 1, 1<<20+3, 30),
			waiting(3, "Allreduce", 1, lastStep, 39))),
		want: `rank 0 of 2 dumped at 2026-03-01T12:00:41.000Z: communicator timeout
  comm 0x1 (world), rank 0 of 2: running #3
    #1 Allreduce(1024 × float32, sum): done (was slow in its last step waiting for rank 1)
    #2 Allreduce(1024 × float32, sum): done (was slow in phase 1 step 3 waiting for rank 1)
    #3 Allreduce(1024 × float32, sum): waits in its last step for rank 1 (for 2s)
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, tt.d.Format(&buf))
			require.Equal(t, tt.want, buf.String())
		})
	}
}

func TestFormatRejectsInvalid(t *testing.T) {
	d := sample()
	d.Comms[0].Ops[2].WaitFor = 4
	var buf bytes.Buffer
	require.ErrorContains(t, d.Format(&buf), "flight: invalid dump: comm 0x1: operation #812 waits for rank 4, outside its group of 4")
	require.Zero(t, buf.Len())
}

func TestRankPath(t *testing.T) {
	tests := []struct {
		path, want string
	}{
		{"dump.json", "dump.rank3.json"},
		{"dump", "dump.rank3.json"},
		{"/tmp/job.d/dump", "/tmp/job.d/dump.rank3.json"},
		{"/tmp/job.d/dump.json", "/tmp/job.d/dump.rank3.json"},
		{"out/.gocolldump", "out/.gocolldump.rank3.json"},
		{"dump.tar.gz", "dump.tar.rank3.gz"},
		{"dumps/", "dumps/rank3.json"},
		{"", "rank3.json"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, RankPath(tt.path, 3))
		})
	}
}
