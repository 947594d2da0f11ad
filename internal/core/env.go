package core

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocoll/gocoll/internal/rendezvous"
)

// jobSpec is what a rank needs to join a job: who it is and where the
// rendezvous is.
type jobSpec struct {
	rank, size    int
	addr          string // host:port of the rendezvous, served by rank 0
	secret        []byte
	identity      string    // jobIdentity: what the ranks' key is bound to
	transport     string    // GOCOLL_TRANSPORT, "" when unset
	tuning        string    // GOCOLL_TUNING, the path of a tuning table, "" when unset
	tcpCongestion string    // GOCOLL_TCP_CONGESTION, "" when unset
	singleCopy    string    // GOCOLL_SINGLE_COPY, "" when unset
	tlsFiles      [3]string // GOCOLL_TLS_CERT, _KEY and _CA; all "" when unset
	launcher      string    // which launcher's variables were used, for errors
	timeout       time.Duration
	hasTimeout    bool
	heartbeat     time.Duration // GOCOLL_HEARTBEAT, when hasHeartbeat
	hasHeartbeat  bool
	spin          time.Duration // GOCOLL_SPIN, when hasSpin
	hasSpin       bool
	hugePages     bool // GOCOLL_HUGE_PAGES, when hasHugePages
	hasHugePages  bool
	statsSampling int // GOCOLL_STATS_SAMPLING, when hasSampling
	hasSampling   bool
	trace         string // GOCOLL_TRACE, "" when unset
	dump          string // GOCOLL_DUMP, "" when unset
	debug         bool
	procsChosen   bool // GOMAXPROCS is set, which Init then leaves as it is (shareCPUs)

	// singleton: no launcher's variables are set, and the job is this
	// process alone (singleton start), unless singletonOff forbids it.
	singleton bool
	// singletonOff: GOCOLL_SINGLETON=0 makes a missing job environment
	// an error; hasSingleton says whether GOCOLL_SINGLETON was set.
	singletonOff, hasSingleton bool
}

// launcher describes how one launcher names rank, size and rendezvous.
type launcher struct {
	name       string
	rank, size string // variable names; size "" means none
	addr       func(env func(string) (string, bool)) (string, error)
}

// launchers in the order Init tries them: the first whose rank variable is
// set decides rank and size. GOCOLL_ADDR, when set, overrides the address
// of every launcher.
var launchers = []launcher{
	{name: "gocoll", rank: "GOCOLL_RANK", size: "GOCOLL_SIZE"},
	{name: "torchrun", rank: "RANK", size: "WORLD_SIZE", addr: torchrunAddr},
	{name: "Open MPI mpirun", rank: "OMPI_COMM_WORLD_RANK", size: "OMPI_COMM_WORLD_SIZE", addr: masterAddr},
	{name: "SLURM srun", rank: "SLURM_PROCID", size: "SLURM_NTASKS", addr: slurmAddr},
	{name: "Kubernetes indexed job", rank: "JOB_COMPLETION_INDEX", addr: masterAddr},
}

// rankVars names the launchers' rank variables, for messages.
var rankVars = func() string {
	names := make([]string, len(launchers))
	for i, l := range launchers {
		names[i] = l.rank
	}
	return strings.Join(names, ", ")
}()

