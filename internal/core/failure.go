package core

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// A failure frame (a frame with wire.FlagAbort) tells a peer that the job
// cannot go on, and whom to blame: the rank that aborted, or the ranks
// that were lost. Its payload is
//
//	[0]   failAborted or failLost
//	[1:5] the culprit's world rank, little-endian
//	[5:]  the reason, UTF-8
//
// or, for failLost with more than one rank lost,
//
//	[0]       failLostMany
//	[1:5]     n, the number of ranks lost
//	[5:5+4n]  their world ranks, the first found lost first
//	[5+4n:]   the reason, UTF-8
//
// A rank sends one when it aborts, and instead of a goodbye when it closes
// after a failure, so that the error every rank reports names the rank that
// caused it, whichever news arrives first.
const (
	failAborted  = 1
	failLost     = 2
	failLostMany = 3

	failureHead    = 5
	maxAbortReason = 1024
	// abortGrace bounds how long Abort and Close spend telling peers.
	abortGrace = 2 * time.Second
)

// failurePayload encodes err for a failure frame, or returns nil when err
// blames no rank.
func failurePayload(err error) []byte {
	var kind byte
	var rank int
	var reason string
	var pe *PeerError
	var ae *AbortError
	switch {
	case errors.As(err, &ae):
		kind, rank, reason = failAborted, ae.Rank, ae.Reason
	case errors.As(err, &pe) && len(pe.Ranks) > 1:
		return lostManyPayload(pe)
	case errors.As(err, &pe):
		kind, rank, reason = failLost, pe.Rank, pe.Err.Error()
	default:
		return nil
	}
	if len(reason) > maxAbortReason {
		reason = reason[:maxAbortReason]
	}
	b := make([]byte, failureHead, failureHead+len(reason))
	b[0] = kind
	binary.LittleEndian.PutUint32(b[1:], uint32(rank))
	return append(b, reason...)
}

func lostManyPayload(pe *PeerError) []byte {
	reason := pe.Err.Error()
	if len(reason) > maxAbortReason {
		reason = reason[:maxAbortReason]
	}
	b := make([]byte, 0, failureHead+4*len(pe.Ranks)+len(reason))
	b = append(b, failLostMany)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(pe.Ranks)))
	b = binary.LittleEndian.AppendUint32(b, uint32(pe.Rank))
	for _, r := range pe.Ranks {
		if r != pe.Rank {
			b = binary.LittleEndian.AppendUint32(b, uint32(r))
		}
	}
	return append(b, reason...)
}

func failureHeader(payload []byte) wire.Header {
	return wire.Header{Kind: wire.KindControl, Flags: wire.FlagAbort, DType: kernel.Uint8,
		Count: uint64(len(payload)), Length: uint64(len(payload)), Root: -1}
}

// parseFailure decodes a failure frame's payload from rank src.
func parseFailure(src, size int, b []byte) (error, error) {
	if len(b) < failureHead {
		return nil, fmt.Errorf("failure frame from rank %d is %d bytes, shorter than its %d-byte head", src, len(b), failureHead)
	}
	if b[0] == failLostMany {
		return parseLostMany(src, size, b)
	}
	rank := int(binary.LittleEndian.Uint32(b[1:]))
	if rank >= size {
		return nil, fmt.Errorf("failure frame from rank %d blames rank %d of a job of %d", src, rank, size)
	}
	reason := string(b[failureHead:])
	switch b[0] {
	case failAborted:
		return remoteAbort(rank, reason), nil
	case failLost:
		return &PeerError{Rank: rank, Ranks: []int{rank}, Err: fmt.Errorf("%s (reported by rank %d)", reason, src)}, nil
	}
	return nil, fmt.Errorf("failure frame from rank %d has unknown kind %d", src, b[0])
}

