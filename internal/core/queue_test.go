package core

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFIFOPerKey: each key's items come out in the order they went in
// (pop after front, or take), whatever the other keys do; removal keeps
// the rest in order; emptied queues are reused without allocating.
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
	require.False(t, qs.hasLone)
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

// TestQueuesAgainstModel runs random pushes, takes, pops and removals on
// a few keys against a map of slices: whichever of the keys sits beside
// the map (the lone one) and whichever are in it, each key's items come
// out in order and none is lost.
func TestQueuesAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []matchKey{{1, 1}, {1, 2}, {2, 1}, {3, 7}}
	var qs queues[int]
	model := map[matchKey][]int{}
	next := 0
	for step := range 20000 {
		k := keys[rng.IntN(len(keys))]
		switch op := rng.IntN(10); {
		case op < 4:
			next++
			qs.push(k, next)
			model[k] = append(model[k], next)
		case op < 7:
			v, ok := qs.take(k)
			require.Equal(t, len(model[k]) > 0, ok, "step %d: take from %v", step, k)
			if ok {
				require.Equal(t, model[k][0], v, "step %d: take from %v", step, k)
				model[k] = model[k][1:]
			}
		case op < 8:
			if v, ok := qs.front(k); ok {
				require.Equal(t, model[k][0], v, "step %d: front of %v", step, k)
				require.Equal(t, v, qs.pop(k))
				model[k] = model[k][1:]
			} else {
				require.Empty(t, model[k], "step %d: front of %v", step, k)
			}
		default:
			if len(model[k]) == 0 {
				require.False(t, qs.remove(k, -1))
				continue
			}
			i := rng.IntN(len(model[k]))
			require.True(t, qs.remove(k, model[k][i]), "step %d: remove from %v", step, k)
			model[k] = append(model[k][:i:i], model[k][i+1:]...)
		}
	}
	got := map[matchKey][]int{}
	for _, k := range keys {
		for {
			v, ok := qs.take(k)
			if !ok {
				break
			}
			got[k] = append(got[k], v)
		}
		require.Equal(t, len(model[k]), len(got[k]), "key %v", k)
		if len(model[k]) > 0 {
			require.Equal(t, model[k], got[k], "key %v", k)
		}
	}
	require.False(t, qs.hasLone)
	require.Empty(t, qs.byKey)
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
