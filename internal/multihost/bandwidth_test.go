package multihost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocoll/gocoll/internal/bench"
)

// TestMeasureBandwidth runs gocoll bench across two hosts and, in turn,
// the same sweep with the same number of ranks on this machine over
// loopback tcp, for GOCOLL_MEASURE_ROUNDS rounds, and reports the median
// bus bandwidth of each point (for 8 B, the median time) of both and
// their ratio. Two jobs: one rank per host over tcp, and two ranks per
// host with the transport chosen as a user's job chooses it (shared
// memory inside a host, tcp between). GOCOLL_MEASURE_SIZES replaces the
// sizes (gocoll bench's --sizes syntax). Where iperf3 and nsenter are
// installed, it also reports what one TCP stream carries between the
// hosts and over loopback (iperf3 run in the containers' network
// namespaces), the raw links' measure.
func TestMeasureBandwidth(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("GOCOLL_MEASURE_ROUNDS"))
	if rounds <= 0 {
		t.Skip("set GOCOLL_MEASURE_ROUNDS (e.g. 3) to measure bandwidth across hosts")
	}
	needDocker(t)
	sizes := "8,64K,1M,16M,64M"
	if s := os.Getenv("GOCOLL_MEASURE_SIZES"); s != "" {
		sizes = s
	}
	sweep := []string{"bench", "--collectives", "allreduce,bcast,gather,allgather,reducescatter", "--sizes", sizes}
	local := localGocoll(t)
	jobs := []struct {
		perHost   int
		transport string
	}{{1, "tcp"}, {2, "auto"}}
	var report strings.Builder
	for _, job := range jobs {
		np := hosts * job.perHost
		across, here := map[bench.Key][]bench.Result{}, map[bench.Key][]bench.Result{}
		for round := range rounds {
			name := fmt.Sprintf("np%d-%s/round%d", np, job.transport, round)
			t.Run(name, func(t *testing.T) {
				for _, r := range benchAcrossHosts(t, job.perHost, job.transport, sweep) {
					across[r.Key()] = append(across[r.Key()], r)
				}
				for _, r := range benchHere(t, local, np, sweep) {
					here[r.Key()] = append(here[r.Key()], r)
				}
			})
		}
		fmt.Fprintf(&report, "\n%d hosts × %d ranks (%s) against %d ranks on one host over loopback tcp, medians of %d rounds:\n",
			hosts, job.perHost, job.transport, np, rounds)
		fmt.Fprintf(&report, "%-14s %8s  %-10s %14s %14s %7s\n", "collective", "size", "algo", "across hosts", "loopback", "ratio")
		keys := make([]bench.Key, 0, len(across))
		for k := range across {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b bench.Key) int {
			return strings.Compare(fmt.Sprintf("%s %012d", a.Collective, a.Bytes), fmt.Sprintf("%s %012d", b.Collective, b.Bytes))
		})
		for _, k := range keys {
			a, ok := here[bench.Key{Transport: "tcp", NP: k.NP, Collective: k.Collective, Bytes: k.Bytes}]
			if !ok {
				continue
			}
			fmt.Fprintf(&report, "%-14s %8s  %-10s %s\n", k.Collective, bench.FormatBytes(k.Bytes), across[k][0].Algo, compareMedians(across[k], a))
		}
	}
	// The sweeps' report goes out first, so that a reference tool that
	// fails does not take it along.
	t.Log(report.String())
	if _, err := exec.LookPath("iperf3"); err == nil {
		if _, err := exec.LookPath("nsenter"); err == nil {
			t.Logf("one TCP stream (iperf3 -P 1), across hosts %s, loopback %s", iperf3AcrossHosts(t), iperf3Here(t))
		}
	}
}

