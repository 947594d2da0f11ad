package core

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gocoll/gocoll/internal/rendezvous"
	"github.com/gocoll/gocoll/internal/timeline"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/mem"
	"github.com/gocoll/gocoll/internal/transport/tcp"
)

// Init is comm.Init.
func Init(ctx context.Context, opts ...Option) (*Comm, error) {
	return initFromEnv(ctx, os.LookupEnv, opts)
}

// initFromEnv is Init with the environment given by env.
func initFromEnv(ctx context.Context, env func(string) (string, bool), opts []Option) (*Comm, error) {
	spec, err := jobFromEnv(env)
	if err != nil {
		return nil, &OpError{Op: "init", Rank: -1, Peer: -1, Err: err}
	}
	var o Options
	o.setDefault()
	o.secret = spec.secret
	o.report = reportTo(env)
	if spec.hasTimeout {
		o.timeout = spec.timeout
	}
	if spec.hasHeartbeat {
		o.heartbeat = spec.heartbeat
	}
	if spec.hasSpin {
		o.spin = spec.spin
	}
	if spec.hasHugePages {
		o.noHugePages = !spec.hugePages
	}
	if spec.hasSampling {
		o.statsSampling = spec.statsSampling
	}
	o.tracePath = spec.trace
	o.dumpPath, o.dumpOnFailure = spec.dump, true
	if spec.transport != "" {
		if err := WithTransport(spec.transport)(&o); err != nil {
			return nil, &OpError{Op: "init", Rank: spec.rank, Peer: -1, Err: fmt.Errorf("GOCOLL_TRANSPORT: %w", err)}
		}
	}
	if spec.tlsFiles[0] != "" {
		if err := WithTLS(spec.tlsFiles[0], spec.tlsFiles[1], spec.tlsFiles[2])(&o); err != nil {
			return nil, &OpError{Op: "init", Rank: spec.rank, Peer: -1, Err: fmt.Errorf("GOCOLL_TLS_*: %w", err)}
		}
	}
	if spec.tcpCongestion != "" {
		if err := WithTCPCongestion(spec.tcpCongestion)(&o); err != nil {
			return nil, &OpError{Op: "init", Rank: spec.rank, Peer: -1, Err: fmt.Errorf("GOCOLL_TCP_CONGESTION: %w", err)}
		}
	}
	if spec.singleCopy != "" {
		if err := WithSingleCopy(spec.singleCopy)(&o); err != nil {
			return nil, &OpError{Op: "init", Rank: spec.rank, Peer: -1, Err: fmt.Errorf("GOCOLL_SINGLE_COPY: %w", err)}
		}
	}
	if spec.tuning != "" {
		if err := WithTuning(spec.tuning)(&o); err != nil {
			return nil, &OpError{Op: "init", Rank: spec.rank, Peer: -1, Err: fmt.Errorf("GOCOLL_TUNING: %w", err)}
		}
	}
	if spec.debug {
		o.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, &OpError{Op: "init", Rank: spec.rank, Peer: -1, Err: err}
		}
	}
	if spec.singleton {
		allowed, why := !spec.singletonOff, "GOCOLL_SINGLETON"
		if o.singleton != nil {
			allowed, why = *o.singleton, "comm.WithSingleton(false)"
		}
		if !allowed {
			return nil, &OpError{Op: "init", Rank: -1, Peer: -1, Err: fmt.Errorf("%w: no job environment: none of %s is set, "+
				"and %s forbids running as a single rank: set GOCOLL_RANK, GOCOLL_SIZE and GOCOLL_ADDR, "+
				"or start the program with gocoll run, torchrun, mpirun, srun or as a Kubernetes indexed job", ErrInvalid, rankVars, why)}
		}
		return singleton(ctx, spec, o)
	}
	if len(o.secret) == 0 {
		warnNoSecret(o.logger, spec.rank, spec.launcher)
	}
	c, err := join(ctx, spec, o)
	if err != nil {
		return nil, &OpError{Op: "init", Rank: spec.rank, Peer: -1, Err: fmt.Errorf("%s job of %d ranks, rendezvous %s: %w", spec.launcher, spec.size, spec.addr, err)}
	}
	c.ep.dumpOnSignal()
	return c, nil
}