func parseLostMany(src, size int, b []byte) (error, error) {
	n := int(binary.LittleEndian.Uint32(b[1:]))
	if n < 2 || n > size || len(b) < failureHead+4*n {
		return nil, fmt.Errorf("failure frame from rank %d names %d lost ranks in %d bytes (job of %d)", src, n, len(b), size)
	}
	ranks := make([]int, n)
	for i := range ranks {
		ranks[i] = int(binary.LittleEndian.Uint32(b[failureHead+4*i:]))
		if ranks[i] >= size {
			return nil, fmt.Errorf("failure frame from rank %d blames rank %d of a job of %d", src, ranks[i], size)
		}
	}
	first := ranks[0]
	slices.Sort(ranks)
	if len(slices.Compact(ranks)) != n {
		return nil, fmt.Errorf("failure frame from rank %d names a lost rank twice", src)
	}
	reason := string(b[failureHead+4*n:])
	return &PeerError{Rank: first, Ranks: ranks, Err: fmt.Errorf("%s (reported by rank %d)", reason, src)}, nil
}

// LossSettle is comm.LossSettle.
const LossSettle = 200 * time.Millisecond

// lose records that rank was lost because of cause; byStore says that
// the rendezvous store reported it, and so told every rank. The first
// loss starts the LossSettle period, at whose end the endpoint fails with
// a PeerError naming every rank lost meanwhile.
func (ep *endpoint) lose(rank int, cause error, byStore bool) {
	ep.lossMu.Lock()
	defer ep.lossMu.Unlock()
	if i := slices.IndexFunc(ep.lost, func(l lostRank) bool { return l.rank == rank }); i >= 0 {
		ep.lost[i].byStore = ep.lost[i].byStore || byStore
		return
	}
	ep.lost = append(ep.lost, lostRank{rank, cause, byStore})
	if ep.settled != nil {
		return
	}
	ep.settled = make(chan struct{})
	time.AfterFunc(ep.opts.lossSettle, ep.settleLoss)
}

// lostRank is a rank found lost and how.
type lostRank struct {
	rank    int
	cause   error
	byStore bool
}

// settleLoss ends a LossSettle period: the endpoint fails naming every
// rank lost in it, except ranks that left knowingly meanwhile: they
// closed their communicator, or failed and passed their failure on, and
// may have exited since. A write to them can break before their goodbye
// or failure frame is read, and that is no loss.
func (ep *endpoint) settleLoss() {
	ep.lossMu.Lock()
	lost := slices.DeleteFunc(ep.lost, func(l lostRank) bool { return ep.leftKnowingly(l.rank) })
	settled := ep.settled
	ep.lost, ep.settled = nil, nil
	ep.lossMu.Unlock()
	if len(lost) > 0 {
		ranks := make([]int, len(lost))
		for i, l := range lost {
			ranks[i] = l.rank
		}
		slices.Sort(ranks)
		failure := &PeerError{Rank: lost[0].rank, Ranks: ranks, Err: lost[0].cause}
		if ep.err() == nil {
			ep.passOn(failure, lost)
		}
		ep.fail(failure)
	}
	close(settled)
}

// passOnWithin bounds each half of passOn, the reports to the store and
// the frames along the links: the store answers at once unless it is
// gone, and the frames are small and the links idle by now, unless a
// peer stopped reading.
const passOnWithin = 200 * time.Millisecond

