package rendezvous

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/gocoll/gocoll/internal/mtls"
	"github.com/gocoll/gocoll/internal/transport/auth"
)

// EventKind says what happened to a rank or to the store.
type EventKind int

// The kinds of event. They start at 1 so that the zero Event, which a
// receive from the closed Events channel yields, is not mistaken for a
// loss of rank 0.
const (
	// Lost: a rank's connection broke without a clean Close — the
	// process died, its host vanished, the network cut. Rank 0 is
	// reported lost by a client whose connection to the store broke.
	Lost EventKind = iota + 1
	// Aborted: a rank called Abort; Reason is its reason.
	Aborted
	// StoreGone: the store was closed cleanly. It is not a failure, but
	// the store answers no more calls. Rank is 0.
	StoreGone
)

func (k EventKind) String() string {
	switch k {
	case Lost:
		return "Lost"
	case Aborted:
		return "Aborted"
	case StoreGone:
		return "StoreGone"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is news about another rank or about the store.
type Event struct {
	Kind   EventKind
	Rank   int    // the rank the event is about, in the job
	Reason string // why, as the store or the rank put it
}

func (e Event) String() string {
	switch e.Kind {
	case Lost:
		return fmt.Sprintf("rank %d lost: %s", e.Rank, e.Reason)
	case Aborted:
		return fmt.Sprintf("rank %d aborted the job: %s", e.Rank, e.Reason)
	case StoreGone:
		return "rendezvous store closed: " + e.Reason
	}
	return fmt.Sprintf("%v about rank %d: %s", e.Kind, e.Rank, e.Reason)
}

// abortTimeout bounds Abort, which has no context: the store answers an
// abort at once unless it is gone, and a rank that aborts must not hang
// on its way out.
const abortTimeout = 5 * time.Second

// Client is one rank's handle on the store. Its methods may be called from
// several goroutines at once.
type Client struct {
	rank, size int
	jobID      uint64
	addr       string // the store's address; "" in-process
	laddr      net.Addr

	// events has room for one event per other rank and one final event,
	// which is all there can ever be (see pushEvent), so a send never
	// blocks and no event is dropped, whether or not anybody reads.
	events chan Event

	// Over TCP.
	wc         *wireConn
	readerDone chan struct{}
	period     atomic.Int64   // the heartbeat period in nanoseconds, 0 without
	beats      sync.WaitGroup // the heartbeat goroutine

	// In-process.
	srv  *Server
	sess *session

	closeOnce sync.Once

	mu       sync.Mutex
	nextID   uint64
	pending  map[uint64]chan result
	reported []bool // ranks an event was delivered about
	endErr   error  // why calls fail from now on; set once
}

type result struct {
	value []byte
	err   error
}

func newClient(rank, size int, jobID uint64, addr string) *Client {
	return &Client{
		rank:     rank,
		size:     size,
		jobID:    jobID,
		addr:     addr,
		events:   make(chan Event, size),
		pending:  make(map[uint64]chan result),
		reported: make([]bool, size),
	}
}

// Dial connects rank (of a job of size ranks) to the store at addr,
// proving that it knows secret. Until the store is up and admits the
// rank, it retries with a growing pause (from about 20 ms, doubling, at
// most about 1 s), so ranks may start before rank 0. It gives up when ctx
// ends, with an error naming addr, the number of attempts and the last
// cause. A refusal (a wrong secret, a rank already taken or outside the
// job, a different job size) is final and wraps ErrRefused.
//
// With WithTLS, the connection runs inside TLS; a certificate either end
// rejects is a refusal.
func Dial(ctx context.Context, addr string, rank, size int, secret []byte, opts ...DialOption) (*Client, error) {
	var o dialOptions
	for _, opt := range opts {
		opt(&o)
	}
	if size < 1 || size > MaxSize {
		return nil, fmt.Errorf("rendezvous: rank %d dialing %s: %w", rank, addr, invalidf("a job of %d ranks (allowed 1 to %d)", size, MaxSize))
	}
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("rendezvous: rank %d dialing %s: %w", rank, addr, invalidf("rank %d is outside the job of %d ranks", rank, size))
	}
	pause := 20 * time.Millisecond
	var last error
	for attempt := 1; ; attempt++ {
		c, err := dialOnce(ctx, addr, rank, size, secret, o)
		if err == nil {
			return c, nil
		}
		if errors.Is(err, ErrRefused) {
			return nil, fmt.Errorf("rendezvous: rank %d: the store at %s refused it: %w", rank, addr, err)
		}
		// An attempt cut short by ctx says nothing about the store; keep
		// the cause of the one before it.
		cut := ctxCut(ctx)
		if last == nil || !cut {
			last = err
		}
		if !cut {
			// Jitter keeps the ranks of a large job from knocking in
			// lockstep while rank 0 starts.
			t := time.NewTimer(pause/2 + rand.N(pause))
			select {
			case <-t.C:
				pause = min(2*pause, time.Second)
				continue
			case <-ctx.Done():
				t.Stop()
			}
		}
		<-ctx.Done()
		tries := fmt.Sprintf("%d attempts", attempt)
		if attempt == 1 {
			tries = "1 attempt"
		}
		return nil, fmt.Errorf("rendezvous: rank %d: no store at %s after %s: %w (last error: %w)",
			rank, addr, tries, ctxErr(ctx), last)
	}
}

// DialOption configures Dial.
type DialOption func(*dialOptions)

type dialOptions struct {
	tls *tls.Config
}

// WithTLS runs the connection to the store inside TLS with cfg, as a
// client; the store's listener must be a TLS one (tls.NewListener).
func WithTLS(cfg *tls.Config) DialOption {
	return func(o *dialOptions) { o.tls = cfg }
}

// ctxCut reports whether ctx has ended or is about to: a dial fails with
// "i/o timeout" at ctx's deadline a moment before ctx itself reports it.
func ctxCut(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// dialOnce makes one attempt: connect, authenticate, say hello.
func dialOnce(ctx context.Context, addr string, rank, size int, secret []byte, o dialOptions) (*Client, error) {
	d := net.Dialer{KeepAliveConfig: keepAlive}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if o.tls != nil {
		conn = tls.Client(conn, o.tls)
	}
	// The handshake runs under its own deadline; ctx ending moves the
	// deadline into the past, which unblocks it at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	c, err := handshakeClient(conn, addr, rank, size, secret)
	if !stop() {
		conn.Close()
		return nil, ctxErr(ctx)
	}
	if err == nil {
		err = conn.SetDeadline(time.Time{})
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	go c.wc.writeLoop()
	go c.readLoop()
	return c, nil
}

func handshakeClient(conn net.Conn, addr string, rank, size int, secret []byte) (*Client, error) {
	if err := conn.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		return nil, err
	}
	if tc, ok := conn.(*tls.Conn); ok {
		// The deadline bounds it; ctx ending moves the deadline.
		if err := mtls.Handshake(context.Background(), tc); err != nil {
			return nil, err
		}
	}
	p := auth.Params{Secret: secret, Service: auth.ServiceStore, Rank: rank}
	_, jobID, err := auth.Client(conn, p, 0)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(encodeRequest(request{typ: tHello, version: protoVersion, size: size})); err != nil {
		return nil, fmt.Errorf("sending hello: %w", err)
	}
	br := bufio.NewReader(conn)
	t, body, err := readFrame(br, false)
	var rep reply
	if err == nil {
		rep, err = parseReply(t, body)
	}
	if err != nil {
		return nil, fmt.Errorf("waiting for the store's welcome: %w", err)
	}
	switch {
	case rep.typ == tRefuse:
		return nil, refusedf("%s", printable(rep.msg))
	case rep.typ != tWelcome:
		return nil, protocolf("store answered hello with a frame of type %#x", uint8(rep.typ))
	case rep.version != protoVersion:
		return nil, protocolf("store speaks protocol version %d, this client %d", rep.version, protoVersion)
	}
	c := newClient(rank, size, jobID, addr)
	c.laddr = conn.LocalAddr()
	c.wc = newWireConn(conn, br)
	c.readerDone = make(chan struct{})
	return c, nil
}

// Rank is the client's rank in the job.
func (c *Client) Rank() int { return c.rank }

// JobID is the job's id, learnt from the store.
func (c *Client) JobID() uint64 { return c.jobID }

// LocalAddr is the local address of the connection to the store, nil for
// an in-process client. Its IP is that of the interface that routes to
// rank 0's host, which is the one the other ranks can most likely reach.
func (c *Client) LocalAddr() net.Addr { return c.laddr }

// Events delivers news about other ranks (Lost, Aborted) and a final
// event when the connection to the store ends: StoreGone after the
// store's clean Close, Lost with Rank 0 when it breaks. There is at most
// one event per rank. The channel is buffered for all events there can be,
// so none is ever dropped, and it is closed after the final event or after
// Close.
func (c *Client) Events() <-chan Event { return c.events }

// Set stores value under key and wakes every Get waiting for it. A later
// Set of the same key replaces the value. Set does not retain value. It
// returns once the store has the value; if ctx ends first, the value may
// or may not be stored.
func (c *Client) Set(ctx context.Context, key string, value []byte) error {
	err := checkKey(key)
	if err == nil && len(value) > MaxValue {
		err = invalidf("a %d-byte value (at most %d)", len(value), MaxValue)
	}
	if err == nil {
		// In-process, the store keeps this very slice.
		v := append(make([]byte, 0, len(value)), value...)
		_, err = c.roundTrip(ctx, request{typ: tSet, key: key, value: v})
	}
	if err != nil {
		return fmt.Errorf("rendezvous: rank %d: set %q: %w", c.rank, key, err)
	}
	return nil
}

// Get returns the value of key, waiting until some rank sets it, ctx ends
// or the store goes away. The returned slice is the caller's.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	err := checkKey(key)
	var v []byte
	if err == nil {
		v, err = c.roundTrip(ctx, request{typ: tGet, key: key})
	}
	if err != nil {
		return nil, fmt.Errorf("rendezvous: rank %d: get %q: %w", c.rank, key, err)
	}
	return v, nil
}

// printable makes text from the store safe to put in an error message.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, strings.ToValidUTF8(s, "?"))
}

