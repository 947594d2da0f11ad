package bench

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// A Result is the measurement of one collective at one size.
type Result struct {
	Impl       string  `json:"impl"`      // "gocoll", "openmpi", "mpi4py", ...
	Transport  string  `json:"transport"` // as asked: "tcp", "shm", "auto", "mem"
	NP         int     `json:"np"`
	Collective string  `json:"collective"` // "allreduce", "bcast", ...
	Bytes      int64   `json:"bytes"`      // of the data, not the wire; see BusFactor
	AvgUS      float64 `json:"avg_us"`     // the largest per-rank average, µs
	AlgBW      float64 `json:"algbw_GBps"` // Bytes / AvgUS, GB/s (1e9)
	BusBW      float64 `json:"busbw_GBps"` // AlgBW × BusFactor

	// gocoll's own columns; empty or zero in other implementations' files.
	//
	// Algo is the algorithm the point's calls ran, as the communicator
	// counted them (comm.Comm.Stats): several joined by "+" if the calls
	// did not all run one, "gob" for the object collectives, and "auto"
	// in files written before the algorithm was recorded.
	Algo string `json:"algo,omitempty"`
	// Link is what carried the calls, as comm.CallStats.Transport names
	// it: "tcp", "shm" or "mem" links, "segment" for the host's shared
	// segment, several joined by "+".
	Link string `json:"link,omitempty"`
	// Auto says that the selector chose Algo: the point asked for auto.
	Auto  bool    `json:"auto,omitempty"`
	Codec string  `json:"codec,omitempty"`
	Chunk int     `json:"chunk,omitempty"`  // bytes, 0 for the default
	MinUS float64 `json:"min_us,omitempty"` // the fastest single call on any rank
	MaxUS float64 `json:"max_us,omitempty"` // the slowest single call on any rank
	// P50US and P99US are the median and 99th percentile of a rank's
	// calls, the largest over the ranks: what a typical call and a slow
	// one cost, which the average, pulled by a few calls that lost
	// their core, does not tell.
	P50US float64 `json:"p50_us,omitempty"`
	P99US float64 `json:"p99_us,omitempty"`
	// CPUUS is the CPU time per call of a rank's process, user and
	// system, all threads: the largest over the ranks' averages, µs.
	CPUUS float64 `json:"cpu_us,omitempty"`
}

// Key is what results of different runs are compared on.
type Key struct {
	Transport  string // as Over says
	NP         int
	Collective string
	Bytes      int64
}

// Key returns r's key.
func (r *Result) Key() Key { return Key{r.Over(), r.NP, r.Collective, r.Bytes} }

// Over is the transport r's calls went over, in the terms of the
// reference files, whose transport is shm or tcp: the one asked for,
// unless that was auto and Link says what was used, shm for shared
// memory (shm links and the segment alike) and tcp for tcp links. A
// point of an auto sweep over both stays apart as "shm+tcp".
func (r *Result) Over() string {
	if r.Transport != "auto" || r.Link == "" {
		return r.Transport
	}
	var over []string
	for link := range strings.SplitSeq(r.Link, "+") {
		if link == "segment" {
			link = "shm"
		}
		if !slices.Contains(over, link) {
			over = append(over, link)
		}
	}
	slices.Sort(over)
	return strings.Join(over, "+")
}

// Asked is the algorithm r's point asked for: "auto" where the selector
// chose, else the algorithm that ran.
func (r *Result) Asked() string {
	if r.Auto {
		return "auto"
	}
	return r.Algo
}

// SetTime sets r's average time and the bandwidths derived from it.
func (r *Result) SetTime(avgUS float64) {
	r.AvgUS = avgUS
	r.AlgBW, r.BusBW = 0, 0
	if avgUS > 0 {
		r.AlgBW = float64(r.Bytes) / (avgUS * 1e3)
		r.BusBW = r.AlgBW * BusFactor(r.Collective, r.NP)
	}
}

