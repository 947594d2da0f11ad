package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/rendezvous"
	"github.com/gocoll/gocoll/internal/timeline"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// An endpoint is one rank's presence in a job: its links, its inboxes and
// its failure state. The world communicator and every communicator split
// from it share one endpoint, and so share its links.
//
// Two ranks talk over one link, both ways: the rank that first needs it
// dials, and the other adopts it (see linkTo and adopt). Over TCP that
// halves the packets of an exchange, since each message carries the
// acknowledgement of the one that came the other way; with a link each
// way every message drew a bare acknowledgement of its own. When both
// ranks dial at once, the lower rank's link is kept: the higher rank
// adopts it, and the lower rank declines the other (wire.Hello), before
// anything is sent on either.
type endpoint struct {
	rank, size int
	opts       Options
	log        *slog.Logger
	links      network // the main network: tcp, or mem
	shm        network // shared-memory links to the ranks of this host; zero when not used
	linkCfg    transport.Config
	store      *rendezvous.Client
	peerTable  // what every rank published

	peers   []peer  // the links sent on, by world rank
	inboxes []inbox // what arrives, by world rank: the same links, read
	wild    wildcards

	// timeline records the rank's calls, nil when it keeps none;
	// timelineBase is its clock's start on Now's (setTimeline).
	timeline     *timeline.Recorder
	timelineBase int64

	// signalsDone stops the rank's dumps on SIGUSR1 (dumpOnSignal).
	signalsDone chan struct{}

	callsMu    sync.Mutex
	callTables map[uint64]*callTable // by communicator id

	budgetMu   sync.Mutex
	budgetUsed int
	budgetWake chan struct{} // closed when space frees; nil while nobody waits

	// lossMu guards the ranks found lost in the current LossSettle
	// period, first found first, and settled, closed when it ends; nil
	// outside one.
	lossMu       sync.Mutex
	lost         []lostRank
	settled      chan struct{}
	failOnce     sync.Once
	failErr      error
	failed       chan struct{} // closed by fail
	announceOnce sync.Once     // of this rank's own abort

	// parked counts the callers parked in wait: while one is, every
	// polled link is watched (see rest).
	parked atomic.Int32

	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error
	release   func(ctx context.Context) error // hands back the rendezvous: stops rank 0's server
	// server is the rendezvous store this process serves (Init's rank
	// 0), nil elsewhere.
	server *rendezvous.Server
	wg     sync.WaitGroup
}

type peer struct {
	mu   sync.Mutex // held while dialing: one dial at a time
	link atomic.Pointer[outLink]

	// pair decides which link is the pair's: it guards dialing, and
	// link's one store, after which linked is closed.
	pair    sync.Mutex
	dialing bool
	linked  chan struct{}

	sends  sendWatch
	isends sendQueue
}

// publish makes l the pair's link; the caller holds pair.
func (p *peer) publish(l transport.Link) {
	p.link.Store(&outLink{l})
	close(p.linked)
}

type outLink struct{ transport.Link }

// closedChan is a ready channel for waits that need not wait.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// shareCPUs lowers this process's GOMAXPROCS to its share of its
// machine's CPUs where it runs at the runtime's default with more
// (procsShare), and says so: at Info on the machine's first rank, as
// torchrun says that it set OMP_NUM_THREADS, at Debug on the others.
// Init calls it where the environment does not set GOMAXPROCS.
func (ep *endpoint) shareCPUs() {
	procs := runtime.GOMAXPROCS(0)
	share := ep.procsShare(ep.rank, procs, runtime.NumCPU())
	if share == procs {
		return
	}
	runtime.GOMAXPROCS(share)
	log := ep.log.Debug
	if ep.firstOnMachine(ep.rank) == ep.rank {
		log = ep.log.Info
	}
	log("GOMAXPROCS lowered to each rank's share of the machine's CPUs, as gocoll run sets it; set GOMAXPROCS to choose",
		"GOMAXPROCS", share, "was", procs, "ranks on this machine", ep.ranksOnMachine(ep.rank),
		"their CPUs", ep.cpusOnMachine(ep.rank))
}