// iperf3AcrossHosts measures one TCP stream from host 0 to host 1 of a
// job that waits, running iperf3 inside the containers' network
// namespaces.
func iperf3AcrossHosts(t *testing.T) string {
	c := startCluster(t, "wait")
	c.waitReady()
	pid := func(h int) string { return docker(t, "inspect", "-f", "{{.State.Pid}}", c.hosts[h]) }
	addr := docker(t, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", c.hosts[1])
	return iperf3(t, []string{"nsenter", "-t", pid(1), "-n"}, []string{"nsenter", "-t", pid(0), "-n"}, addr)
}

func iperf3Here(t *testing.T) string { return iperf3(t, nil, nil, "127.0.0.1") }

// iperf3 runs a server under the server prefix and a 5 s client to addr
// under the client prefix and returns the client's rate. The server
// serves until the function ends, not once (-1): a client that came
// before it listened may still have reached it and failed, and a
// one-off server then quit before the client's retry.
func iperf3(t *testing.T, server, client []string, addr string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(prefix []string, args ...string) *exec.Cmd {
		argv := append(slices.Clone(prefix), append([]string{"iperf3"}, args...)...)
		return exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	srv := run(server, "-s", "-p", "5299")
	if err := srv.Start(); err != nil {
		t.Fatalf("iperf3 server: %v", err)
	}
	defer srv.Wait()
	defer srv.Process.Kill()
	var last error
	for range 50 { // the server takes a moment to listen
		out, err := run(client, "-c", addr, "-p", "5299", "-t", "5", "-P", "1", "-J").Output()
		rate, rerr := iperf3Rate(out)
		if err == nil && rerr == nil {
			return fmt.Sprintf("%.2f GB/s", rate/8e9)
		}
		if last = rerr; last == nil {
			last = err
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("iperf3 client to %s: %v", addr, last)
	return ""
}

// iperf3Rate is the rate in bits per second that the report of an
// iperf3 -J client says the server received, or the error it reports.
// Each report is decoded into a value of its own: a report without an
// error says nothing of the field, so a value that an earlier attempt's
// error ("unable to connect to server", before the server listened) had
// filled would keep that error through every later success.
func iperf3Rate(report []byte) (float64, error) {
	var res struct {
		Error string
		End   struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		}
	}
	if err := json.Unmarshal(report, &res); err != nil {
		return 0, fmt.Errorf("%w in %q", err, report)
	}
	if res.Error != "" {
		return 0, errors.New(res.Error)
	}
	return res.End.SumReceived.BitsPerSecond, nil
}

// compareMedians formats the median bus bandwidth of both sets of
// results and their ratio, or for a point too small to have a
// meaningful bandwidth, the median times.
func compareMedians(across, here []bench.Result) string {
	median := func(rs []bench.Result, f func(bench.Result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	if across[0].Bytes < 1024 {
		a, h := median(across, func(r bench.Result) float64 { return r.AvgUS }), median(here, func(r bench.Result) float64 { return r.AvgUS })
		return fmt.Sprintf("%11.1f µs %11.1f µs %6.2fT", a, h, a/h)
	}
	a, h := median(across, func(r bench.Result) float64 { return r.BusBW }), median(here, func(r bench.Result) float64 { return r.BusBW })
	return fmt.Sprintf("%9.3f GB/s %9.3f GB/s %7.2f", a, h, a/h)
}

// benchAcrossHosts runs gocoll bench's sweep as a job of two hosts with
// perHost ranks each and returns rank 0's results.
func benchAcrossHosts(t *testing.T, perHost int, transport string, sweep []string) []bench.Result {
	const results = "/results.json"
	c := startJob(t, perHost, []string{"GOCOLL_TRANSPORT=" + transport, "GOCOLL_BENCH_RESULTS=" + results},
		append([]string{"/gocoll"}, sweep...)...)
	for h := range hosts {
		if code := c.wait(h); code != 0 {
			t.Fatalf("host %d exited %d:\n%s", h, code, c.logs(h))
		}
	}
	dir := t.TempDir()
	docker(t, "cp", c.hosts[0]+":"+results, dir)
	var rs []bench.Result // what a sweep's rank 0 hands over
	readJSON(t, filepath.Join(dir, filepath.Base(results)), &rs)
	return rs
}

// benchHere runs the same sweep with np ranks on this machine over tcp.
func benchHere(t *testing.T, gocoll string, np int, sweep []string) []bench.Result {
	path := filepath.Join(t.TempDir(), "results.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := append(slices.Clone(sweep), "-n", strconv.Itoa(np), "--transport", "tcp", "--json", path)
	if out, err := exec.CommandContext(ctx, gocoll, args...).CombinedOutput(); err != nil {
		t.Fatalf("gocoll %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var rep bench.Report
	readJSON(t, path, &rep)
	return rep.Results
}

// readJSON reads the JSON file at path into v.
func readJSON(t *testing.T, path string, v any) {
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
}

// localGocoll builds the gocoll command as the image's is built, static.
func localGocoll(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "gocoll")
	cmd := exec.Command("go", "build", "-o", path, "github.com/gocoll/gocoll/cmd/gocoll")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building gocoll: %v\n%s", err, out)
	}
	return path
}

// TestIperf3Rate: each report decodes on its own, so that a good report
// after a failed attempt's is a rate, not the earlier error.
func TestIperf3Rate(t *testing.T) {
	refused := []byte(`{"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"}`)
	good := []byte(`{"start": {}, "end": {"sum_received": {"bits_per_second": 8e9}}}`)
	// The reports of one run's attempts, in order: the server was not
	// listening yet for the first.
	attempts := []struct {
		report  []byte
		rate    float64
		wantErr string
	}{
		{refused, 0, "unable to connect to server"},
		{good, 8e9, ""},
		{[]byte(""), 0, "unexpected end of JSON input"},
		{good, 8e9, ""},
	}
	for i, a := range attempts {
		rate, err := iperf3Rate(a.report)
		switch {
		case a.wantErr == "" && err != nil:
			t.Errorf("attempt %d: %v, want a rate", i, err)
		case a.wantErr != "" && (err == nil || !strings.Contains(err.Error(), a.wantErr)):
			t.Errorf("attempt %d: error %v, want one saying %q", i, err, a.wantErr)
		case rate != a.rate:
			t.Errorf("attempt %d: rate %v, want %v", i, rate, a.rate)
		}
	}
}