func checkKey(key string) error {
	if len(key) < 1 || len(key) > MaxKey {
		return invalidf("a %d-byte key (allowed 1 to %d)", len(key), MaxKey)
	}
	return nil
}

// Abort tells every other rank, through the store, that this one gives up
// the job for reason (cut to MaxReason bytes): each receives an Aborted
// event. It returns once the store has passed it on, or fails after a few
// seconds when the store does not answer. The client stays usable.
func (c *Client) Abort(reason string) error {
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	if _, err := c.roundTrip(ctx, request{typ: tAbort, value: []byte(clip(reason))}); err != nil {
		return fmt.Errorf("rendezvous: rank %d: abort: %w", c.rank, err)
	}
	return nil
}

// ReportLost tells every other rank, through the store, that rank is
// lost for reason (cut to MaxReason bytes), as its links to rank told
// this one: each receives a Lost event, unless the store already told
// them of rank, or rank left. A rank that fails on a loss its links found
// reports it before it leaves the store, so the ranks without a link to
// the lost one hear of it from the store and do not take the leaving rank
// for lost. It returns once the store has passed the news on.
func (c *Client) ReportLost(ctx context.Context, rank int, reason string) error {
	if rank < 0 || rank >= c.size || rank == c.rank {
		return fmt.Errorf("rendezvous: rank %d: reporting rank %d of a job of %d lost: %w", c.rank, rank, c.size, ErrInvalid)
	}
	if _, err := c.roundTrip(ctx, request{typ: tLose, rank: rank, value: []byte(clip(reason))}); err != nil {
		return fmt.Errorf("rendezvous: rank %d: reporting rank %d lost: %w", c.rank, rank, err)
	}
	return nil
}