func newEndpoint(rank, size int, o Options, links, shm network,
	cfg transport.Config, store *rendezvous.Client, peers peerTable) *endpoint {
	// A rank that spins holds a CPU, and when the ranks of the machine
	// outnumber its CPUs, that may be the CPU the rank it waits for
	// needs: spinning then made small collectives two to three times
	// slower (np=4 on 2 CPUs), and eight times in two containers of two
	// ranks each on 2 CPUs. Such ranks hand the CPU over between looks
	// instead, as Open MPI's do when oversubscribed.
	o.yield = peers.crowded(rank)
	ep := &endpoint{
		rank: rank, size: size, opts: o, log: o.logger.With("rank", rank),
		links: links, shm: shm, linkCfg: cfg, store: store, peerTable: peers,
		peers:       make([]peer, size),
		inboxes:     make([]inbox, size),
		callTables:  make(map[uint64]*callTable),
		failed:      make(chan struct{}),
		signalsDone: make(chan struct{}),
	}
	for i := range ep.peers {
		ep.peers[i].linked = make(chan struct{})
	}
	ep.log.Debug("waits spin", "ranks on this machine", peers.ranksOnMachine(rank),
		"their CPUs", peers.cpusOnMachine(rank), "spinning hands the CPU over", o.yield)
	ep.wg.Add(2)
	go ep.acceptLoop(links.ln)
	go ep.watchStore()
	if o.timeout > 0 {
		ep.wg.Add(1)
		go ep.watchSends()
	}
	if shm.ln != nil {
		ep.wg.Add(1)
		go ep.acceptLoop(shm.ln)
	}
	return ep
}

// err returns the reason calls can no longer proceed, or nil.
func (ep *endpoint) err() error {
	select {
	case <-ep.failed:
		return ep.failErr
	default:
		return nil
	}
}

func (ep *endpoint) watchStore() {
	defer ep.wg.Done()
	for ev := range ep.store.Events() {
		if ep.closing.Load() {
			continue
		}
		switch ev.Kind {
		case rendezvous.Lost:
			ep.lose(ev.Rank, errors.New(ev.Reason), true)
		case rendezvous.Aborted:
			ep.fail(remoteAbort(ev.Rank, ev.Reason))
		}
	}
}

func (ep *endpoint) acceptLoop(ln transport.Listener) {
	defer ep.wg.Done()
	for {
		l, err := ln.Accept()
		if err != nil {
			return
		}
		testHookAfterAccept(ep)
		src := l.Peer()
		if src < 0 || src >= ep.size || src == ep.rank {
			ep.log.Warn("refusing link from a rank outside the job", "peer", src, "size", ep.size)
			l.Close()
			continue
		}
		if ep.adopt(src, l) {
			ep.readFrom(src, l)
		}
	}
}

// adopt answers the link l that rank src dialed (wire.Hello) and reports
// whether l is now the pair's link, the one this rank sends to src on
// and reads from it. It declines l when the pair has a link already, or
// when this rank, the lower of the two, is dialing src itself: src then
// adopts that one. A rank that is closing answers with its goodbye.
func (ep *endpoint) adopt(src int, l transport.Link) bool {
	p := &ep.peers[src]
	p.pair.Lock()
	defer p.pair.Unlock()
	closing := ep.closing.Load()
	accept := !closing && p.link.Load() == nil && !(p.dialing && ep.rank < src)
	answer := wire.Hello(accept)
	if closing {
		answer = goodbyeFrame
	}
	ctx, cancel := context.WithTimeout(context.Background(), abortGrace)
	defer cancel()
	if l.WriteMessage(ctx, answer, nil) != nil || !accept {
		l.Close()
		return false
	}
	p.publish(l)
	return true
}

