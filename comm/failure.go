package comm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/transport"
)

// A failure frame (a frame with codec.FlagAbort) tells a peer that the job
// cannot go on, and whom to blame: the rank that aborted, or the rank that
// was lost. Its payload is
//
//	[0]   failAborted or failLost
//	[1:5] the culprit's world rank, little-endian
//	[5:]  the reason, UTF-8
//
// A rank sends one when it aborts, and instead of a goodbye when it closes
// after a failure, so that the error every rank reports names the rank that
// caused it, whichever news arrives first.
const (
	failAborted = 1
	failLost    = 2

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

func failureHeader(payload []byte) codec.Header {
	return codec.Header{Kind: codec.KindControl, Flags: codec.FlagAbort, DType: codec.Uint8,
		Count: uint64(len(payload)), Length: uint64(len(payload)), Root: -1}
}

// parseFailure decodes a failure frame's payload from rank src.
func parseFailure(src, size int, b []byte) (error, error) {
	if len(b) < failureHead {
		return nil, fmt.Errorf("failure frame from rank %d is %d bytes, shorter than its %d-byte head", src, len(b), failureHead)
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
		return &PeerError{Rank: rank, Err: fmt.Errorf("%s (reported by rank %d)", reason, src)}, nil
	}
	return nil, fmt.Errorf("failure frame from rank %d has unknown kind %d", src, b[0])
}

// readFailure reads the payload of a failure frame and fails the endpoint
// with the failure it reports.
func (ep *endpoint) readFailure(src int, l transport.Link, h *codec.Header) error {
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