// partialVars are the variables that only come with a launcher's rank
// variable, and the rank variable each one wants. One of them set without
// any rank variable is a job environment gone wrong, not a singleton.
var partialVars = []struct{ name, wants string }{
	{"GOCOLL_SIZE", "GOCOLL_RANK (or JOB_COMPLETION_INDEX)"},
	{"GOCOLL_ADDR", "GOCOLL_RANK and GOCOLL_SIZE"},
	{"WORLD_SIZE", "RANK (or JOB_COMPLETION_INDEX)"},
	{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
	{"SLURM_NTASKS", "SLURM_PROCID (start each rank with srun)"},
}

// singletonSpec is the job of a process that no launcher started: rank 0
// of 1, no rendezvous.
func singletonSpec(env func(string) (string, bool)) (jobSpec, error) {
	for _, v := range partialVars {
		if _, ok := env(v.name); ok {
			return jobSpec{}, fmt.Errorf("%w: %s is set but none of %s is: set %s, or unset %s to run as a single rank",
				ErrInvalid, v.name, rankVars, v.wants, v.name)
		}
	}
	return jobSpec{rank: 0, size: 1, launcher: "singleton", singleton: true, identity: jobIdentity(env, "singleton")}, nil
}

// parseSingleton reads GOCOLL_SINGLETON: 0 (or false, off, no) forbids
// singleton start, 1 (true, on, yes) or empty allows it.
func parseSingleton(s string) (off bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "0", "false", "off", "no":
		return true, nil
	case "", "1", "true", "on", "yes":
		return false, nil
	}
	return false, fmt.Errorf("%w: GOCOLL_SINGLETON=%q is not 0 (a missing job environment is an error) or 1 (it starts a single rank)", ErrInvalid, s)
}

// jobFromEnv reads the job description from env (os.LookupEnv in Init).
// Without any launcher's variables the job is a singleton: this process
// as rank 0 of 1.
func jobFromEnv(env func(string) (string, bool)) (jobSpec, error) {
	var spec jobSpec
	var l *launcher
	for i := range launchers {
		if _, ok := env(launchers[i].rank); ok {
			l = &launchers[i]
			break
		}
	}
	var err error
	if l == nil {
		spec, err = singletonSpec(env)
	} else {
		spec, err = launcherSpec(env, l)
	}
	if err != nil {
		return spec, err
	}
	if s, ok := env("GOCOLL_SINGLETON"); ok {
		if spec.singletonOff, err = parseSingleton(s); err != nil {
			return spec, err
		}
		spec.hasSingleton = true
	}
	return settingsFromEnv(env, spec)
}

// launcherSpec reads rank, size, rendezvous address and job identity
// from the variables of launcher l, whose rank variable is set.
func launcherSpec(env func(string) (string, bool), l *launcher) (jobSpec, error) {
	var spec jobSpec
	spec.launcher = l.name
	var err error
	if spec.rank, err = intVar(env, l.rank, l.name); err != nil {
		return spec, err
	}
	sizeVars := []string{l.size}
	if l.size == "" {
		// An indexed job knows its index but not the parallelism.
		sizeVars = []string{"GOCOLL_SIZE", "WORLD_SIZE"}
	}
	spec.size = -1
	for _, v := range sizeVars {
		if _, ok := env(v); ok {
			if spec.size, err = intVar(env, v, l.name); err != nil {
				return spec, err
			}
			break
		}
	}
	switch {
	case spec.size < 0:
		return spec, fmt.Errorf("%w: %s: %s is set but the job size is not: set %s",
			ErrInvalid, l.name, l.rank, strings.Join(sizeVars, " or "))
	case spec.size == 0:
		return spec, fmt.Errorf("%w: %s: job size %s=0 must be at least 1", ErrInvalid, l.name, sizeVars[0])
	case spec.size > rendezvous.MaxSize:
		return spec, fmt.Errorf("%w: %s: job size %d is more than the %d ranks a job can have", ErrInvalid, l.name, spec.size, rendezvous.MaxSize)
	case spec.rank >= spec.size:
		return spec, fmt.Errorf("%w: %s: rank %s=%d is not below the job size %d", ErrInvalid, l.name, l.rank, spec.rank, spec.size)
	}

	if a, ok := env("GOCOLL_ADDR"); ok {
		spec.addr = a
	} else if l.addr != nil {
		if spec.addr, err = l.addr(env); err != nil {
			return spec, fmt.Errorf("%w: %s: %v", ErrInvalid, l.name, err)
		}
	}
	if spec.addr == "" {
		return spec, fmt.Errorf("%w: %s: no rendezvous address: set GOCOLL_ADDR=host:port (the address rank 0 serves the rendezvous on)", ErrInvalid, l.name)
	}
	if _, port, err := net.SplitHostPort(spec.addr); err != nil {
		return spec, fmt.Errorf("%w: rendezvous address %q: %v", ErrInvalid, spec.addr, err)
	} else if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return spec, fmt.Errorf("%w: rendezvous address %q: port %q is not a port number", ErrInvalid, spec.addr, port)
	}

	spec.identity = jobIdentity(env, l.name)
	return spec, nil
}