// readFrom starts the goroutine that reads the pair's link l from src,
// unless this rank is closing: Close closes the inboxes' links it finds
// after it set closing, and the reader of one registered later would hold
// Close until the peer hung up. l is the pair's link by now, so Close
// says its goodbye on it and closes it all the same.
func (ep *endpoint) readFrom(src int, l transport.Link) {
	ib := &ep.inboxes[src]
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ep.closing.Load() {
		return
	}
	ib.link = l
	ep.log.Debug("link up", "peer", src, "kind", linkKind(l))
	ep.wg.Add(1)
	if pl, ok := l.(transport.Poller); ok && ep.opts.spin > 0 {
		pl.SetSpin(ep.opts.spin, ep.opts.yield)
		pl.OnWriteBlock(ep.watchAll)
		p := &polled{link: testHookPolled(pl), watch: make(chan struct{}, 1)}
		ib.polled.Store(p)
		go ep.pollLoop(src, p)
	} else {
		go ep.readLoop(src, l)
	}
}

// linkKind names the package of l's type: "shm", "tcp", "mem".
func linkKind(l transport.Link) string {
	t := reflect.TypeOf(l)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return path.Base(t.PkgPath())
}

// linkLabels are the profiler labels of the goroutines that read links
// (readLoop, pollLoop). A link is made on first use, often inside a
// collective call, whose labels its goroutine would otherwise keep.
var linkLabels = pprof.WithLabels(context.Background(), pprof.Labels("gocoll", "link"))

// readLoop reads the messages of one inbound link until it ends. Every
// frame of an operation is checked against the operation's call on this
// rank before it is delivered (see callTable).
func (ep *endpoint) readLoop(src int, l transport.Link) {
	defer ep.wg.Done()
	pprof.SetGoroutineLabels(linkLabels)
	ib := &ep.inboxes[src]
	var h wire.Header
	var calls callCache
	for {
		err := l.ReadHeader(&h)
		if err == nil {
			err = ep.handle(src, ib, l, &h, &calls, true)
		}
		if err != nil {
			ep.linkDown(src, ib, l, err)
			return
		}
	}
}

// callCache remembers the call table of the communicator of the last
// frame a link brought: most frames are for the one before.
type callCache struct {
	calls *callTable
	of    uint64
}

func (c *callCache) get(ep *endpoint, id uint64) *callTable {
	if c.calls == nil || c.of != id {
		c.calls, c.of = ep.calls(id), id
	}
	return c.calls
}

// handle handles the message from src whose header h was just read off
// link l: a goodbye, a failure, or a frame checked against this rank's
// call and delivered. With wait false, it does not wait for room for an
// early message: it returns errStall, having read nothing more.
func (ep *endpoint) handle(src int, ib *inbox, l transport.Link, h *wire.Header, calls *callCache, wait bool) error {
	switch {
	case h.Flags&wire.FlagGoodbye != 0:
		err := fmt.Errorf("%w: rank %d", ErrPeerClosed, src)
		ib.close(err)
		ep.closeWild(src, err)
		return nil
	case h.Flags&wire.FlagAbort != 0:
		return ep.readFailure(src, l, h)
	}
	if h.Seq != 0 {
		if m := calls.get(ep, h.Comm).observe(src, h); m != nil {
			// Fail here at once, so that no call of this rank gets past
			// the mismatch, but tell the peers on another goroutine:
			// that writes to links whose readers may be doing the same,
			// and this reader must keep reading for them.
			if failure := ep.abortHere(m); failure != nil {
				go ep.announce(failure)
			}
		}
	}
	if h.Flags&wire.FlagProbe != 0 {
		return nil
	}
	return ep.receive(src, ib, l, h, wait)
}

// linkDown handles the end of an inbound link. After a goodbye, or while
// this rank closes, that is the normal end; otherwise the peer is lost.
func (ep *endpoint) linkDown(src int, ib *inbox, l transport.Link, err error) {
	l.Close()
	ib.mu.Lock()
	clean := errors.Is(ib.closed, ErrPeerClosed)
	ib.mu.Unlock()
	if clean || ep.closing.Load() {
		return
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("connection closed without goodbye (process exited or crashed)")
	}
	ep.log.Warn("peer lost", "peer", src, "err", err)
	ep.lose(src, err, false)
}

