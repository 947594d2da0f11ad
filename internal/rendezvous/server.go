package rendezvous

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gocoll/gocoll/internal/handshakes"
	"github.com/gocoll/gocoll/internal/ratelog"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/auth"
)

// Server is the store of one job. Rank 0 runs it; every rank, rank 0
// included, talks to it through a Client.
type Server struct {
	size   int
	secret []byte
	jobID  uint64
	log    *slog.Logger

	done    chan struct{} // closed by Close
	allLeft chan struct{} // closed when every rank but 0 has left or been lost

	mu         sync.Mutex
	closed     bool
	kv         map[string][]byte
	waiters    map[string][]waiter
	members    []member
	nDone      int // ranks other than 0 that left or were lost
	listeners  map[net.Listener]struct{}
	conns      map[net.Conn]bool // every accepted connection still open: true once it is a member's
	handshakes handshakes.Set    // the connections in their handshake
	dropped    int               // connections cut because too many were in their handshake
	refusals   *ratelog.Logger
	wg         sync.WaitGroup // Serve loops and connection goroutines
}

type memberState uint8

const (
	absent memberState = iota // never joined
	joined
	left // closed its client cleanly
	gone // its connection broke (or it aborted and then went away)
)

type member struct {
	state memberState
	sess  *session
	// ev is what the other ranks were told about this rank (a loss or an
	// abort), kept so that a rank that joins later learns it too.
	ev *Event
}

// session is one joined client as the server sees it.
type session struct {
	rank int
	peer peer
	gets map[uint64]string // pending gets by request id, to drop their waiters
	beat beatState
}

// waiter is a get that waits for its key.
type waiter struct {
	s  *session
	id uint64
}

// peer delivers the server's answers to one client. The methods never
// block: they run under the server's lock.
type peer interface {
	ok(id uint64)
	value(id uint64, v []byte) // v is the stored value: read-only
	event(ev Event)
	pulse()             // answers a beat
	gone(reason string) // the store shuts down; the last thing sent
	cut()               // the client is lost: hang up
}

// NewServer makes the store of a job of size ranks, under a fresh random
// job id. Clients must prove that they know secret. A nil logger means
// slog.Default().
func NewServer(size int, secret []byte, logger *slog.Logger) (*Server, error) {
	if size < 1 || size > MaxSize {
		return nil, invalidf("a job of %d ranks (allowed 1 to %d)", size, MaxSize)
	}
	if logger == nil {
		logger = slog.Default()
	}
	var id uint64
	for id == 0 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("rendezvous: choosing a job id: %w", err)
		}
		id = binary.LittleEndian.Uint64(b[:])
	}
	s := &Server{
		size:      size,
		secret:    bytes.Clone(secret),
		jobID:     id,
		log:       logger,
		refusals:  ratelog.New(logger),
		done:      make(chan struct{}),
		allLeft:   make(chan struct{}),
		kv:        make(map[string][]byte),
		waiters:   make(map[string][]waiter),
		members:   make([]member, size),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[net.Conn]bool),
	}
	if size == 1 {
		close(s.allLeft)
	}
	return s, nil
}

// JobID is the id that binds every connection of the job to this store.
func (s *Server) JobID() uint64 { return s.jobID }

// Serve accepts clients on l until Close, and then returns nil. It closes
// l. A connection that fails the handshake is logged and dropped; the
// server keeps serving the others. Serve may run on several listeners at
// once.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return nil
	}
	s.listeners[l] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()

	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			select {
			case <-s.done:
				return nil
			default:
			}
			// Like net/http: a temporary failure (out of file
			// descriptors) is waited out rather than ending the
			// store of a running job.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("rendezvous: accept failed; retrying", "err", err, "delay", delay)
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-s.done:
					t.Stop()
					return nil
				}
				continue
			}
			return fmt.Errorf("rendezvous: serving on %s: %w", l.Addr(), err)
		}
		delay = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		if s.handshakes.Len() >= s.maxHandshakes() {
			cut := s.handshakes.CutOldest() // serveConn removes it from conns
			s.dropped++
			s.refusals.Warn("rendezvous: too many handshakes in progress; cut the oldest",
				"remote", cut.RemoteAddr().String(), "limit", s.maxHandshakes())
		}
		s.conns[c] = false
		s.handshakes.Add(c)
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// maxHandshakes bounds the connections in their handshake at once: the
// links' transport.MaxHandshakes, or the job size when that is larger,
// since every rank may knock at once.
func (s *Server) maxHandshakes() int { return max(transport.MaxHandshakes, s.size) }

