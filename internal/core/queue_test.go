package core

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFIFOPerKey: each key's items come out in the order they went in
// (pop after front, or take),
// whatever the other keys do; removal keeps the rest in order; emptied
// queues are reused without allocating.
func TestFIFOPerKey(t *testing.T) {
	a, b := matchKey{1, 5}, matchKey{1, 6}
	var qs queues[int]
	for i := range 100 {
		qs.push(a, i)
		qs.push(b, 1000+i)
	}
	require.True(t, qs.remove(a, 50))
	require.False(t, qs.remove(a, 50), "removed twice")
	for i := range 100 {
		if i == 50 {
			continue
		}
		v, ok := qs.front(a)
		require.True(t, ok)
		require.Equal(t, i, v)
		if i%2 == 0 {
			require.Equal(t, i, qs.pop(a))
			continue
		}
		v, ok = qs.take(a)
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	_, ok := qs.front(a)
	require.False(t, ok, "key a drained")
	_, ok = qs.take(a)
	require.False(t, ok, "take from a drained key")
	var rest []int
	qs.drain(func(v int) { rest = append(rest, v) })
	require.Len(t, rest, 100)
	for i, v := range rest {
		require.Equal(t, 1000+i, v)
	}
	require.Empty(t, qs.byKey)

	// Steady traffic on ever new keys (one per collective operation)
	// allocates nothing once a queue is warm.
	var seq int64
	allocs := testing.AllocsPerRun(1000, func() {
		seq++
		k := matchKey{2, seq}
		qs.push(k, 1)
		qs.push(k, 2)
		qs.pop(k)
		qs.pop(k)
	})
	require.Zero(t, allocs)
}

// TestUnexpectedBudgetCountsMessages: early messages cost their bookkeeping
// too, so a flood of empty messages stops at the budget instead of growing
// the receiver without bound, and the ones buffered are received in order
// once receives are posted.
func TestUnexpectedBudgetCountsMessages(t *testing.T) {
	const limit = 64 << 10
	const sends = 10000
	cs, err := NewLocal(2, WithUnexpectedLimit(limit), WithTimeout(time.Minute))
	require.NoError(t, err)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	ctx := context.Background()
	sent := make(chan error, 1)
	go func() {
		for i := range sends {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(i))
			if err := cs[0].Send(ctx, 1, 7, b[:]); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()

	ib := &cs[1].ep.inboxes[0]
	stalled := func() bool {
		ib.mu.Lock()
		defer ib.mu.Unlock()
		return ib.stalled != nil
	}
	deadline := time.Now().Add(time.Minute)
	for !stalled() {
		select {
		case err := <-sent:
			t.Fatalf("all %d messages were buffered without a receive (send error %v)", sends, err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "the reader never stalled")
		time.Sleep(time.Millisecond)
	}
	cs[1].ep.budgetMu.Lock()
	used := cs[1].ep.budgetUsed
	cs[1].ep.budgetMu.Unlock()
	require.LessOrEqual(t, used, limit)
	require.Equal(t, limit/messageCost(4), used/messageCost(4), "messages buffered")

	buf := make([]byte, 4)
	for i := range sends {
		_, err := cs[1].Recv(ctx, 0, 7, buf)
		require.NoError(t, err)
		require.Equal(t, uint32(i), binary.LittleEndian.Uint32(buf), fmt.Sprintf("message %d", i))
	}
	require.NoError(t, <-sent)
}

// BenchmarkDrainUnexpected receives messages that all arrived before
// their receives, oldest first: each receive costs the same however many
// wait behind it.
func BenchmarkDrainUnexpected(b *testing.B) {
	for _, queued := range []int{1 << 10, 1 << 16} {
		b.Run(fmt.Sprint(queued), func(b *testing.B) {
			k := matchKey{1, 1}
			var qs queues[*message]
			m := &message{}
			for range queued {
				qs.push(k, m)
			}
			b.ReportAllocs()
			for b.Loop() {
				qs.push(k, qs.pop(k))
			}
		})
	}
}