// heldReadMax bounds the payload that receive copies out of a link while
// it holds the inbox.
const heldReadMax = 4 << 10

// earlyYieldMin is the smallest payload for which receive, finding no
// receive posted for a message, lets the process's other goroutines run
// once before it reads the message into a buffer of its own, to be
// copied out again when the receive comes. A receiver that keeps a few
// receives posted ahead of a stream posts the next one as soon as it
// runs, but with a processor or two the reading goroutine can read on
// for as long as the socket holds bytes: two processes streaming 1 MiB
// messages over tcp, each at GOMAXPROCS=1, copied nearly every message
// twice, 13.6 % of the receiver's time (perf, 2026-11-28). One yield
// costs a fraction of a microsecond; the copy it saves, tens. It is a
// chance, not a promise: the scheduler may run the yielder again first
// (one turn in 61 it takes the global queue's goroutines first, for
// fairness), and the message is then buffered as before.
const earlyYieldMin = 64 << 10

// receive delivers the payload of the message whose header is h: straight
// into a posted receive when there is one, else into a pooled buffer.
// When the early messages have used up their budget it waits for room,
// or with wait false returns errStall at once, having read nothing.
func (ep *endpoint) receive(src int, ib *inbox, l transport.Link, h *wire.Header, wait bool) error {
	n := int(h.Length)
	yielded := n < earlyYieldMin
	for {
		ib.mu.Lock()
		if r := ep.takePosted(ib, src, h); r != nil {
			if !r.fits(h) {
				r.truncated(h)
				ib.mu.Unlock()
				continue
			}
			// A caller (wait false) takes only whole messages, so a small
			// payload waits in the link's buffer: copying it while holding
			// the inbox costs less than letting go and taking it back.
			// Any other read may wait for bytes, and must not hold up the
			// receives posted meanwhile.
			hold := !wait && n <= heldReadMax
			r.state = reqReceiving
			if r.stamped {
				r.arrived = Now()
			}
			if !hold {
				ib.mu.Unlock()
			}
			err, placeErr := r.read(l, h)
			if !hold {
				ib.mu.Lock()
			}
			switch {
			case err != nil:
				ib.repost(r, src)
			case placeErr != nil:
				r.complete(n, h, placeErr)
			default:
				r.complete(n, h, nil)
			}
			ib.mu.Unlock()
			return err
		}
		if !yielded {
			// Let the goroutine that is about to post its receive run
			// first (see earlyYieldMin), then look again.
			yielded = true
			ib.mu.Unlock()
			runtime.Gosched()
			continue
		}
		if ep.reserve(n) {
			m := getMessage(h)
			ib.unexpected.push(keyOf(h), m)
			ep.noteArrival(m)
			ib.mu.Unlock()
			err := l.ReadPayload(m.buf)
			ib.mu.Lock()
			ib.arrived(ep, src, m, err)
			ib.mu.Unlock()
			return err
		}
		// No room for another early message: wait until a receive is
		// posted for it or buffered messages are received.
		if !wait {
			ib.mu.Unlock()
			return errStall
		}
		if ib.stalled == nil {
			ib.stalled = make(chan struct{}, 1)
		}
		stalled := ib.stalled
		ib.mu.Unlock()
		select {
		case <-stalled:
		case <-ep.budgetWait(n):
		case <-ep.failed:
			return ep.failErr
		}
	}
}

// arrived finishes an early message whose payload read ended with err:
// it hands the message to a receive that claimed it meanwhile, or keeps
// it for one to come. The caller holds ib.mu.
func (ib *inbox) arrived(ep *endpoint, src int, m *message, err error) {
	if err != nil {
		ib.drop(m)
		if m.claim != nil {
			ib.repost(m.claim, src)
		}
		ep.releaseMessage(m)
		return
	}
	m.arrived = true
	if m.claim != nil {
		ep.deliverBuffered(m.claim, m)
	}
}