// BusFactor is the factor from algorithm to bus bandwidth of a collective
// among n ranks (nccl-tests' PERFORMANCE.md): the share of the data that
// each rank must send or receive at the least, so that a busbw close to
// the link's bandwidth means the collective used the link fully whatever
// n. bytes counts the reduced vector (allreduce, reduce, reduce-scatter's
// input), the broadcast buffer (bcast) and the whole gathered or
// scattered buffer (gather, scatter, their v forms, allgather, allgatherv,
// alltoall), in the bytes
// of the elements themselves whatever the codec: a compressed point's
// bandwidths are effective ones, what the data moved at rather than its
// wire bytes, so that they compare across codecs. An object collective
// ("allreduce_object") moves the data of its typed counterpart and has
// its factor. Barrier and unknown collectives have factor 0.
func BusFactor(collective string, n int) float64 {
	if n < 1 {
		return 0
	}
	f := float64(n)
	switch strings.TrimSuffix(collective, "_object") {
	case "allreduce":
		return 2 * (f - 1) / f
	case "reducescatter", "allgather", "allgatherv", "gather", "gatherv", "scatter", "scatterv", "alltoall":
		return (f - 1) / f
	case "bcast", "reduce", "scan", "exscan":
		return 1
	}
	return 0
}

// Columns are the CSV columns: the anchors' eight, then gocoll's, those
// added later at the end.
var Columns = []string{"impl", "transport", "np", "collective", "bytes", "avg_us", "algbw_GBps", "busbw_GBps",
	"algo", "codec", "chunk", "min_us", "max_us", "cpu_us", "p50_us", "p99_us", "link", "auto"}

// standardColumns is how many of Columns the anchors' files have.
const standardColumns = 8

// WriteCSV writes a header and one line per result.
func WriteCSV(w io.Writer, results []Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Columns); err != nil {
		return err
	}
	for i := range results {
		r := &results[i]
		if err := cw.Write([]string{r.Impl, r.Transport, strconv.Itoa(r.NP), r.Collective,
			strconv.FormatInt(r.Bytes, 10), formatFloat(r.AvgUS, 3), formatFloat(r.AlgBW, 4), formatFloat(r.BusBW, 4),
			r.Algo, r.Codec, strconv.Itoa(r.Chunk), formatFloat(r.MinUS, 3), formatFloat(r.MaxUS, 3), formatFloat(r.CPUUS, 3),
			formatFloat(r.P50US, 3), formatFloat(r.P99US, 3), r.Link, strconv.FormatBool(r.Auto)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func formatFloat(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

// ReadCSV reads results written by WriteCSV or by the anchors' scripts:
// a header that starts with the eight standard columns, in their order,
// and may go on with any of gocoll's, in any order. Columns it does not
// know are ignored, and the error of a malformed file names its line and
// column.
func ReadCSV(r io.Reader) ([]Result, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("empty file: want a header line starting " + strings.Join(Columns[:standardColumns], ","))
	}
	if err != nil {
		return nil, err
	}
	if len(header) < standardColumns || !slices.Equal(header[:standardColumns], Columns[:standardColumns]) {
		return nil, fmt.Errorf("header %q: want it to start %s", strings.Join(header, ","), strings.Join(Columns[:standardColumns], ","))
	}
	var results []Result
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return results, nil
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, the header has %d", line, len(rec), len(header))
		}
		var res Result
		for i, name := range header {
			if err := res.set(name, rec[i]); err != nil {
				return nil, fmt.Errorf("line %d, column %s: %w", line, name, err)
			}
		}
		results = append(results, res)
	}
}

// set sets the field of column name from its text.
func (r *Result) set(name, v string) error {
	var err error
	switch name {
	case "impl":
		r.Impl = v
	case "transport":
		r.Transport = v
	case "collective":
		r.Collective = v
	case "algo":
		r.Algo = v
	case "link":
		r.Link = v
	case "auto":
		if r.Auto, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%q is neither true nor false", v)
		}
	case "codec":
		r.Codec = v
	case "np":
		r.NP, err = strconv.Atoi(v)
	case "chunk":
		r.Chunk, err = strconv.Atoi(v)
	case "bytes":
		r.Bytes, err = strconv.ParseInt(v, 10, 64)
	case "avg_us":
		r.AvgUS, err = strconv.ParseFloat(v, 64)
	case "algbw_GBps":
		r.AlgBW, err = strconv.ParseFloat(v, 64)
	case "busbw_GBps":
		r.BusBW, err = strconv.ParseFloat(v, 64)
	case "min_us":
		r.MinUS, err = strconv.ParseFloat(v, 64)
	case "max_us":
		r.MaxUS, err = strconv.ParseFloat(v, 64)
	case "cpu_us":
		r.CPUUS, err = strconv.ParseFloat(v, 64)
	case "p50_us":
		r.P50US, err = strconv.ParseFloat(v, 64)
	case "p99_us":
		r.P99US, err = strconv.ParseFloat(v, 64)
	}
	if err != nil {
		return fmt.Errorf("%q is not a number", v)
	}
	return nil
}