// passOn passes a loss this rank found, or was told of, on before any
// call of this rank can return it, and leaves the rendezvous store: a
// program that exits on the error (without Close) would otherwise look
// lost itself to peers still gathering news of the loss, and be named
// with it. The loss goes to the store for each rank it did not report
// itself, so the ranks that have no link to this one hear of it from the
// store, and along this rank's links; leaving after that is no news.
// Close leaves the store again later, which is harmless.
func (ep *endpoint) passOn(failure *PeerError, lost []lostRank) {
	// The store first, on a bound of its own: it reaches every rank, and
	// a link to a peer that stopped reading must not use up its time.
	ctx, cancel := context.WithTimeout(context.Background(), passOnWithin)
	for _, l := range lost {
		if l.byStore {
			continue
		}
		if err := ep.store.ReportLost(ctx, l.rank, l.cause.Error()); err != nil {
			ep.log.Debug("reporting a loss to the rendezvous store", "lost", l.rank, "err", err)
		}
	}
	cancel()
	ctx, cancel = context.WithTimeout(context.Background(), passOnWithin)
	defer cancel()
	payload := failurePayload(failure)
	h := failureHeader(payload)
	for i := range ep.peers {
		if o := ep.peers[i].link.Load(); o != nil && !slices.Contains(failure.Ranks, i) {
			_ = o.WriteMessage(ctx, h, payload)
		}
	}
	if err := ep.store.Close(); err != nil {
		ep.log.Debug("leaving the rendezvous store", "err", err)
	}
	// A program that exits on the error would cut every peer's
	// connection to the store this process serves, which they would take
	// for this rank's loss while they settle theirs; closed, the store
	// tells them it is gone, which is no news. They have its news of the
	// loss already: it went out first, on the same connections.
	if ep.server != nil {
		ep.server.CloseWithin(passOnWithin)
	}
}

// toldOf returns the ranks of a loss a peer told this rank of, each
// marked byStore when the store has reported it to this rank too.
func (ep *endpoint) toldOf(pe *PeerError) []lostRank {
	ep.lossMu.Lock()
	defer ep.lossMu.Unlock()
	lost := make([]lostRank, len(pe.Ranks))
	for i, r := range pe.Ranks {
		byStore := slices.ContainsFunc(ep.lost, func(l lostRank) bool { return l.rank == r && l.byStore })
		lost[i] = lostRank{r, pe.Err, byStore}
	}
	return lost
}

// leaving records that rank passed a failure on: it leaves the job, and
// its link's end is no loss.
func (ep *endpoint) leaving(rank int) {
	ib := &ep.inboxes[rank]
	ib.mu.Lock()
	ib.failing = true
	ib.mu.Unlock()
}

// leftKnowingly reports whether rank closed its communicator or passed a
// failure on to this rank.
func (ep *endpoint) leftKnowingly(rank int) bool {
	ib := &ep.inboxes[rank]
	ib.mu.Lock()
	defer ib.mu.Unlock()
	return ib.failing || errors.Is(ib.closed, ErrPeerClosed)
}

// goodbye returns the ErrPeerClosed error recorded when rank closed its
// communicator, or nil.
func (ep *endpoint) goodbye(rank int) error {
	ib := &ep.inboxes[rank]
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if errors.Is(ib.closed, ErrPeerClosed) {
		return ib.closed
	}
	return nil
}

// loseAndWait is lose for a caller that reports the failure itself, a
// send whose write failed: once the loss has settled, LossSettle at most
// later, it returns the endpoint's failure, or ErrPeerClosed if rank
// closed its communicator instead.
func (ep *endpoint) loseAndWait(rank int, cause error) error {
	ep.lose(rank, cause, false)
	ep.lossMu.Lock()
	settled := ep.settled
	ep.lossMu.Unlock()
	if settled != nil {
		<-settled
	}
	if err := ep.goodbye(rank); err != nil {
		return err
	}
	if err := ep.err(); err != nil {
		return err
	}
	return &PeerError{Rank: rank, Ranks: []int{rank}, Err: cause}
}

// silent fails the endpoint because rank said or took in nothing for the
// communicator's timeout, as what describes, and returns the failure. The
// failure names rank, not this rank: when this rank closes, its failure
// frames tell the others whom to blame, where a goodbye would have made
// them blame this rank.
func (ep *endpoint) silent(rank int, what string) error {
	ep.fail(&PeerError{Rank: rank, Ranks: []int{rank}, Err: fmt.Errorf("%w: %s", ErrTimeout, what)})
	return ep.err()
}