// repost puts back a receive whose payload read failed because its link
// broke, for the failure that follows (lose) to complete it with the error
// that names every rank lost; at once when that failure already stands.
// A wildcard receive fails at once: it would have to wait for messages
// of every source again, which the link's failure ends anyway.
// The caller holds ib.mu.
func (ib *inbox) repost(r *Request, src int) {
	if ib.closed != nil {
		r.complete(0, nil, ib.closed)
		return
	}
	if r.wild {
		r.complete(0, nil, fmt.Errorf("%w: the link from rank %d broke in the middle of a message", ErrPeerLost, src))
		return
	}
	r.state = reqPosted
	ib.posted.push(r.key, r)
}

// drop removes m from the early messages if it is still there.
func (ib *inbox) drop(m *message) { ib.unexpected.remove(keyOf(&m.hdr), m) }

// deliverBuffered copies a buffered message into r and frees the buffer.
// The caller holds the inbox's mutex.
func (ep *endpoint) deliverBuffered(r *Request, m *message) {
	r.deliver(&m.hdr, m.buf, nil)
	ep.releaseMessage(m)
}

func (ep *endpoint) releaseMessage(m *message) {
	ep.budgetMu.Lock()
	ep.budgetUsed -= messageCost(len(m.buf))
	if ep.budgetWake != nil {
		close(ep.budgetWake)
		ep.budgetWake = nil
	}
	ep.budgetMu.Unlock()
	putMessage(m)
}

// MessageOverhead is comm.MessageOverhead.
const MessageOverhead = 256

func messageCost(payload int) int { return payload + MessageOverhead }

// reserve takes the budget for an early message of n payload bytes. A
// message is always admitted when nothing is buffered, so a single
// message larger than the limit still gets through.
func (ep *endpoint) reserve(n int) bool {
	ep.budgetMu.Lock()
	defer ep.budgetMu.Unlock()
	cost := messageCost(n)
	if ep.budgetUsed > 0 && ep.budgetUsed+cost > ep.opts.unexpectedLimit {
		return false
	}
	ep.budgetUsed += cost
	return true
}

// budgetWait returns a channel that is ready once a message of n payload
// bytes may fit.
func (ep *endpoint) budgetWait(n int) <-chan struct{} {
	ep.budgetMu.Lock()
	defer ep.budgetMu.Unlock()
	if ep.budgetUsed == 0 || ep.budgetUsed+messageCost(n) <= ep.opts.unexpectedLimit {
		return closedChan
	}
	if ep.budgetWake == nil {
		ep.budgetWake = make(chan struct{})
	}
	return ep.budgetWake
}

// post starts a receive from world rank src.
func (ep *endpoint) post(c *Comm, src, peer int, key matchKey, buf []byte, stamped bool, place Placer) *Request {
	r := requestPool.Get().(*Request)
	r.ep, r.comm, r.src, r.peer, r.key, r.buf, r.stamped = ep, c, src, peer, key, buf, stamped
	r.place = place
	r.n, r.err = 0, nil
	if err := ep.err(); err != nil {
		r.state = reqDone
		r.err = err
		r.signalDone()
		return r
	}
	ep.inboxes[src].post(r)
	return r
}

