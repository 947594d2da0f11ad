package multihost

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMeasure measures failure detection across two hosts of two ranks:
// kill -9 of a rank, of a whole host, SIGSTOP of a rank and a partition,
// with shared memory inside the hosts (auto) and with tcp only, for
// GOCOLL_MEASURE_TRIALS trials each. It reports, per case, the time from
// the fault until every survivor has failed and both launchers have
// exited (min, median, max), and in how many trials host 0's ranks and
// launcher named the lost ranks (see naming). Heartbeat period 2 s.
func TestMeasure(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("GOCOLL_MEASURE_TRIALS"))
	if trials <= 0 {
		t.Skip("set GOCOLL_MEASURE_TRIALS (e.g. 20) to measure failure detection")
	}
	needDocker(t)
	faults := []struct {
		name string
		lost []int
		hit  func(t *testing.T, c *cluster)
	}{
		{"kill -9 of rank 3", []int{3}, func(t *testing.T, c *cluster) { signalRank(t, c, 3, syscall.SIGKILL) }},
		{"kill -9 of host 1", []int{2, 3}, func(t *testing.T, c *cluster) { docker(t, "kill", c.hosts[1]) }},
		{"SIGSTOP of rank 3", []int{3}, func(t *testing.T, c *cluster) { signalRank(t, c, 3, syscall.SIGSTOP) }},
		{"partition of host 1", []int{2, 3}, func(t *testing.T, c *cluster) { docker(t, "network", "disconnect", c.name, c.hosts[1]) }},
	}
	shmBefore := shmFiles(t)
	var report strings.Builder
	fmt.Fprintf(&report, "%d trials each; time from the fault until every survivor failed and both launchers exited\n", trials)
	fmt.Fprintf(&report, "%-22s %-5s %9s %9s %9s  %s\n", "fault", "links", "min", "median", "max", "lost ranks named by host 0's ranks and launcher")
	for _, f := range faults {
		for _, tr := range []string{"auto", "tcp"} {
			var took []time.Duration
			named, exact := 0, 0
			for trial := range trials {
				t.Run(fmt.Sprintf("%s/%s/%d", f.name, tr, trial), func(t *testing.T) {
					c := startCluster(t, "wait", "GOCOLL_HEARTBEAT=2s", "GOCOLL_TRANSPORT="+tr)
					c.waitReady()
					f.hit(t, c)
					hit := time.Now()
					c.wait(0)
					c.wait(1)
					took = append(took, time.Since(hit))
					n, e := naming(c, f.lost)
					if n {
						named++
					} else {
						t.Logf("not every survivor named ranks %v:\n%s\n%s", f.lost, c.logs(0), c.logs(1))
					}
					if e {
						exact++
					}
				})
			}
			slices.Sort(took)
			if len(took) > 0 {
				fmt.Fprintf(&report, "%-22s %-5s %9v %9v %9v  %d/%d (exactly %v: %d/%d)\n", f.name, tr, took[0].Round(time.Millisecond),
					took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), named, trials, f.lost, exact, trials)
			}
		}
	}
	t.Log("\n" + report.String())
	if after := shmFiles(t); !slices.Equal(shmBefore, after) {
		t.Errorf("/dev/shm changed: before %v, after %v", shmBefore, after)
	}
	if ids, _ := dockerOut("ps", "-aq", "--filter", "label="+label+"="+runID); ids != "" {
		// The trials' cleanups ran; nothing of theirs may be left.
		t.Errorf("containers left: %s", ids)
	}
}

// naming says how the survivors of host 0 named the lost ranks: named
// when both ranks and the launcher named every rank in lost and no rank
// outside host 1 (whose launcher stops its other ranks when one is
// killed, as mpirun does, so they are lost too); exact when they named
// lost and nothing else.
func naming(c *cluster, lost []int) (named, exact bool) {
	logs := c.logs(0)
	named, exact = true, true
	for r := range ranksPerHost {
		var got []int
		prefix := fmt.Sprintf("[%d] lost ranks [", r)
		i := strings.Index(logs, prefix)
		if i < 0 {
			return false, false
		}
		list := logs[i+len(prefix):]
		list = list[:strings.IndexByte(list, ']')]
		for _, f := range strings.Fields(list) {
			n, _ := strconv.Atoi(f)
			got = append(got, n)
		}
		for _, l := range lost {
			named = named && slices.Contains(got, l)
		}
		for _, g := range got {
			named = named && g/ranksPerHost == 1
		}
		exact = exact && slices.Equal(got, lost)
	}
	who := "rank " + strconv.Itoa(lost[0])
	if len(lost) == 2 {
		who = fmt.Sprintf("ranks %d and %d", lost[0], lost[1])
	}
	named = named && (strings.Contains(logs, "gocoll run: "+who+" lost") || strings.Contains(logs, "gocoll run: ranks 2 and 3 lost"))
	exact = exact && named && strings.Contains(logs, "gocoll run: "+who+" lost")
	return named, exact
}

// signalRank sends sig to rank's process, found among the container's
// processes (as the host sees them) by its GOCOLL_RANK.
func signalRank(t *testing.T, c *cluster, rank int, sig syscall.Signal) {
	t.Helper()
	host := c.hosts[rank/ranksPerHost]
	for _, line := range strings.Split(docker(t, "top", host, "-eo", "pid"), "\n")[1:] {
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), "GOCOLL_RANK="+strconv.Itoa(rank)) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !strings.HasPrefix(string(cmdline), "/worker") {
			continue
		}
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no process of rank %d in %s", rank, host)
}

func shmFiles(t *testing.T) []string {
	entries, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