// roundTrip sends req under a fresh id and waits for its answer.
func (c *Client) roundTrip(ctx context.Context, req request) ([]byte, error) {
	if ctx.Err() != nil {
		return nil, ctxErr(ctx)
	}
	ch := make(chan result, 1)
	c.mu.Lock()
	if c.endErr != nil {
		err := c.endErr
		c.mu.Unlock()
		return nil, err
	}
	c.nextID++
	req.id = c.nextID
	c.pending[req.id] = ch
	c.mu.Unlock()

	c.submit(req)
	select {
	case r := <-ch:
		return r.value, r.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	_, waiting := c.pending[req.id]
	delete(c.pending, req.id)
	c.mu.Unlock()
	if !waiting {
		// The answer won the race with ctx; it is in ch.
		r := <-ch
		return r.value, r.err
	}
	if req.typ == tGet {
		// Free the store's waiter; an answer already on its way is
		// dropped by deliver.
		c.submit(request{typ: tCancel, id: req.id})
	}
	return nil, ctxErr(ctx)
}

// submit hands a request to the store: queued on the connection, or
// carried out at once in-process.
func (c *Client) submit(req request) {
	if c.srv != nil {
		// An in-process request cannot break the protocol.
		_ = c.srv.request(c.sess, req)
		return
	}
	c.wc.send(encodeRequest(req))
}

// deliver completes the call with id. Answers to calls given up are
// dropped.
func (c *Client) deliver(id uint64, r result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.pending[id]; ok {
		delete(c.pending, id)
		ch <- r
	}
}

// pushEvent delivers news about another rank, once per rank. That bound
// is what lets events (of capacity size) never block: at most size-1
// ranks to hear about, plus the final event of end.
func (c *Client) pushEvent(ev Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endErr != nil || ev.Rank < 0 || ev.Rank >= c.size || ev.Rank == c.rank || c.reported[ev.Rank] {
		return
	}
	c.reported[ev.Rank] = true
	c.events <- ev
}

// storeEnded records that the connection to the store ended, by a clean
// shutdown (StoreGone) or a break (Lost, with its cause).
func (c *Client) storeEnded(kind EventKind, reason string, cause error) {
	where := "in this process"
	if c.addr != "" {
		where = "at " + c.addr
	}
	switch kind {
	case StoreGone:
		c.end(&Event{Kind: StoreGone, Rank: 0, Reason: reason},
			fmt.Errorf("%w: rank 0 shut down the store %s", ErrStoreGone, where))
	default:
		c.end(&Event{Kind: Lost, Rank: 0, Reason: fmt.Sprintf("connection to rank 0 (the rendezvous store %s) lost: %v", where, cause)},
			fmt.Errorf("%w: rank 0 (the store %s): %w", ErrLost, where, cause))
	}
}

// end makes every pending and later call fail with err, delivers the
// final event ev (if any) and closes the events channel. Only the first
// call counts.
func (c *Client) end(ev *Event, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endErr != nil {
		return
	}
	c.endErr = err
	for id, ch := range c.pending {
		delete(c.pending, id)
		ch <- result{err: err}
	}
	if ev != nil {
		c.events <- *ev
	}
	close(c.events)
}

// readLoop reads the store's frames until the connection ends. A frame
// that breaks the protocol is treated like a broken connection: nothing
// after it can be trusted.
func (c *Client) readLoop() {
	defer close(c.readerDone)
	for {
		t, body, err := readFrame(c.wc.r, false)
		var rep reply
		if err == nil {
			c.extendDeadline()
			rep, err = parseReply(t, body)
		} else if p := time.Duration(c.period.Load()); p > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			err = silence("rank 0", p)
		}
		if err == nil {
			switch rep.typ {
			case tPulse:
			case tOK, tValue:
				c.deliver(rep.id, result{value: rep.value})
			case tEvent:
				if rep.ev.Rank >= c.size || rep.ev.Rank == c.rank {
					err = protocolf("event about rank %d sent to rank %d of a job of %d ranks", rep.ev.Rank, c.rank, c.size)
				} else {
					c.pushEvent(rep.ev)
				}
			case tGone:
				c.storeEnded(StoreGone, rep.msg, nil)
				c.wc.kill()
				return
			default:
				err = protocolf("store sent a frame of type %#x after welcome", uint8(rep.typ))
			}
		}
		if err != nil {
			c.storeEnded(Lost, "", err)
			c.wc.kill()
			return
		}
	}
}

// Close leaves the job cleanly: nobody is told of a loss. Pending calls
// fail with ErrClosed and the events channel is closed. Close gives the
// store a moment to take note, then closes the connection and waits for
// the client's goroutines. It is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.end(nil, fmt.Errorf("rank %d: %w", c.rank, ErrClosed))
		if c.srv != nil {
			_ = c.srv.request(c.sess, request{typ: tBye})
			return
		}
		if c.wc.send(encodeRequest(request{typ: tBye})) {
			c.wc.finish()
			// The store answers bye by closing its side; reading to
			// that end keeps the bye from being lost to a reset.
			t := time.NewTimer(closeGrace)
			select {
			case <-c.readerDone:
			case <-t.C:
			}
			t.Stop()
		}
		c.wc.kill()
		<-c.readerDone
		<-c.wc.wdone
		c.beats.Wait()
	})
	return nil
}