// wait blocks until r completes, ctx ends, the communicator's timeout
// passes or the endpoint fails. A receive of an operation that is still
// waiting after ProbeDelay probes its source once. A receive whose payload
// is already being written into its buffer is seen through to the end
// first: the buffer belongs to the caller again only once nothing writes
// to it.
func (ep *endpoint) wait(ctx context.Context, r *Request) (int, error) {
	if r.completed() {
		return r.n, r.err
	}
	if !r.anySource {
		if p := ep.inboxes[r.src].polled.Load(); p != nil && ep.poll(r, p) {
			return r.n, r.err
		}
	}
	if !r.sleep() {
		return r.n, r.err
	}
	ep.parked.Add(1)
	defer ep.parked.Add(-1)
	ep.watchAll()
	collective := r.key.tag < 0 && !r.wild // AnyTag is negative too
	if collective {
		r.comm.calls.waiting(seqOf(r.key.tag), r.peer, StepOf(r.key.tag), time.Now())
	}
	// One timer serves both deadlines: first the probe's, then the rest of
	// the timeout.
	first, rest := ep.opts.timeout, time.Duration(0)
	probe := collective && (first <= 0 || first > ProbeDelay)
	if probe {
		if first > 0 {
			rest = first - ProbeDelay
		}
		first = ProbeDelay
	}
	var timer *time.Timer
	var fired <-chan time.Time
	if first > 0 {
		timer = getTimer(first)
		defer putTimer(timer)
		fired = timer.C
	}
	var cause error
	for cause == nil {
		select {
		case <-r.done:
			return r.n, r.err
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-ep.failed:
			cause = ep.failErr
		case <-fired:
			if !probe {
				cause = ep.silentFor(r)
				break
			}
			probe = false
			ep.probe(r)
			if rest > 0 {
				timer.Reset(rest)
			} else {
				fired = nil // no timeout
			}
		}
	}
	if ep.withdraw(r) {
		return 0, cause
	}
	grace := getTimer(deliveryGrace(ep.opts.timeout))
	defer putTimer(grace)
	select {
	case <-r.done:
	case <-grace.C:
		// The sender stopped in the middle of the payload. Cut the link so
		// the reader lets go of the buffer.
		ep.inboxes[r.src].mu.Lock()
		l := ep.inboxes[r.src].link
		ep.inboxes[r.src].mu.Unlock()
		if l != nil {
			l.Close()
		}
		<-r.done
	}
	return r.n, r.err
}

// withdraw removes r if it is still waiting for a message, and reports
// whether it did.
func (ep *endpoint) withdraw(r *Request) bool {
	if r.wild {
		return ep.withdrawWild(r)
	}
	return ep.inboxes[r.src].withdraw(r)
}

// silentFor is the error of the receive r that no message matched
// within the timeout. A named source is silent, which fails the
// endpoint; a receive from any source blames nobody, and fails alone.
func (ep *endpoint) silentFor(r *Request) error {
	if !r.anySource {
		return ep.silent(r.src, fmt.Sprintf("no message from rank %d for %v", r.src, ep.opts.timeout))
	}
	return anyTimeout("a receive", ep.opts.timeout)
}

// anyTimeout is the error of a wait for any rank (what) that the timeout
// ended: it names no rank, so it fails only the call.
func anyTimeout(what string, timeout time.Duration) error {
	return fmt.Errorf("%w: no message from any rank matched %s for %v", ErrTimeout, what, timeout)
}

func deliveryGrace(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return DefaultTimeout
	}
	return timeout
}

var timerPool sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timerPool.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	timerPool.Put(t)
}

// send sends one message to world rank dst.
func (ep *endpoint) send(ctx context.Context, dst int, h *wire.Header, payload, body []byte) error {
	if err := ep.err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	// A bad header is the caller's bug, not the peer's death: catch it
	// here, where it is still nobody else's problem.
	if err := h.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if n := len(payload) + len(body); h.Length != uint64(n) {
		return invalidf("header says %d payload bytes but the payload has %d", h.Length, n)
	}
	if dst == ep.rank {
		ep.sendSelf(h, payload, body)
		return nil
	}
	l, err := ep.linkTo(ctx, dst)
	if err != nil {
		return err
	}
	w := &ep.peers[dst].sends
	w.begin()
	if body == nil {
		err = l.WriteMessage(ctx, *h, payload)
	} else {
		err = l.WriteParts(ctx, *h, payload, body)
	}
	w.end()
	if err == nil {
		return nil
	}
	if w.stalled.Load() {
		<-ep.failed // cutStalled fails the communicator
		return ep.err()
	}
	if ep.closing.Load() {
		return ErrClosed
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		if errors.Is(err, net.ErrClosed) {
			// Cancelled halfway through a message: the link to dst cannot
			// carry anything else, so the job cannot go on either.
			ep.abort(fmt.Errorf("rank %d: send to rank %d cancelled mid-message: %w", ep.rank, dst, ctxErr))
		}
		return context.Cause(ctx)
	}
	if closed := ep.goodbye(dst); closed != nil {
		return closed
	}
	return ep.loseAndWait(dst, err)
}