// Dropped is the number of connections cut because too many were in
// their handshake at once.
func (s *Server) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// serveConn runs the handshake of one connection and then reads its
// requests until it ends.
func (s *Server) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.handshakes.Remove(c)
		s.mu.Unlock()
		c.Close()
	}()
	remote := c.RemoteAddr().String()
	sess, wc, err := s.handshake(c)
	if err != nil {
		select {
		case <-s.done:
			s.log.Debug("rendezvous: handshake cut by Close", "remote", remote, "err", err)
		default:
			s.refusals.Warn("rendezvous: refused a client", "remote", remote, "err", err)
		}
		return
	}
	go wc.writeLoop()
	err = s.readRequests(sess, wc)
	silent := errors.Is(err, os.ErrDeadlineExceeded)
	if silent {
		err = silence(fmt.Sprintf("rank %d", sess.rank), time.Duration(sess.beat.period.Load()))
	}
	// A member whose connection ends without bye is lost, unless the
	// store itself is closing: then the client hung up because it was
	// told to.
	s.mu.Lock()
	lost := !s.closed && s.members[sess.rank].sess == sess && s.members[sess.rank].state == joined
	if lost {
		s.lostLocked(sess, fmt.Sprintf("connection to rank %d lost: %v", sess.rank, err))
		if silent {
			s.silentCompanionsLocked(sess)
		}
	}
	s.mu.Unlock()
	switch {
	case errors.Is(err, ErrProtocol):
		s.log.Error("rendezvous: closing a client that broke the protocol", "rank", sess.rank, "remote", remote, "err", err)
	case lost:
		s.log.Warn("rendezvous: lost a rank", "rank", sess.rank, "remote", remote, "err", err)
	}
	if lost || errors.Is(err, ErrProtocol) {
		wc.kill()
	}
	wc.drain()
}

// handshake authenticates a new connection and admits its rank. On
// success the client is a member and wc has its welcome queued.
func (s *Server) handshake(c net.Conn) (*session, *wireConn, error) {
	setKeepAlive(c)
	if err := c.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		return nil, nil, err
	}
	p := auth.Params{Secret: s.secret, JobID: s.jobID, Service: auth.ServiceStore, Rank: 0}
	rank, err := auth.Server(c, p, s.admit)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReader(c)
	t, body, err := readFrame(br, true)
	if err == nil && t != tHello {
		err = protocolf("rank %d sent a frame of type %#x before hello", rank, uint8(t))
	}
	var hello request
	if err == nil {
		hello, err = parseRequest(t, body)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("rank %d: reading hello: %w", rank, err)
	}
	switch {
	case hello.version != protoVersion:
		err = refusedf("rank %d speaks rendezvous protocol version %d, the store speaks %d", rank, hello.version, protoVersion)
	case hello.size != s.size:
		err = refusedf("rank %d says the job has %d ranks, the store has %d", rank, hello.size, s.size)
	}
	if err != nil {
		s.refuse(c, err)
		return nil, nil, err
	}

	wc := newWireConn(c, br)
	wc.send(welcomeFrame())
	sess := &session{rank: rank, peer: remotePeer{wc}, gets: make(map[uint64]string)}
	s.mu.Lock()
	if s.closed {
		err = ErrClosed
	} else if err = s.joinLocked(sess); err == nil {
		s.conns[c] = true
		s.handshakes.Remove(c)
	}
	s.mu.Unlock()
	if err != nil {
		s.refuse(c, err)
		return nil, nil, err
	}
	// From here on, the keepalive notices a dead client; a deadline would
	// cut a healthy one that merely waits for a slow rank.
	if err := c.SetDeadline(time.Time{}); err != nil {
		s.mu.Lock()
		s.lostLocked(sess, fmt.Sprintf("connection to rank %d lost: %v", rank, err))
		s.mu.Unlock()
		return nil, nil, err
	}
	return sess, wc, nil
}

