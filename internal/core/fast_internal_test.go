package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// TestLinesOutliveAnEarlyLeaver: a rank that left an operation without
// waiting for every rank to begin it (a Gather's sender that copied
// once into root's buffer, say) does not write its fast line of the
// operation after next, which reuses the line, before every rank has
// begun the one it left: a rank still reading that line for the
// operation before must find what was written for it. A job of four
// ranks on two CPUs once failed with a false mismatch there (a Barrier
// read another rank's line of the Barrier two operations later), and
// an operation whose lines carry data would have read the later data.
//
// Rank 2 is the slow one: it has written its line of operation 1 and
// not yet read the others'; ranks 0 and 1 finish operation 1, leave
// operation 2 (through the segment, waiting for nobody) and begin
// operation 3 through the lines.
func TestLinesOutliveAnEarlyLeaver(t *testing.T) {
	segs := segmentsOf(t, 3)
	ctx := context.Background()
	lines, record := linesCall, recordCall
	// data is what rank r puts in its line in operation t.
	data := func(r int, t uint64) []byte { return []byte{byte(10*t) + byte(r)} }
	// exchange runs operation t through rank r's lines, waiting for
	// from, and returns what it read of rank 0's line.
	exchange := func(op *SegmentOp, r int, t uint64, from int) (byte, error) {
		got, err := op.Exchange(data(r, t), from)
		if err != nil {
			return 0, err
		}
		return got[0][0], nil
	}
	for _, s := range segs {
		for range 3 {
			s.Enqueue()
		}
	}

	// Operation 1: rank 2 begins and writes its line, as Exchange does
	// first, and is held before it reads the others'.
	var slow SegmentOp
	require.NoError(t, segs[2].BeginLines(&slow, ctx, 1, 1, lines))
	mine := segs[2].fastLine(2, 1)
	copy(mine[fastData:], data(2, 1))
	putCall(mine, 1, 1, lines)

	// Ranks 0 and 1 finish operation 1, leave operation 2 at once, and
	// begin operation 3 through the lines again, which must wait for
	// rank 2 to begin operation 2.
	atThird, third := make(chan struct{}, 2), make(chan error, 2)
	for r := range 2 {
		go func() {
			s := segs[r]
			var op SegmentOp
			err := s.BeginLines(&op, ctx, 1, 1, lines)
			if err == nil {
				_, err = exchange(&op, r, 1, FromAll)
				op.End()
			}
			if err == nil {
				if err = s.Begin(&op, ctx, 2, 2, record, [2][]byte{}, -1); err == nil {
					op.End()
				}
			}
			atThird <- struct{}{}
			if err == nil {
				if err = s.BeginLines(&op, ctx, 3, 3, lines); err == nil {
					_, err = exchange(&op, r, 3, FromNone)
					op.End()
				}
			}
			third <- err
		}()
	}
	<-atThird
	<-atThird
	// Give operation 3 the time to overwrite the lines, which it may not:
	// without the wait it takes microseconds.
	select {
	case err := <-third:
		third <- err
	case <-time.After(100 * time.Millisecond):
	}

	// Rank 2 reads the others' lines of operation 1 now.
	got, err := exchange(&slow, 2, 1, FromAll)
	require.NoError(t, err)
	require.Equal(t, data(0, 1)[0], got, "rank 0's line of operation 1, as rank 2 read it")
	slow.End()
	var op SegmentOp
	require.NoError(t, segs[2].Begin(&op, ctx, 2, 2, record, [2][]byte{}, -1))
	op.End()
	for range 2 {
		require.NoError(t, <-third)
	}
	require.NoError(t, segs[2].BeginLines(&op, ctx, 3, 3, lines))
	_, err = exchange(&op, 2, 3, FromNone)
	require.NoError(t, err)
	op.End()
}

// TestSettleFindsACallRunTheOtherWay: a rank that left an operation
// through the segment early, whose peer ran its call of that operation
// through the fast lines (the two calls differ), finds the difference
// when its next operation settles the one it left, and the job fails
// with a mismatch: it looks at the peer's line as well as its record,
// and does not wait for a record that never comes.
func TestSettleFindsACallRunTheOtherWay(t *testing.T) {
	segs := segmentsOf(t, 2, WithTimeout(20*time.Second))
	ctx := context.Background()
	for _, s := range segs {
		s.Enqueue()
		s.Enqueue()
	}
	var op SegmentOp
	require.NoError(t, segs[0].BeginLines(&op, ctx, 1, 1, linesCall))
	_, err := op.Exchange([]byte{1}, FromNone)
	require.NoError(t, err)
	op.End()
	require.NoError(t, segs[1].Begin(&op, ctx, 1, 1, recordCall, [2][]byte{}, -1))
	op.End()
	err = segs[1].BeginLines(&op, ctx, 2, 2, linesCall)
	var m *MismatchError
	require.ErrorAs(t, err, &m, "rank 1's next operation")
	require.Equal(t, linesCall, m.Remote)
	require.Equal(t, recordCall, m.Local)
}

// The calls of the tests above: one through the fast lines, and one
// through the segment's records.
var (
	linesCall  = wire.Call{Kind: wire.KindAllreduce, DType: kernel.Uint8, Count: 1, Root: -1, Algorithm: wire.AlgoShm}
	recordCall = wire.Call{Kind: wire.KindGather, DType: kernel.Uint8, Count: 1 << 20, Algorithm: wire.AlgoShm}
)

// pollJob is NewLocal of n ranks over transport tr with opts, closed
// when the test ends. It builds on every platform, as the tests of
// segments that use it must, for make cross to vet them.
func pollJob(t *testing.T, tr string, n int, opts ...Option) []*Comm {
	t.Helper()
	cs, err := NewLocal(n, append([]Option{WithTransport(tr), WithTimeout(time.Minute)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// segmentsOf is the segments of a pollJob of n ranks over shared memory.
func segmentsOf(t *testing.T, n int, opts ...Option) []*Segment {
	t.Helper()
	cs := pollJob(t, "shm", n, opts...)
	segs := make([]*Segment, n)
	for r, c := range cs {
		segs[r] = c.Segment()
		require.NotNil(t, segs[r], "rank %d's segment", r)
	}
	return segs
}
