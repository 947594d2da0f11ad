package multihost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// label marks everything the tests create, for cleanup and for the sweep
// of what a killed test binary left behind.
const label = "gocoll.test"

// docker runs the docker command and returns its output; a failure fails
// the test with what docker said.
func docker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := dockerOut(args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func dockerOut(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// needDocker skips the test where no Docker engine answers.
func needDocker(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Docker containers")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker command: the multi-host tests need a Docker engine")
	}
	if out, err := dockerOut("version", "--format", "{{.Server.Version}}"); err != nil {
		t.Skipf("no Docker engine answers (docker version: %v: %s): the multi-host tests need one", err, out)
	}
}

var (
	imageOnce sync.Once
	imageName string
	imageErr  error
)

// image builds, once per test binary, the static binaries and the image
// FROM scratch that holds them, and returns its name. TestMain removes it.
func image(t testing.TB) string {
	t.Helper()
	imageOnce.Do(func() { imageName, imageErr = buildImage() })
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageName
}

func buildImage() (string, error) {
	dir, err := os.MkdirTemp("", "gocoll-multihost")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for name, pkg := range map[string]string{
		"gocoll": "github.com/gocoll/gocoll/cmd/gocoll",
		"worker": "github.com/gocoll/gocoll/internal/multihost/worker",
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	}
	dockerfile := "FROM scratch\nCOPY gocoll worker /\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return "", err
	}
	name := "gocoll-multihost:" + runID
	if out, err := dockerOut("build", "-q", "--label", label+"="+runID, "-t", name, dir); err != nil {
		return "", fmt.Errorf("docker build: %v\n%s", err, out)
	}
	return name, nil
}

// runID names this test binary's containers, network and image.
var runID = func() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}()

func TestMain(m *testing.M) {
	sweep()
	code := m.Run()
	if imageName != "" {
		dockerOut("rmi", "-f", imageName)
	}
	sweep()
	os.Exit(code)
}

// sweep removes every container, network and image the tests made, this
// run's and those a killed run left.
func sweep() {
	if _, err := exec.LookPath("docker"); err != nil {
		return
	}
	if ids, _ := dockerOut("ps", "-aq", "--filter", "label="+label); ids != "" {
		dockerOut(append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
	}
	if ids, _ := dockerOut("network", "ls", "-q", "--filter", "label="+label); ids != "" {
		dockerOut(append([]string{"network", "rm"}, strings.Fields(ids)...)...)
	}
	if ids, _ := dockerOut("images", "-q", "--filter", "label="+label); ids != "" {
		dockerOut(append([]string{"rmi", "-f"}, strings.Fields(ids)...)...)
	}
}

// cluster is one job over two hosts: a private network and a container
// per host, each running gocoll run for its ranks.
type cluster struct {
	t            testing.TB
	name         string // of the network; the hosts are name-0 and name-1
	hosts        []string
	ranksPerHost int
	started      time.Time
}

const (
	hosts        = 2
	ranksPerHost = 2
	masterPort   = 29500
)

var clusterSeq struct {
	sync.Mutex
	n int
}

// startCluster starts a job of the worker's role over two hosts of
// ranksPerHost ranks, with env added to every rank's environment.
func startCluster(t testing.TB, role string, env ...string) *cluster {
	t.Helper()
	return startJob(t, ranksPerHost, append(env, "GOCOLL_MH_ROLE="+role), "/worker")
}

// startJob starts command (a program of the image and its arguments) as
// a job over two hosts of perHost ranks each, with env added to every
// rank's environment. Everything is removed when the test ends.
func startJob(t testing.TB, perHost int, env []string, command ...string) *cluster {
	t.Helper()
	img := image(t)
	clusterSeq.Lock()
	clusterSeq.n++
	name := fmt.Sprintf("gocoll-mh-%s-%d", runID, clusterSeq.n)
	clusterSeq.Unlock()
	c := &cluster{t: t, name: name, ranksPerHost: perHost}
	docker(t, "network", "create", "--internal", "--label", label+"="+runID, name)
	t.Cleanup(func() {
		for _, h := range c.hosts {
			dockerOut("rm", "-f", h)
		}
		dockerOut("network", "rm", name)
	})
	secret := make([]byte, 16)
	rand.Read(secret)
	for node := range hosts {
		host := fmt.Sprintf("%s-%d", name, node)
		args := []string{"run", "-d", "--name", host, "--hostname", host, "--network", name,
			"--label", label + "=" + runID, "--tmpfs", "/tmp",
			"-e", "GOCOLL_SECRET=" + hex.EncodeToString(secret)}
		for _, e := range env {
			args = append(args, "-e", e)
		}
		args = append(args, img, "/gocoll", "run", "-n", strconv.Itoa(perHost),
			"--nnodes", strconv.Itoa(hosts), "--node-rank", strconv.Itoa(node),
			"--master", fmt.Sprintf("%s-0:%d", name, masterPort))
		args = append(args, command...)
		docker(t, args...)
		c.hosts = append(c.hosts, host)
	}
	c.started = time.Now()
	return c
}

// logs is everything host printed so far.
func (c *cluster) logs(host int) string {
	out, _ := dockerOut("logs", c.hosts[host])
	return out
}

// wait waits until host's launcher exits and returns its exit status.
func (c *cluster) wait(host int) int {
	c.t.Helper()
	out := docker(c.t, "wait", c.hosts[host])
	code, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		c.t.Fatalf("docker wait %s: %q", c.hosts[host], out)
	}
	return code
}

// waitReady waits until every rank of the job has printed "ready".
func (c *cluster) waitReady() {
	c.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		n := 0
		for h := range c.hosts {
			n += strings.Count(c.logs(h), "] ready")
		}
		if n == hosts*c.ranksPerHost {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("the ranks never got ready:\n%s\n%s", c.logs(0), c.logs(1))
}