// refuse tells a client that passed auth why it is not admitted. The
// deadline of the handshake still bounds the write.
func (s *Server) refuse(c net.Conn, why error) {
	msg := strings.TrimPrefix(why.Error(), ErrRefused.Error()+": ")
	_, _ = c.Write(textFrame(tRefuse, msg))
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// admit is the auth hook: it refuses a rank the store cannot take, so that
// the client learns why inside the handshake. joinLocked checks again,
// because two connections may claim one rank at once.
func (s *Server) admit(rank int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitLocked(rank)
}

func (s *Server) admitLocked(rank int) error {
	if rank < 0 || rank >= s.size {
		return fmt.Errorf("rank %d is outside the job of %d ranks", rank, s.size)
	}
	switch s.members[rank].state {
	case joined:
		return fmt.Errorf("rank %d already joined", rank)
	case left:
		return fmt.Errorf("rank %d already joined and left", rank)
	case gone:
		return fmt.Errorf("rank %d already joined and was lost", rank)
	}
	return nil
}

// joinLocked makes sess the member for its rank and tells it what
// happened to the other ranks so far.
func (s *Server) joinLocked(sess *session) error {
	if err := s.admitLocked(sess.rank); err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	m := &s.members[sess.rank]
	m.state, m.sess = joined, sess
	for r := range s.members {
		if ev := s.members[r].ev; ev != nil && r != sess.rank {
			sess.peer.event(*ev)
		}
	}
	s.log.Debug("rendezvous: rank joined", "rank", sess.rank)
	return nil
}

// readRequests handles the requests of one client until its connection
// ends or it says bye.
func (s *Server) readRequests(sess *session, wc *wireConn) error {
	for {
		t, body, err := readFrame(wc.r, true)
		var req request
		if err == nil {
			if p := sess.beat.heardNow(time.Now()); p > 0 {
				err = wc.c.SetReadDeadline(time.Now().Add(p))
			}
		}
		if err == nil {
			req, err = parseRequest(t, body)
		}
		if err == nil && req.typ == tBeat && sess.beat.period.Load() == 0 {
			// The first beat: from now on the connection may stay
			// silent for a period at most.
			sess.beat.period.Store(int64(req.period))
			err = wc.c.SetReadDeadline(time.Now().Add(req.period))
		}
		if err == nil {
			err = s.request(sess, req)
		}
		if err != nil {
			return err
		}
		if req.typ == tBye {
			wc.finish()
			return nil
		}
	}
}

// request carries out one request of a member. A request of a session that
// is no longer the member of its rank (it left, or the store closed) is
// ignored: its client has failed the call already.
func (s *Server) request(sess *session, req request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &s.members[sess.rank]
	if s.closed || m.sess != sess || m.state != joined {
		return nil
	}
	switch req.typ {
	case tSet:
		s.kv[req.key] = req.value
		for _, w := range s.waiters[req.key] {
			delete(w.s.gets, w.id)
			w.s.peer.value(w.id, req.value)
		}
		delete(s.waiters, req.key)
		sess.peer.ok(req.id)
	case tGet:
		if _, dup := sess.gets[req.id]; dup {
			return protocolf("rank %d reused request id %d", sess.rank, req.id)
		}
		if v, ok := s.kv[req.key]; ok {
			sess.peer.value(req.id, v)
			return nil
		}
		sess.gets[req.id] = req.key
		s.waiters[req.key] = append(s.waiters[req.key], waiter{sess, req.id})
	case tCancel:
		if key, ok := sess.gets[req.id]; ok {
			delete(sess.gets, req.id)
			s.dropWaiter(key, sess, req.id)
		}
	case tAbort:
		if m.ev == nil {
			ev := Event{Kind: Aborted, Rank: sess.rank, Reason: clip(string(req.value))}
			m.ev = &ev
			s.log.Warn("rendezvous: rank aborted the job", "rank", sess.rank, "reason", ev.Reason)
			s.broadcastLocked(ev)
		}
		sess.peer.ok(req.id)
	case tLose:
		if req.rank >= s.size || req.rank == sess.rank {
			return protocolf("rank %d reported rank %d of a job of %d lost", sess.rank, req.rank, s.size)
		}
		if m := &s.members[req.rank]; m.state == joined && m.ev == nil {
			ev := Event{Kind: Lost, Rank: req.rank, Reason: clip(string(req.value))}
			m.ev = &ev
			s.log.Warn("rendezvous: rank reported another lost", "rank", sess.rank, "lost", req.rank, "reason", ev.Reason)
			s.broadcastLocked(ev)
		}
		sess.peer.ok(req.id)
	case tBye:
		s.leaveLocked(sess, left)
		s.log.Debug("rendezvous: rank left", "rank", sess.rank)
	case tBeat:
		sess.peer.pulse()
	default:
		return protocolf("rank %d sent a frame of type %#x after hello", sess.rank, uint8(req.typ))
	}
	return nil
}

func (s *Server) dropWaiter(key string, sess *session, id uint64) {
	ws := slices.DeleteFunc(s.waiters[key], func(w waiter) bool { return w.s == sess && w.id == id })
	if len(ws) == 0 {
		delete(s.waiters, key)
	} else {
		s.waiters[key] = ws
	}
}

// lostLocked records that a member's connection broke and tells everyone
// else, unless the rank aborted first: the abort is what they need to
// know, and its disconnect is its consequence.
func (s *Server) lostLocked(sess *session, reason string) {
	m := &s.members[sess.rank]
	if m.ev == nil {
		ev := Event{Kind: Lost, Rank: sess.rank, Reason: clip(reason)}
		m.ev = &ev
		s.broadcastLocked(ev)
	}
	s.leaveLocked(sess, gone)
}

// silentCompanionsLocked reports lost, with sess, every other member
// that beats and has been silent for half its period: the ranks of a
// frozen or cut-off host stop beating together, but their deadlines
// expire up to a beat apart, and the survivors must hear of them all at
// once to name them all (see comm.LossSettle).
func (s *Server) silentCompanionsLocked(sess *session) {
	now := time.Now()
	for r := range s.members {
		m := &s.members[r]
		if r == sess.rank || m.state != joined {
			continue
		}
		p := time.Duration(m.sess.beat.period.Load())
		if m.sess.beat.silentSince(now.Add(-p / 2)) {
			err := silence(fmt.Sprintf("rank %d", r), p)
			s.log.Warn("rendezvous: lost a rank", "rank", r, "err", err)
			s.lostLocked(m.sess, fmt.Sprintf("connection to rank %d lost: %v", r, err))
			m.sess.peer.cut()
		}
	}
}

// leaveLocked ends a membership: its waiting gets are dropped and, once
// every rank but 0 is done, WaitLeft returns.
func (s *Server) leaveLocked(sess *session, st memberState) {
	m := &s.members[sess.rank]
	m.state = st
	for id, key := range sess.gets {
		s.dropWaiter(key, sess, id)
	}
	clear(sess.gets)
	if sess.rank != 0 {
		if s.nDone++; s.nDone == s.size-1 {
			close(s.allLeft)
		}
	}
}

// broadcastLocked sends ev to every member except the rank it is about.
func (s *Server) broadcastLocked(ev Event) {
	for r := range s.members {
		if m := &s.members[r]; r != ev.Rank && m.state == joined {
			m.sess.peer.event(ev)
		}
	}
}

// Join returns an in-process client for rank: no socket and no handshake,
// but the same calls, events and refusals as a client from Dial.
func (s *Server) Join(rank int) (*Client, error) {
	c := newClient(rank, s.size, s.jobID, "")
	sess := &session{rank: rank, peer: localPeer{c}, gets: make(map[uint64]string)}
	c.srv, c.sess = s, sess
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("rendezvous: joining rank %d: %w", rank, ErrClosed)
	}
	if err := s.joinLocked(sess); err != nil {
		return nil, fmt.Errorf("rendezvous: joining rank %d: %w", rank, err)
	}
	return c, nil
}

