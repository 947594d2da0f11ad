package wire

import (
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
	"github.com/stretchr/testify/require"
)

func TestCallString(t *testing.T) {
	tests := []struct {
		call Call
		want string
	}{
		{Call{Kind: KindAllreduce, DType: kernel.Float32, Op: ops.Sum, Count: 10, Root: -1}, "Allreduce(10 × float32, sum)"},
		{Call{Kind: KindAllreduce, DType: kernel.Float32, Op: ops.Sum, Count: 10, Root: -1, Algorithm: AlgoRing},
			"Allreduce(10 × float32, sum) with ring"},
		{Call{Kind: KindBcast, DType: kernel.BFloat16, Count: 0, Root: 3, Algorithm: AlgoTree}, "Bcast(0 × bf16, root 3) with tree"},
		{Call{Kind: KindBcast, DType: kernel.Uint8, Count: 8, Root: 0, Algorithm: AlgoLinear, NoReceipts: true}, "Bcast(8 × uint8, root 0) with linear without receipts"},
		{Call{Kind: KindBarrier, DType: kernel.Uint8, Root: -1, Algorithm: AlgoDissemination}, "Barrier(0 × uint8) with dissemination"},
		{Call{Kind: KindSplit, DType: kernel.Int64, Count: 8}, "Split"},
		{Call{Kind: KindGatherv, DType: kernel.Float32, Root: 2, Algorithm: AlgoLinear}, "Gatherv(float32, root 2) with linear"},
		{Call{Kind: KindScatterv, DType: kernel.Int8, Count: 3, Root: 0}, "Scatterv(3 × int8, root 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, tt.call.String())
		})
	}
}

// TestHeaderCall: the call a header belongs to is read from exactly the
// fields every rank must agree on; the ones that differ between the
// messages of one call (tag, offset, length, the other flags) do not
// take part; FlagNoReceipts, which every frame of a call carries or none
// does, does.
func TestHeaderCall(t *testing.T) {
	a := validHeader()
	b := a
	b.Tag, b.Offset, b.Length, b.Flags = a.Tag-1, 0, 0, FlagProbe
	require.Equal(t, a.Call(), b.Call())
	require.Equal(t, Call{Kind: KindAllreduce, DType: kernel.Float32, Op: ops.Sum, Count: 100, Root: -1, Algorithm: AlgoRing}, a.Call())
	for _, change := range []func(h *Header){
		func(h *Header) { h.Kind = KindReduce },
		func(h *Header) { h.DType = kernel.Int32 },
		func(h *Header) { h.Op = ops.Max },
		func(h *Header) { h.Count++ },
		func(h *Header) { h.Root = 0 },
		func(h *Header) { h.Algorithm = AlgoTree },
		func(h *Header) { h.Flags |= FlagNoReceipts },
	} {
		c := a
		change(&c)
		require.NotEqual(t, a.Call(), c.Call(), "%v", &c)
	}
}

// TestHeaderCallPartCounted: the frames of a Gatherv or Scatterv count
// their sender's part, which differs from rank to rank; their call has
// no count, so that every rank's frames show the same call.
func TestHeaderCallPartCounted(t *testing.T) {
	for _, kind := range []Kind{KindGatherv, KindScatterv} {
		a := Header{Kind: kind, DType: kernel.Float32, Seq: 3, Tag: -5, Count: 7, Length: 28, Root: 1, Algorithm: AlgoLinear}
		require.NoError(t, a.Validate())
		b := a
		b.Count, b.Length = 2, 8
		require.Equal(t, a.Call(), b.Call())
		require.Equal(t, Call{Kind: kind, DType: kernel.Float32, Root: 1, Algorithm: AlgoLinear}, a.Call())
	}
	require.False(t, KindGather.PartCounted())
	require.False(t, KindAllgatherv.PartCounted())
}

func TestParseAlgorithm(t *testing.T) {
	for a := range numAlgorithms {
		got, err := ParseAlgorithm(a.String())
		require.NoError(t, err)
		require.Equal(t, a, got)
	}
	got, err := ParseAlgorithm("RING_Chunked")
	require.NoError(t, err)
	require.Equal(t, AlgoRingChunked, got)
	_, err = ParseAlgorithm("quantum")
	require.ErrorIs(t, err, codec.ErrInvalid)
	require.ErrorContains(t, err, `unknown algorithm "quantum"`)
	require.Equal(t, "Algorithm(200)", Algorithm(200).String())
	require.False(t, numAlgorithms.Valid())
}