// settingsFromEnv reads into spec the variables that set options, which
// every job takes, a singleton's too.
func settingsFromEnv(env func(string) (string, bool), spec jobSpec) (jobSpec, error) {
	if s, ok := env("GOCOLL_SECRET"); ok {
		spec.secret = []byte(s)
	}
	spec.transport, _ = env("GOCOLL_TRANSPORT")
	spec.tuning, _ = env("GOCOLL_TUNING")
	spec.tcpCongestion, _ = env("GOCOLL_TCP_CONGESTION")
	spec.singleCopy, _ = env("GOCOLL_SINGLE_COPY")
	for i, name := range []string{"GOCOLL_TLS_CERT", "GOCOLL_TLS_KEY", "GOCOLL_TLS_CA"} {
		spec.tlsFiles[i], _ = env(name)
	}
	if set := spec.tlsFiles != [3]string{}; set && slices.Contains(spec.tlsFiles[:], "") {
		return spec, fmt.Errorf("%w: GOCOLL_TLS_CERT, GOCOLL_TLS_KEY and GOCOLL_TLS_CA must be set together", ErrInvalid)
	}
	if s, ok := env("GOCOLL_TIMEOUT"); ok {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return spec, fmt.Errorf("%w: GOCOLL_TIMEOUT=%q is not a duration such as 30s or 5m", ErrInvalid, s)
		}
		spec.timeout, spec.hasTimeout = d, true
	}
	if s, ok := env("GOCOLL_HEARTBEAT"); ok {
		d, err := parseHeartbeat(s)
		if err != nil {
			return spec, err
		}
		spec.heartbeat, spec.hasHeartbeat = d, true
	}
	if s, ok := env("GOCOLL_SPIN"); ok {
		d, err := time.ParseDuration(s)
		if err == nil {
			err = WithSpin(d)(new(Options))
		}
		if err != nil {
			return spec, fmt.Errorf("%w: GOCOLL_SPIN=%q is not a duration from 0 to %v such as 50us", ErrInvalid, s, MaxSpin)
		}
		spec.spin, spec.hasSpin = d, true
	}
	if s, ok := env("GOCOLL_HUGE_PAGES"); ok {
		on, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return spec, fmt.Errorf("%w: GOCOLL_HUGE_PAGES=%q: want 1 or 0, true or false", ErrInvalid, s)
		}
		spec.hugePages, spec.hasHugePages = on, true
	}
	if s, ok := env("GOCOLL_STATS_SAMPLING"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			return spec, fmt.Errorf("%w: GOCOLL_STATS_SAMPLING=%q is not a whole number: 0 for no timing, 1 to time every call, n to time one call in n", ErrInvalid, s)
		}
		spec.statsSampling, spec.hasSampling = n, true
	}
	spec.trace, _ = env("GOCOLL_TRACE")
	spec.dump, _ = env("GOCOLL_DUMP")
	_, spec.procsChosen = env("GOMAXPROCS")
	if s, ok := env("GOCOLL_DEBUG"); ok && s != "" && s != "0" {
		spec.debug = true
	}
	return spec, nil
}

// parseHeartbeat reads GOCOLL_HEARTBEAT: a duration such as 2s, or 0 or
// off for none.
func parseHeartbeat(s string) (time.Duration, error) {
	if s == "off" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if s == "0" {
		d, err = 0, nil
	}
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: GOCOLL_HEARTBEAT=%q is not a duration such as 4s, or off", ErrInvalid, s)
	}
	if err := WithHeartbeat(d)(new(Options)); err != nil {
		return 0, fmt.Errorf("GOCOLL_HEARTBEAT: %w", err)
	}
	return d, nil
}