// readFailure reads the payload of a failure frame and fails the endpoint
// with the failure it reports.
func (ep *endpoint) readFailure(src int, l transport.Link, h *wire.Header) error {
	if h.Length > failureHead+maxAbortReason {
		return fmt.Errorf("failure frame from rank %d with %d payload bytes (at most %d)", src, h.Length, failureHead+maxAbortReason)
	}
	b := make([]byte, h.Length)
	if err := l.ReadPayload(b); err != nil {
		return err
	}
	failure, err := parseFailure(src, ep.size, b)
	if err != nil {
		return err
	}
	// Before the slow part: a loss this rank is settling must not name
	// src, which passed the failure on before it exits.
	ep.leaving(src)
	// A loss passes on, as settleLoss passes on its own, before this
	// rank's calls can return it.
	if pe, ok := failure.(*PeerError); ok && ep.err() == nil {
		ep.passOn(pe, ep.toldOf(pe))
	}
	ep.fail(failure)
	return nil
}

// fail puts the endpoint into its failed state: every pending and later
// call returns err. Links stay open, so peers learn of the failure from
// the rendezvous or a failure frame, not from a link that looks like a
// crash. It reports whether err is the failure, false when an earlier one
// stands.
func (ep *endpoint) fail(err error) bool {
	first := false
	ep.failOnce.Do(func() {
		first = true
		if !ep.closing.Load() {
			// Before any call can return the failure and the process
			// exit, and while the calls still wait where they failed.
			report(ep.opts.report, err)
			if ep.opts.dumpOnFailure {
				ep.dump(err.Error())
			}
		}
		ep.failErr = err
		close(ep.failed)
		for i := range ep.inboxes {
			ep.inboxes[i].close(err)
		}
		if !ep.closing.Load() {
			ep.log.Debug("communicator failed", "err", err)
		}
	})
	return first
}

// abort fails this rank because of cause and tells every other rank.
// Peers learn cause's text; this rank's own calls fail with an error
// that wraps cause itself.
func (ep *endpoint) abort(cause error) {
	if failure := ep.abortHere(cause); failure != nil {
		ep.announce(failure)
	}
}

// abortHere fails this rank with an abort because of cause, so that no
// call of this rank succeeds from now on, and returns the abort for the
// caller to announce; nil when an earlier failure stands.
func (ep *endpoint) abortHere(cause error) *AbortError {
	reason := cause.Error()
	if errors.Is(cause, ErrMismatch) {
		reason = mismatchReason + reason
	}
	failure := &AbortError{Rank: ep.rank, Reason: reason, Err: cause}
	if !ep.fail(failure) {
		return nil
	}
	return failure
}

// mismatchReason starts the reason of an abort because of a mismatch, so
// that the ranks that learn only the reason (from a failure frame or the
// rendezvous) still tell it by ErrMismatch.
const mismatchReason = "collective mismatch: "

// remoteAbort is the abort of rank for reason, as another rank learns it.
func remoteAbort(rank int, reason string) *AbortError {
	failure := &AbortError{Rank: rank, Reason: reason}
	if strings.HasPrefix(reason, mismatchReason) {
		failure.Err = ErrMismatch
	}
	return failure
}

// announce tells every rank of this rank's abort, through the links that
// exist and through the rendezvous (which reaches the ranks this one never
// talked to). It runs once; a later call waits for the first to finish,
// which is how Close makes sure an abort is out before it hands the
// rendezvous back.
func (ep *endpoint) announce(failure *AbortError) {
	ep.announceOnce.Do(func() {
		payload := failurePayload(failure)
		h := failureHeader(payload)
		ctx, cancel := context.WithTimeout(context.Background(), abortGrace)
		defer cancel()
		for i := range ep.peers {
			if o := ep.peers[i].link.Load(); o != nil {
				_ = o.WriteMessage(ctx, h, payload)
			}
		}
		if err := ep.store.Abort(failure.Reason); err != nil {
			ep.log.Debug("abort not sent through the rendezvous", "err", err)
		}
	})
}