// singletonMessage is what Init logs when it starts a singleton.
var singletonMessage = "gocoll: no launcher environment found (" + rankVars + " unset): " +
	"running as a single rank; set GOCOLL_SINGLETON=0 to make this an error"

// singleton starts the world of a process that no launcher started, as
// MPI's singleton init does: rank 0 of a job of 1. It is the rank that
// NewLocal(1) makes, with Init's options: no rendezvous to serve or dial,
// no links and no listening socket, and every collective and
// point-to-point call works on it (to and from rank 0). Init makes it
// unless GOCOLL_SINGLETON=0 or WithSingleton(false) forbid it.
func singleton(ctx context.Context, spec jobSpec, o Options) (*Comm, error) {
	// One rank has no peer to link to, whatever links were asked for.
	o.transport = "mem"
	if len(o.secret) == 0 {
		o.secret = make([]byte, 32)
		rand.Read(o.secret)
	}
	cs, err := newLocal(ctx, 1, o, spec.identity)
	if err != nil {
		return nil, &OpError{Op: "init", Rank: 0, Peer: -1, Err: fmt.Errorf("single rank: %w", err)}
	}
	c := cs[0]
	c.ep.log.Info(singletonMessage)
	c.ep.dumpOnSignal()
	return c, nil
}

// WithSingleton is comm.WithSingleton.
func WithSingleton(on bool) Option {
	return func(o *Options) error {
		o.singleton = &on
		return nil
	}
}

