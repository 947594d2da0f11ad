package multihost

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMultiHost runs jobs of two hosts (containers) with two ranks each.
func TestMultiHost(t *testing.T) {
	needDocker(t)

	// Every rank checks a Hierarchical allreduce (shared memory inside
	// a host, links between hosts) against the exact sum.
	t.Run("HierarchicalAllreduce", func(t *testing.T) {
		c := startCluster(t, "allreduce")
		for h := range hosts {
			if code := c.wait(h); code != 0 {
				t.Fatalf("host %d exited %d:\n%s", h, code, c.logs(h))
			}
		}
		for r := range hosts * ranksPerHost {
			want := fmt.Sprintf("[%d] rank %d: hierarchical allreduce of 65539 float64 over 4 ranks ok", r, r)
			if !strings.Contains(c.logs(r/ranksPerHost), want) {
				t.Errorf("rank %d did not report its check:\n%s", r, c.logs(r/ranksPerHost))
			}
		}
	})

	// A host killed mid-job: the other host's ranks name both of its
	// ranks, and its launcher says so.
	t.Run("KilledHost", func(t *testing.T) {
		c := startCluster(t, "wait")
		c.waitReady()
		docker(t, "kill", c.hosts[1])
		hit := time.Now()
		lostHost(t, c, hit)
	})

	// A host cut off the network: nothing closes, and only the heartbeat
	// finds it, within its period.
	t.Run("Partition", func(t *testing.T) {
		c := startCluster(t, "wait", "GOCOLL_HEARTBEAT=2s")
		c.waitReady()
		docker(t, "network", "disconnect", c.name, c.hosts[1])
		hit := time.Now()
		lostHost(t, c, hit)
		if logs := c.logs(0); !strings.Contains(logs, "sent nothing for 2s") {
			t.Errorf("the loss is not put down to the heartbeat:\n%s", logs)
		}
	})
}

// lostHost checks that host 0's ranks and launcher name ranks 2 and 3,
// the ranks of host 1, as lost.
func lostHost(t *testing.T, c *cluster, hit time.Time) {
	t.Helper()
	if code := c.wait(0); code == 0 {
		t.Fatalf("host 0 exited 0 although host 1 was lost:\n%s", c.logs(0))
	}
	t.Logf("host 0's launcher exited %v after host 1 was lost", time.Since(hit).Round(time.Millisecond))
	logs := c.logs(0)
	for r := range ranksPerHost {
		if !strings.Contains(logs, fmt.Sprintf("[%d] lost ranks [2 3]", r)) {
			t.Errorf("rank %d did not name ranks 2 and 3:\n%s", r, logs)
		}
	}
	if !strings.Contains(logs, "gocoll run: ranks 2 and 3 lost") {
		t.Errorf("the launcher's reason does not name ranks 2 and 3:\n%s", logs)
	}
}