// sendSelf delivers a message to this rank's own inbox: its payload is
// payload, then body.
func (ep *endpoint) sendSelf(h *wire.Header, payload, body []byte) {
	ib := &ep.inboxes[ep.rank]
	ib.mu.Lock()
	defer ib.mu.Unlock()
	for {
		r := ep.takePosted(ib, ep.rank, h)
		if r == nil {
			break
		}
		if r.fits(h) {
			r.deliver(h, payload, body)
			return
		}
		r.truncated(h)
	}
	m := getMessage(h)
	copy(m.buf[copy(m.buf, payload):], body)
	m.arrived = true
	ep.budgetMu.Lock()
	ep.budgetUsed += messageCost(len(m.buf))
	ep.budgetMu.Unlock()
	ib.unexpected.push(keyOf(h), m)
	ep.noteArrival(m)
}

// linkTo returns the pair's link to dst, dialing it on first use. A dial
// that dst declines (see adopt) waits for the link dst dials instead.
func (ep *endpoint) linkTo(ctx context.Context, dst int) (transport.Link, error) {
	p := &ep.peers[dst]
	if o := p.link.Load(); o != nil {
		return o.Link, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pair.Lock()
	o := p.link.Load()
	p.dialing = o == nil
	p.pair.Unlock()
	if o != nil {
		return o.Link, nil
	}
	if ep.opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, ep.opts.timeout, ErrTimeout)
		defer cancel()
	}
	l, err := ep.dial(ctx, dst)
	accepted := false
	if err == nil {
		accepted, err = ep.hello(ctx, dst, l)
	}
	p.pair.Lock()
	p.dialing = false
	closing := ep.closing.Load()
	if accepted && !closing {
		// dst accepted the link, so the pair had none: dst adopts none
		// while this rank dials, and declines a second one.
		p.publish(l)
	}
	p.pair.Unlock()
	switch {
	case err != nil:
		if l != nil {
			l.Close()
		}
		return nil, ep.dialFailed(ctx, dst, err)
	case accepted && closing:
		// Close has said its goodbyes on the links it found; dst adopted
		// this one and hears it here.
		ep.sayLast(l, goodbyeFrame, nil)
		return nil, ErrClosed
	case accepted:
		ep.readFrom(dst, l)
		return l, nil
	}
	l.Close()
	select {
	case <-p.linked:
		return p.link.Load().Link, nil
	case <-ep.failed:
		return nil, ep.err()
	case <-ctx.Done():
		return nil, ep.dialFailed(ctx, dst, fmt.Errorf("rank %d declined this rank's link for its own, which has not come", dst))
	}
}

// hello reads dst's answer to the link l this rank dialed (wire.Hello).
// A dst that closes answers with its goodbye, or not at all.
func (ep *endpoint) hello(ctx context.Context, dst int, l transport.Link) (bool, error) {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var h wire.Header
	err := l.ReadHeader(&h)
	switch {
	case err != nil && ctx.Err() != nil:
		return false, context.Cause(ctx)
	case err != nil:
		return false, err
	case h.Flags&wire.FlagGoodbye != 0:
		return false, fmt.Errorf("%w: rank %d", ErrPeerClosed, dst)
	case h.Flags&wire.FlagHello == 0:
		return false, fmt.Errorf("%w: rank %d's first frame on a new link is a %s frame, not its answer to the dial", wire.ErrBadHeader, dst, h.Kind)
	}
	return h.HelloAccepted(), nil
}

