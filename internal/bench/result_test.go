package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBusFactor(t *testing.T) {
	tests := []struct {
		collective string
		n          int
		want       float64
	}{
		{"allreduce", 1, 0},
		{"allreduce", 2, 1},
		{"allreduce", 4, 1.5},
		{"allreduce", 8, 1.75},
		{"reducescatter", 4, 0.75},
		{"allgather", 2, 0.5},
		{"gather", 4, 0.75},
		{"scatter", 8, 0.875},
		{"alltoall", 4, 0.75},
		{"bcast", 4, 1},
		{"reduce", 7, 1},
		{"allreduce_object", 4, 1.5},
		{"allgather_object", 2, 0.5},
		{"barrier", 4, 0},
		{"nonsense", 4, 0},
		{"allreduce", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.collective, func(t *testing.T) {
			assert.InDelta(t, tt.want, BusFactor(tt.collective, tt.n), 1e-12, "%d ranks", tt.n)
		})
	}
}

func TestSetTime(t *testing.T) {
	r := Result{Collective: "allreduce", NP: 4, Bytes: 1 << 20}
	r.SetTime(500)
	assert.InDelta(t, 2.097152, r.AlgBW, 1e-9)
	assert.InDelta(t, 2.097152*1.5, r.BusBW, 1e-9)
	r.SetTime(0)
	assert.Zero(t, r.AlgBW)
}

func TestCSVRoundTrip(t *testing.T) {
	in := []Result{
		{Impl: "gocoll", Transport: "auto", NP: 2, Collective: "allreduce", Bytes: 8, Algo: "shm", Link: "segment", Auto: true, Codec: "none",
			MinUS: 0.4, MaxUS: 9.5, CPUUS: 3.25, P50US: 0.5, P99US: 2.125},
		{Impl: "gocoll", Transport: "tcp", NP: 4, Collective: "bcast", Bytes: 1 << 20, Algo: "chain", Link: "tcp", Codec: "bf16", Chunk: 65536},
	}
	in[0].SetTime(0.678)
	in[1].SetTime(1234.5)
	var buf bytes.Buffer
	require.NoError(t, WriteCSV(&buf, in))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps,algo,codec,chunk,min_us,max_us,cpu_us,p50_us,p99_us,link,auto", lines[0])
	assert.Equal(t, "gocoll,auto,2,allreduce,8,0.678,0.0118,0.0118,shm,none,0,0.400,9.500,3.250,0.500,2.125,segment,true", lines[1])
	assert.Equal(t, "gocoll,tcp,4,bcast,1048576,1234.500,0.8494,0.8494,chain,bf16,65536,0.000,0.000,0.000,0.000,0.000,tcp,false", lines[2])
	out, err := ReadCSV(&buf)
	require.NoError(t, err)
	require.Len(t, out, 2)
	for i := range in {
		assert.Equal(t, in[i].Key(), out[i].Key())
		assert.Equal(t, in[i].Algo, out[i].Algo)
		assert.Equal(t, in[i].Link, out[i].Link)
		assert.Equal(t, in[i].Auto, out[i].Auto)
		assert.Equal(t, in[i].Chunk, out[i].Chunk)
		assert.InDelta(t, in[i].AvgUS, out[i].AvgUS, 1e-3)
		assert.InDelta(t, in[i].CPUUS, out[i].CPUUS, 1e-3)
		assert.InDelta(t, in[i].BusBW, out[i].BusBW, 1e-4)
	}
}

// TestOverAndAsked: a point of an auto sweep is compared by the link it
// used, in the reference files' terms, and a point of the selector's
// choice asked for auto, whatever ran; files from before the link and
// auto columns keep their transport and their algo auto.
func TestOverAndAsked(t *testing.T) {
	tests := []struct {
		name        string
		r           Result
		over, asked string
	}{
		{"auto through the segment", Result{Transport: "auto", Algo: "shm", Link: "segment", Auto: true}, "shm", "auto"},
		{"auto over shm links", Result{Transport: "auto", Algo: "ring", Link: "shm", Auto: true}, "shm", "auto"},
		{"auto over the segment and shm links", Result{Transport: "auto", Algo: "gob", Link: "segment+shm"}, "shm", "gob"},
		{"auto across hosts", Result{Transport: "auto", Algo: "hierarchical", Link: "segment+tcp", Auto: true}, "shm+tcp", "auto"},
		{"auto over tcp", Result{Transport: "auto", Algo: "tree", Link: "tcp", Auto: true}, "tcp", "auto"},
		{"tcp asked and forced", Result{Transport: "tcp", Algo: "ring", Link: "tcp"}, "tcp", "ring"},
		{"shm asked", Result{Transport: "shm", Algo: "shm", Link: "segment", Auto: true}, "shm", "auto"},
		{"a file from before the link column", Result{Transport: "auto", Algo: "auto"}, "auto", "auto"},
		{"another implementation's", Result{Transport: "shm"}, "shm", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.over, tt.r.Over())
			require.Equal(t, tt.over, tt.r.Key().Transport)
			require.Equal(t, tt.asked, tt.r.Asked())
		})
	}
}

// TestReadAnchors reads reference results in the format of
// bench/reference's scripts, the files that benchtool compare joins
// ours with.
func TestReadAnchors(t *testing.T) {
	f, err := os.Open("testdata/openmpi.csv")
	require.NoError(t, err)
	defer f.Close()
	rs, err := ReadCSV(f)
	require.NoError(t, err)
	require.NotEmpty(t, rs)
	for _, r := range rs {
		require.Equal(t, "openmpi", r.Impl)
		require.Positive(t, r.NP)
		require.NotEmpty(t, r.Collective)
	}
}

func TestReadCSVErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "empty file"},
		{"wrong header", "a,b,c\n", `header "a,b,c": want it to start impl,transport,np`},
		{"bad number", "impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps\ngocoll,tcp,two,allreduce,8,1,1,1\n",
			`line 2, column np: "two" is not a number`},
		{"short line", "impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps\ngocoll,tcp,2\n",
			"line 2: 3 fields, the header has 8"},
		{"bad auto", "impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps,auto\ngocoll,tcp,2,allreduce,8,1,1,1,maybe\n",
			`line 2, column auto: "maybe" is neither true nor false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(tt.in))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestReportJSON(t *testing.T) {
	r := Result{Impl: "gocoll", Transport: "mem", NP: 2, Collective: "allreduce", Bytes: 8, Algo: "ring"}
	r.SetTime(3)
	rep := &Report{Date: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), Command: []string{"gocoll", "bench"}, Machine: ThisMachine(), Results: []Result{r}}
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, rep))
	var back map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	machine := back["machine"].(map[string]any)
	for _, k := range []string{"cpu", "cores", "go_version", "gomaxprocs", "os", "arch", "hostname"} {
		assert.Contains(t, machine, k)
	}
	assert.Equal(t, []any{"gocoll", "bench"}, back["command"])
	res := back["results"].([]any)[0].(map[string]any)
	for _, k := range Columns[:standardColumns] {
		assert.Contains(t, res, k)
	}
}