func intVar(env func(string) (string, bool), name, launcher string) (int, error) {
	s, _ := env(name)
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s: %s=%q is not a non-negative integer", ErrInvalid, launcher, name, s)
	}
	return n, nil
}

// masterAddr is MASTER_ADDR:MASTER_PORT, the convention of torchrun that
// other launchers' users adopt too.
func masterAddr(env func(string) (string, bool)) (string, error) {
	host, hok := env("MASTER_ADDR")
	port, pok := env("MASTER_PORT")
	switch {
	case !hok && !pok:
		return "", nil
	case !hok || !pok:
		return "", fmt.Errorf("MASTER_ADDR=%q and MASTER_PORT=%q must be set together", host, port)
	}
	return net.JoinHostPort(host, port), nil
}

// torchrunAddr is torchrun's MASTER_ADDR and MASTER_PORT. When torchrun's
// agent already serves its own TCPStore on MASTER_PORT
// (TORCHELASTIC_USE_AGENT_STORE=True), gocoll's rendezvous takes the next
// port instead of colliding with it.
func torchrunAddr(env func(string) (string, bool)) (string, error) {
	addr, err := masterAddr(env)
	if err != nil || addr == "" {
		return addr, err
	}
	if s, _ := env("TORCHELASTIC_USE_AGENT_STORE"); strings.EqualFold(s, "true") {
		host, port, _ := net.SplitHostPort(addr)
		p, err := strconv.Atoi(port)
		if err != nil {
			return "", fmt.Errorf("MASTER_PORT=%q is not a port number", port)
		}
		addr = net.JoinHostPort(host, strconv.Itoa(p+1))
	}
	return addr, nil
}

// slurmAddr uses MASTER_ADDR/MASTER_PORT when the batch script sets them,
// and otherwise the first node of the allocation with a port derived from
// the job and step ids (slurmPort), so that two jobs or two steps of one
// job sharing a node do not collide.
func slurmAddr(env func(string) (string, bool)) (string, error) {
	if addr, err := masterAddr(env); err != nil || addr != "" {
		return addr, err
	}
	list, ok := env("SLURM_JOB_NODELIST")
	if !ok {
		list, ok = env("SLURM_NODELIST")
	}
	if !ok {
		return "", nil
	}
	host, err := firstHost(list)
	if err != nil {
		return "", err
	}
	job, _ := env("SLURM_JOB_ID")
	step, _ := env("SLURM_STEP_ID")
	return net.JoinHostPort(host, strconv.Itoa(slurmPort(job, step))), nil
}

// slurmPort is 29500 + (job·16 + step) mod 2000: sixteen steps of a job
// running at once get ports of their own, and consecutive jobs move on by
// sixteen. Ports can still collide (jobs 125 apart); the job key, bound to
// both ids, keeps such jobs from joining each other, and the later one
// fails to bind with an error naming the address.
func slurmPort(job, step string) int {
	j, _ := strconv.Atoi(job)
	s, _ := strconv.Atoi(step) // the batch step and interactive steps have names, not numbers: 0
	return 29500 + ((j%2000)*16+s%16)%2000
}

// firstHost returns the first host of a SLURM host list such as
// "gpu[03-05,07],cpu1" (gpu03).
func firstHost(list string) (string, error) {
	list = strings.TrimSpace(list)
	open := strings.IndexByte(list, '[')
	comma := strings.IndexByte(list, ',')
	if open < 0 || (comma >= 0 && comma < open) {
		if comma >= 0 {
			list = list[:comma]
		}
		if list == "" {
			return "", fmt.Errorf("empty SLURM node list")
		}
		return list, nil
	}
	end := strings.IndexByte(list[open:], ']')
	if end < 0 {
		return "", fmt.Errorf("SLURM node list %q has an unclosed '['", list)
	}
	first := list[open+1 : open+end]
	if i := strings.IndexAny(first, ",-"); i >= 0 {
		first = first[:i]
	}
	if first == "" {
		return "", fmt.Errorf("SLURM node list %q has an empty range", list)
	}
	return list[:open] + first, nil
}