// WaitLeft returns nil once every rank other than 0 has left (closed its
// client) or been lost. Rank 0 calls it before Close so the store outlives
// the ranks that still read from it. It returns an error naming the ranks
// still there when ctx ends, and one wrapping ErrClosed when the server is
// closed first.
func (s *Server) WaitLeft(ctx context.Context) error {
	select {
	case <-s.allLeft:
		return nil
	default:
	}
	select {
	case <-s.allLeft:
		return nil
	case <-s.done:
		select {
		case <-s.allLeft:
			return nil
		default:
		}
		return fmt.Errorf("rendezvous: waiting for ranks to leave: %w", ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("rendezvous: waiting for ranks to leave: %s: %w", s.stillThere(), ctxErr(ctx))
	}
}

// stillThere describes the ranks WaitLeft still waits for.
func (s *Server) stillThere() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var in, never []int
	for r := 1; r < s.size; r++ {
		switch s.members[r].state {
		case joined:
			in = append(in, r)
		case absent:
			never = append(never, r)
		}
	}
	var parts []string
	if len(in) > 0 {
		parts = append(parts, fmt.Sprintf("%s still connected", rankList(in)))
	}
	if len(never) > 0 {
		parts = append(parts, fmt.Sprintf("%s never joined", rankList(never)))
	}
	return strings.Join(parts, ", ")
}