func join(ctx context.Context, spec jobSpec, o Options) (*Comm, error) {
	if o.transport == "mem" {
		return nil, fmt.Errorf("%w: the mem transport only joins ranks of one process; use NewLocal", ErrInvalid)
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.timeout, ErrTimeout)
		defer cancel()
	}
	host, _, _ := net.SplitHostPort(spec.addr)
	key := jobKey(o.secret, spec.identity)

	var store *rendezvous.Client
	var server *rendezvous.Server // this rank serves the store
	var release func(context.Context) error
	linkHost := host // the address peers reach this rank's links at
	if spec.rank == 0 {
		var err error
		server, err = rendezvous.NewServer(spec.size, key, o.logger)
		if err != nil {
			return nil, err
		}
		l, err := net.Listen("tcp", listenAddr(spec.addr))
		if err != nil {
			return nil, fmt.Errorf("serving the rendezvous: %w", err)
		}
		if o.tls != nil {
			l = tls.NewListener(l, o.tls)
		}
		go server.Serve(l)
		if store, err = server.Join(0); err != nil {
			server.Close()
			return nil, err
		}
		release = func(ctx context.Context) error {
			err := server.WaitLeft(ctx)
			server.Close()
			if errors.Is(err, rendezvous.ErrClosed) {
				// Closed already, when this rank passed a loss on
				// (passOn): nobody is left to wait for.
				return nil
			}
			return err
		}
	} else {
		var err error
		var dialOpts []rendezvous.DialOption
		if o.tls != nil {
			dialOpts = append(dialOpts, rendezvous.WithTLS(o.tls))
		}
		if store, err = rendezvous.Dial(ctx, spec.addr, spec.rank, spec.size, key, dialOpts...); err != nil {
			return nil, err
		}
		if o.heartbeat > 0 {
			if err := store.StartHeartbeat(o.heartbeat); err != nil {
				store.Close()
				return nil, err
			}
		}
		// The interface that routes to rank 0 is the one peers can reach.
		if a, ok := store.LocalAddr().(*net.TCPAddr); ok {
			linkHost = a.IP.String()
		}
	}
	tr, err := tcp.New(o.tcpOptions()...)
	if err != nil {
		store.Close()
		if release != nil {
			release(canceled)
		}
		return nil, err
	}
	cfg := transport.Config{Rank: spec.rank, JobID: store.JobID(), Secret: key, Logger: o.logger}
	ln, err := tr.Listen(net.JoinHostPort(bindHost(linkHost), "0"), cfg)
	if err != nil {
		store.Close()
		if release != nil {
			release(canceled)
		}
		return nil, fmt.Errorf("listening for links: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr())
	links := network{tr: tr, ln: ln, addr: net.JoinHostPort(linkHost, port)}
	shm, err := listenShm(o, cfg)
	var ep *endpoint
	if err == nil {
		ep, err = start(ctx, spec.rank, spec.size, o, cfg, store, links, shm)
	}
	if err == nil && !spec.procsChosen {
		ep.shareCPUs()
	}
	if err != nil {
		links.close()
		shm.close()
		store.Close()
		if release != nil {
			release(canceled)
		}
		return nil, err
	}
	ep.release, ep.server = release, server
	return world(ctx, ep)
}

// tcpOptions are the options of the tcp links.
func (o *Options) tcpOptions() []tcp.Option {
	var opts []tcp.Option
	if o.tls != nil {
		opts = append(opts, tcp.WithTLS(o.tls))
	}
	if o.tcpCongestion != "" {
		opts = append(opts, tcp.WithCongestionControl(o.tcpCongestion))
	}
	return opts
}

// world makes the world communicator of ep, with its shared memory.
func world(ctx context.Context, ep *endpoint) (*Comm, error) {
	c := newWorld(ep)
	if err := c.share(ctx); err != nil {
		ep.close()
		return nil, fmt.Errorf("setting up shared memory: %w", err)
	}
	c.logSetup()
	return c, nil
}

// listenAddr is where rank 0 serves the rendezvous: on the address's host
// when that is an IP or localhost, on every interface when it is a name
// that other hosts resolve.
func listenAddr(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return net.JoinHostPort(bindHost(host), port)
}

func bindHost(host string) string {
	if host == "localhost" || net.ParseIP(host) != nil {
		return host
	}
	return ""
}

// start publishes this rank's link addresses and host, learns everybody
// else's, and starts the endpoint. Learning every address up front doubles
// as the start-up barrier: a rank that never joins is named here rather
// than at its first message.
func start(ctx context.Context, rank, size int, o Options, cfg transport.Config, store *rendezvous.Client,
	links, shm network) (*endpoint, error) {
	if err := store.Set(ctx, addrKey(rank), []byte(links.addr)); err != nil {
		return nil, fmt.Errorf("publishing this rank's address: %w", err)
	}
	host := hostIdentity()
	if o.hostOf != nil {
		host = o.hostOf(rank)
	}
	record := strings.Join([]string{host, strconv.Itoa(os.Getpid()), ownCPUs().String(), shm.addr, kernelIdentity()}, "\n")
	if err := store.Set(ctx, hostKey(rank), []byte(record)); err != nil {
		return nil, fmt.Errorf("publishing this rank's host: %w", err)
	}
	peers := peerTable{addrs: make([]string, size), shmAddrs: make([]string, size), hosts: make([]string, size),
		pids: make([]int, size), cpus: make([]cpuSet, size), kernels: make([]string, size)}
	for r := range size {
		v, err := store.Get(ctx, addrKey(r))
		if err == nil {
			peers.addrs[r] = string(v)
			v, err = store.Get(ctx, hostKey(r))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("rank %d has not joined: %w", r, context.Cause(ctx))
			}
			return nil, fmt.Errorf("looking up rank %d: %w", r, err)
		}
		fields := strings.SplitN(string(v), "\n", 5)
		peers.hosts[r] = fields[0]
		if len(fields) == 5 {
			peers.pids[r], _ = strconv.Atoi(fields[1])
			peers.cpus[r] = parseCPUs(fields[2])
			peers.shmAddrs[r] = fields[3]
			peers.kernels[r] = fields[4]
		}
	}
	if o.transport == "shm" {
		if err := peers.checkOneHost(); err != nil {
			return nil, err
		}
	}
	var timeline *timeline.Recorder
	if o.tracePath != "" {
		var err error
		if timeline, err = openTimeline(o.tracePath, rank, size); err != nil {
			return nil, err
		}
	}
	ep := newEndpoint(rank, size, o, links, shm, cfg, store, peers)
	ep.setTimeline(timeline)
	return ep, nil
}

// peerTable is what every rank published at the rendezvous.
type peerTable struct {
	addrs    []string // link address on the main network
	shmAddrs []string // shared-memory link address, "" for none
	hosts    []string // host identity (hostIdentity)
	pids     []int    // process id
	cpus     []cpuSet // the CPUs the rank may run on
	kernels  []string // the kernel the rank runs under (kernelIdentity), "" unknown
}

