package comm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// bcastCall is the header of a Bcast of n bytes from root.
func bcastCall(n, root int) wire.Header {
	return wire.Header{Kind: wire.KindBcast, DType: kernel.Uint8, Count: uint64(n), Root: int32(root), Algorithm: wire.AlgoTree}
}

// TestProbeNamesMismatch: two ranks that each wait for the other to be
// the root send each other nothing, so only the probe of a stalled
// receive can tell them they disagree. Both must fail with the mismatch
// named, not with the timeout.
func TestProbeNamesMismatch(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr), comm.WithTimeout(watchdog))
			for r, err := range run(t, cs, func(ctx context.Context, c *comm.Comm) error {
				other := 1 - c.Rank()
				h := bcastCall(4, other)
				seq, err := engine(c).StartCall(h.Call())
				if err != nil {
					return err
				}
				_, _, err = engine(c).RecvHeader(ctx, other, core.InternalTag(seq, 0), make([]byte, 4))
				return err
			}) {
				require.Error(t, err, "rank %d", r)
				require.True(t, errors.Is(err, comm.ErrMismatch) || errors.Is(err, comm.ErrAborted), "rank %d: %v", r, err)
				require.NotErrorIs(t, err, comm.ErrTimeout, "rank %d", r)
				require.ErrorContains(t, err, "Bcast(4 × uint8, root 0) with tree", "rank %d", r)
				require.ErrorContains(t, err, "Bcast(4 × uint8, root 1) with tree", "rank %d", r)
			}
		})
	}
}

// TestProbeIsNotAMessage: a receive that stalls long enough to probe
// still gets its message, and the probe that reaches a rank in the same
// call changes nothing there: the data of both steps arrives intact.
func TestProbeIsNotAMessage(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			cs := newJob(t, 2, comm.WithTransport(tr), comm.WithTimeout(watchdog))
			const n = 1000
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				h := bcastCall(n, 0)
				seq, err := engine(c).StartCall(h.Call())
				if err != nil {
					return err
				}
				h.Seq = seq
				step := func(i int) int64 { return core.InternalTag(seq, i) }
				got := make([]byte, n)
				if c.Rank() == 0 {
					// Stalls while rank 1 sleeps: it probes rank 1.
					if _, _, err := engine(c).RecvHeader(ctx, 1, step(0), got); err != nil {
						return err
					}
					if !bytes.Equal(got, payload(1, 0, 0, n)) {
						return fmt.Errorf("step 0 arrived corrupted")
					}
					h.Tag, h.Length = step(1), n
					return engine(c).SendHeader(ctx, 1, &h, payload(0, 1, 1, n))
				}
				time.Sleep(3 * comm.ProbeDelay)
				h.Tag, h.Length = step(0), n
				if err := engine(c).SendHeader(ctx, 0, &h, payload(1, 0, 0, n)); err != nil {
					return err
				}
				if _, _, err := engine(c).RecvHeader(ctx, 0, step(1), got); err != nil {
					return err
				}
				if !bytes.Equal(got, payload(0, 1, 1, n)) {
					return fmt.Errorf("step 1 arrived corrupted")
				}
				return nil
			})
		})
	}
}

// TestSplitMismatch: Split takes part in the collective order like any
// collective, so a rank that splits while another calls a collective is
// told so by name.
func TestSplitMismatch(t *testing.T) {
	cs := newJob(t, 3, comm.WithTimeout(watchdog))
	for r, err := range run(t, cs, func(ctx context.Context, c *comm.Comm) error {
		if c.Rank() == 2 {
			h := bcastCall(16, 2)
			seq, err := engine(c).StartCall(h.Call())
			if err != nil {
				return err
			}
			h.Seq, h.Tag, h.Length = seq, core.InternalTag(seq, 0), 16
			if err := engine(c).SendHeader(ctx, 0, &h, make([]byte, 16)); err != nil {
				return err
			}
			// Wait for the abort.
			_, err = c.Recv(ctx, 0, 0, nil)
			return err
		}
		_, err := c.Split(ctx, 0, 0)
		return err
	}) {
		require.True(t, errors.Is(err, comm.ErrMismatch) || errors.Is(err, comm.ErrAborted), "rank %d: %v", r, err)
		require.ErrorContains(t, err, "called Split", "rank %d", r)
		require.ErrorContains(t, err, "rank 2 called Bcast(16 × uint8, root 2) with tree", "rank %d", r)
	}
}