// rankList names ranks, shortening long lists: a job of thousands of
// ranks must not produce an error of thousands of numbers.
func rankList(rs []int) string {
	const show = 16
	var b strings.Builder
	if len(rs) == 1 {
		b.WriteString("rank ")
	} else {
		b.WriteString("ranks ")
	}
	for i, r := range rs {
		if i == show {
			fmt.Fprintf(&b, " and %d more", len(rs)-show)
			break
		}
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%d", r)
	}
	return b.String()
}

// Close shuts the store down cleanly: every member is told (an event of
// kind StoreGone, which is not a failure), its pending calls fail with
// ErrStoreGone, and all connections and listeners close. Close waits for
// the server's goroutines, giving clients a moment to read the news.
// It is idempotent.
func (s *Server) Close() error { return s.CloseWithin(closeGrace) }

// CloseWithin is Close giving clients at most grace to read the news and
// hang up before their connections are cut; a client that does not read
// (a stopped process) holds it no longer than that.
func (s *Server) CloseWithin(grace time.Duration) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	close(s.done)
	for l := range s.listeners {
		l.Close()
	}
	for r := range s.members {
		if m := &s.members[r]; m.state == joined {
			m.sess.peer.gone("the rendezvous store was closed")
		}
	}
	// A connection still in its handshake has nothing to be told.
	s.handshakes.CloseAll()
	s.mu.Unlock()

	// Sessions end as their clients hang up after the last frame; clients
	// that do not hang up are cut after the grace period.
	waited := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(waited)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-waited:
		return nil
	case <-t.C:
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	<-waited
	return nil
}

// remotePeer sends the server's answers over a client's connection.
type remotePeer struct{ wc *wireConn }

func (p remotePeer) ok(id uint64) { p.wc.send(okFrame(id)) }

func (p remotePeer) value(id uint64, v []byte) { p.wc.send(valueHeader(id, len(v)), v) }

func (p remotePeer) event(ev Event) { p.wc.send(eventFrame(ev)) }

func (p remotePeer) pulse() { p.wc.send(pulseFrame()) }

func (p remotePeer) cut() { p.wc.kill() }

func (p remotePeer) gone(reason string) {
	p.wc.send(textFrame(tGone, reason))
	p.wc.finish()
}

// localPeer hands the server's answers straight to an in-process client.
type localPeer struct{ c *Client }

func (p localPeer) ok(id uint64) { p.c.deliver(id, result{}) }

// value copies v: two in-process clients must not share the stored slice.
func (p localPeer) value(id uint64, v []byte) { p.c.deliver(id, result{value: bytes.Clone(v)}) }

func (p localPeer) event(ev Event) { p.c.pushEvent(ev) }

func (p localPeer) gone(reason string) { p.c.storeEnded(StoreGone, reason, nil) }

// An in-process client never beats, and is never cut off.
func (localPeer) pulse() {}
func (localPeer) cut()   {}