// kernelIdentity names the kernel this process runs under, its boot id,
// "" where there is none to read. Containers of one machine share it
// where their host identities differ, and with it the CPUs their ranks
// spin on (crowded).
func kernelIdentity() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// hostIdentity names the machine this process runs on, so that ranks can
// tell which peers share a host: the hostname plus the machine id (or the
// boot id where there is none), because container hostnames repeat.
func hostIdentity() string {
	if v := os.Getenv("GOCOLL_HOST"); v != "" {
		return v
	}
	name, _ := os.Hostname()
	for _, f := range []string{"/etc/machine-id", "/proc/sys/kernel/random/boot_id"} {
		if b, err := os.ReadFile(f); err == nil {
			return name + "/" + strings.TrimSpace(string(b))
		}
	}
	return name
}

// NewLocal is comm.NewLocal.
func NewLocal(n int, opts ...Option) ([]*Comm, error) {
	if n < 1 {
		return nil, &OpError{Op: "init", Rank: -1, Peer: -1, Err: invalidf("NewLocal needs at least 1 rank, got %d", n)}
	}
	var o Options
	o.setDefault()
	o.transport = "mem"
	// The ranks share one process: a rank that spins holds a processor,
	// and keeps the runtime from polling the network for the peers whose
	// sends it waits for (an 8 B round trip over tcp took 144 µs with the
	// default spin, 78 µs without).
	o.spin = 0
	o.secret = make([]byte, 32)
	rand.Read(o.secret)
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, &OpError{Op: "init", Rank: -1, Peer: -1, Err: err}
		}
	}
	comms, err := newLocal(context.Background(), n, o, "NewLocal")
	if err != nil {
		return nil, &OpError{Op: "init", Rank: -1, Peer: -1, Err: err}
	}
	return comms, nil
}

// newLocal starts the n ranks of a job in this process, with options o
// and the job identity given (what the links' key is bound to): the ranks
// of NewLocal, and the single rank of a singleton (Init without a
// launcher). The rendezvous is in memory; links are too unless
// o.transport asks for tcp.
func newLocal(ctx context.Context, n int, o Options, identity string) ([]*Comm, error) {
	var tr transport.Transport
	switch o.transport {
	case "mem":
		tr = mem.NewNetwork().Transport()
	case "tcp", "auto", "shm":
		t, err := tcp.New(o.tcpOptions()...)
		if err != nil {
			return nil, err
		}
		tr = t
	}
	key := jobKey(o.secret, identity)
	server, err := rendezvous.NewServer(n, key, o.logger)
	if err != nil {
		return nil, err
	}
	// A rank that fails to start cancels the others, which would otherwise
	// wait for its address until the timeout.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, o.timeout, ErrTimeout)
		defer cancel()
	}

	// The rendezvous stops when the last rank lets go of it.
	var mu sync.Mutex
	holders := n
	release := func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if holders--; holders == 0 {
			return server.Close()
		}
		return nil
	}

	comms := make([]*Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[r], errs[r] = startLocal(ctx, r, n, o, key, tr, server)
			if errs[r] != nil {
				cancel()
				return
			}
			comms[r].ep.release = release
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range comms {
			if c != nil {
				c.Close()
			}
		}
		server.Close()
		return nil, err
	}
	return comms, nil
}

func startLocal(ctx context.Context, rank, n int, o Options, key []byte, tr transport.Transport, server *rendezvous.Server) (*Comm, error) {
	store, err := server.Join(rank)
	if err != nil {
		return nil, err
	}
	cfg := transport.Config{Rank: rank, JobID: store.JobID(), Secret: key, Logger: o.logger}
	addr := ""
	if tr.Name() == "tcp" {
		addr = "127.0.0.1:0"
	}
	ln, err := tr.Listen(addr, cfg)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("rank %d: listening for links: %w", rank, err)
	}
	links := network{tr: tr, ln: ln, addr: ln.Addr()}
	shm, err := listenShm(o, cfg)
	var ep *endpoint
	if err == nil {
		ep, err = start(ctx, rank, n, o, cfg, store, links, shm)
	}
	if err != nil {
		links.close()
		shm.close()
		store.Close()
		return nil, fmt.Errorf("rank %d: %w", rank, err)
	}
	c, err := world(ctx, ep)
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", rank, err)
	}
	return c, nil
}