// dialFailed turns the failure to open a link to dst into the error of
// the call that needed it, one that wraps a sentinel: the failure of the
// endpoint when it failed meanwhile (a peer that aborts closes its
// listener, and dials to it fail before the abort arrives), a refusal as
// it is, the timeout blamed on dst, the caller's context, or else the loss
// of dst.
func (ep *endpoint) dialFailed(ctx context.Context, dst int, err error) error {
	switch {
	case ep.closing.Load():
		return ErrClosed
	case ep.err() != nil:
		return ep.err()
	case errors.Is(err, ErrRefused), errors.Is(err, ErrPeerClosed):
		return err
	case errors.Is(context.Cause(ctx), ErrTimeout):
		return ep.silent(dst, fmt.Sprintf("no link to rank %d within %v: %v", dst, ep.opts.timeout, err))
	case ctx.Err() != nil:
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return ep.loseAndWait(dst, err)
}

// Test hooks: called when the accept loop got a link, and when close has
// closed the inbound links; and the link a polled link is read through.
var (
	testHookAfterAccept   = func(*endpoint) {}
	testHookInboxesClosed = func(*endpoint) {}
	testHookPolled        = func(l transport.Poller) transport.Poller { return l }
)

// close says goodbye on every outbound link, hands the rendezvous back and
// waits for the endpoint's goroutines.
func (ep *endpoint) close() error {
	ep.closeOnce.Do(func() {
		// An abort of this rank's own goes out before anything closes.
		var own *AbortError
		if errors.As(ep.err(), &own) && own.Err != nil {
			ep.announce(own)
		}
		// A rank that closes after a failure passes the failure on instead
		// of a goodbye, so that its peers blame the rank that caused it
		// rather than the one that left.
		var last wire.Header
		var payload []byte
		if failure := failurePayload(ep.err()); failure != nil {
			last, payload = failureHeader(failure), failure
		} else {
			last = goodbyeFrame
		}
		ep.closing.Store(true)
		for i := range ep.peers {
			// Once closing is set, under pair, no link becomes the pair's:
			// adopt answers with a goodbye, and linkTo says it on a link
			// it dialed that is accepted now.
			p := &ep.peers[i]
			p.pair.Lock()
			o := p.link.Load()
			p.pair.Unlock()
			if o != nil {
				ep.sayLast(o, last, payload)
			}
		}

		if ep.release != nil {
			ctx, cancel := ep.withTimeout(context.Background())
			ep.closeErr = ep.release(ctx)
			cancel()
		}
		if err := ep.store.Close(); err != nil && ep.closeErr == nil {
			ep.closeErr = err
		}
		ep.links.close()
		ep.shm.close()
		for i := range ep.inboxes {
			ib := &ep.inboxes[i]
			ib.mu.Lock()
			if ib.link != nil {
				ib.link.Close()
			}
			ib.mu.Unlock()
		}
		testHookInboxesClosed(ep)
		ep.fail(ErrClosed)
		ep.wg.Wait()
		close(ep.signalsDone)
		if err := ep.timeline.Close(); err != nil {
			ep.log.Warn("timeline not written in full", "err", err)
		}
	})
	return ep.closeErr
}

// sayLast sends the last frame on l, a goodbye or a failure, and closes
// it.
func (ep *endpoint) sayLast(l transport.Link, h wire.Header, payload []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), abortGrace)
	defer cancel()
	_ = l.WriteMessage(ctx, h, payload)
	l.Close()
}

// withTimeout bounds ctx by the communicator's timeout. It allocates, so it
// serves the setup paths, not the per-message ones.
func (ep *endpoint) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if ep.opts.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, ep.opts.timeout, ErrTimeout)
}

// goodbyeFrame says that its sender closes its communicator cleanly.
var goodbyeFrame = wire.Header{Kind: wire.KindControl, Flags: wire.FlagGoodbye, DType: kernel.Uint8, Root: -1}

func addrKey(rank int) string { return "addr/" + strconv.Itoa(rank) }
func hostKey(rank int) string { return "host/" + strconv.Itoa(rank) }
