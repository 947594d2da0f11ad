package collective

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/wire"
)

func TestParseEnv(t *testing.T) {
	tests := []struct {
		name      string
		algo      string
		chunk     string
		codec     string
		receipts  string
		labels    string
		want      map[wire.Kind]Algorithm
		wantChunk int
		wantCodec codec.ID
		noReceipt bool
		allLabels bool
		problems  int
	}{
		{name: "empty", want: map[wire.Kind]Algorithm{}},
		{name: "two entries", algo: "allreduce:ring, bcast:TREE", chunk: "65536",
			want: map[wire.Kind]Algorithm{wire.KindAllreduce: Ring, wire.KindBcast: Tree}, wantChunk: 65536},
		{name: "unknown collective", algo: "allfoo:ring", want: map[wire.Kind]Algorithm{}, problems: 1},
		{name: "unknown algorithm", algo: "allreduce:quantum", want: map[wire.Kind]Algorithm{}, problems: 1},
		{name: "algorithm the collective lacks", algo: "bcast:ring,allreduce:rabenseifner",
			want: map[wire.Kind]Algorithm{wire.KindAllreduce: Rabenseifner}, problems: 1},
		{name: "no colon", algo: "ring", want: map[wire.Kind]Algorithm{}, problems: 1},
		{name: "bad chunk", chunk: "big", want: map[wire.Kind]Algorithm{}, problems: 1},
		{name: "negative chunk", chunk: "-4", want: map[wire.Kind]Algorithm{}, problems: 1},
		{name: "codec", codec: "bf16", want: map[wire.Kind]Algorithm{}, wantCodec: codec.BF16},
		{name: "codec none", codec: "none", want: map[wire.Kind]Algorithm{}},
		{name: "unknown codec", codec: "gzip", want: map[wire.Kind]Algorithm{}, problems: 1},
		{name: "receipts off", receipts: "0", want: map[wire.Kind]Algorithm{}, noReceipt: true},
		{name: "receipts false", receipts: " false", want: map[wire.Kind]Algorithm{}, noReceipt: true},
		{name: "receipts on", receipts: "true", want: map[wire.Kind]Algorithm{}},
		{name: "receipts unparsed", receipts: "sometimes", want: map[wire.Kind]Algorithm{}, problems: 1},
		{name: "profile labels", labels: "1", want: map[wire.Kind]Algorithm{}, allLabels: true},
		{name: "profile labels off", labels: "false", want: map[wire.Kind]Algorithm{}},
		{name: "profile labels unparsed", labels: "all", want: map[wire.Kind]Algorithm{}, problems: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, problems := parseEnv(tt.algo, tt.chunk, tt.codec, tt.receipts, tt.labels)
			require.Equal(t, tt.want, e.algos)
			require.Equal(t, tt.wantChunk, e.chunk)
			require.Equal(t, tt.wantCodec, e.codec)
			require.Equal(t, tt.codec != "" && tt.problems == 0, e.codecSet)
			require.Equal(t, tt.noReceipt, e.noReceipts)
			require.Equal(t, tt.allLabels, e.profileLabels)
			require.Len(t, problems, tt.problems, "%q", problems)
		})
	}
}

// TestChooseByOptions: what a call's options say beyond the algorithm
// moves the selector. A lossy codec takes the ring where Rabenseifner
// would run uncompressed, for the ring's encoding in the cache and
// forwarding without encoding again, but for more than two ranks below
// allreduceLossyRing, where Rabenseifner's fewer steps count more, and
// from allreduceLossyFew where recursive doubling would code the whole
// buffer at every step; a small Bcast of few ranks goes flat (Linear)
// when it takes no receipts, and down the tree when it does or when there
// are more ranks.
func TestChooseByOptions(t *testing.T) {
	bf16, noReceipts := config{codec: codec.BF16, codecSet: true}, config{noReceipts: true}
	tests := []struct {
		name  string
		kind  wire.Kind
		cfg   config
		ranks int
		bytes int
		want  Algorithm
	}{
		{"allreduce, bf16, 2 ranks, 1 MiB", wire.KindAllreduce, bf16, 2, 1 << 20, Ring},
		{"allreduce, bf16, 4 ranks, 1 MiB", wire.KindAllreduce, bf16, 4, 1 << 20, Rabenseifner},
		{"allreduce, bf16, 4 ranks, 2 MiB", wire.KindAllreduce, bf16, 4, 2 << 20, Ring},
		{"allreduce, fp16, 8 ranks, 1 MiB", wire.KindAllreduce, config{codec: codec.FP16, codecSet: true}, 8, 1 << 20, Rabenseifner},
		{"allreduce, bf16, 6 ranks, 1 MiB", wire.KindAllreduce, bf16, 6, 1 << 20, Ring},
		{"allreduce, zstd, 4 ranks, 1 MiB", wire.KindAllreduce, config{codec: codec.Zstd, codecSet: true}, 4, 1 << 20, Rabenseifner},
		{"allreduce, bf16, 4 ranks, 16 MiB", wire.KindAllreduce, bf16, 4, 16 << 20, RingChunked},
		{"allreduce, bf16, 4 ranks, 1 KiB", wire.KindAllreduce, bf16, 4, 1 << 10, RecursiveDoubling},
		{"allreduce, bf16, 4 ranks, 64 KiB", wire.KindAllreduce, bf16, 4, 64 << 10, RecursiveDoubling},
		{"allreduce, bf16, 4 ranks, 128 KiB", wire.KindAllreduce, bf16, 4, 128 << 10, Rabenseifner},
		{"allreduce, bf16, 2 ranks, 256 KiB", wire.KindAllreduce, bf16, 2, 256 << 10, Ring},
		{"allreduce, fp16, 3 ranks, 256 KiB", wire.KindAllreduce, config{codec: codec.FP16, codecSet: true}, 3, 256 << 10, Ring},
		{"allreduce, zstd, 2 ranks, 256 KiB", wire.KindAllreduce, config{codec: codec.Zstd, codecSet: true}, 2, 256 << 10, RecursiveDoubling},
		{"bcast, no receipts, 4 ranks, 8 B", wire.KindBcast, noReceipts, 4, 8, Linear},
		{"bcast, receipts, 4 ranks, 8 B", wire.KindBcast, config{}, 4, 8, Tree},
		{"bcast, no receipts, 5 ranks, 8 B", wire.KindBcast, noReceipts, 5, 8, Tree},
		{"bcast, no receipts, 3 ranks, 4 KiB", wire.KindBcast, noReceipts, 3, 4 << 10, Linear},
		{"bcast, no receipts, 4 ranks, 32 KiB", wire.KindBcast, noReceipts, 4, 32 << 10, Tree},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := choose(tt.kind, &tt.cfg, tt.ranks, tt.bytes, true, &topology{})
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestChoose: the selector follows the cost model's thresholds, never
// hands a non-commutative op to an algorithm that reorders, and refuses
// algorithms a collective does not have.
func TestChoose(t *testing.T) {
	tests := []struct {
		name        string
		kind        wire.Kind
		algo        Algorithm
		ranks       int
		bytes       int
		commutative bool
		topo        topology
		want        Algorithm
		wantErr     string
	}{
		{"small allreduce", wire.KindAllreduce, Auto, 4, 1 << 10, true, topology{}, RecursiveDoubling, ""},
		{"mid allreduce power of two", wire.KindAllreduce, Auto, 4, 1 << 20, true, topology{}, Rabenseifner, ""},
		{"mid allreduce", wire.KindAllreduce, Auto, 3, 1 << 20, true, topology{}, Ring, ""},
		{"large allreduce", wire.KindAllreduce, Auto, 3, 64 << 20, true, topology{}, RingChunked, ""},
		{"large non-commutative allreduce", wire.KindAllreduce, Auto, 3, 64 << 20, false, topology{}, RecursiveDoubling, ""},
		{"forced ring, non-commutative", wire.KindAllreduce, Ring, 3, 8, false, topology{}, 0, "out of rank order"},
		{"bcast without ring", wire.KindBcast, Ring, 3, 8, true, topology{}, 0, "Bcast has no ring algorithm"},
		{"large bcast", wire.KindBcast, Auto, 4, 16 << 20, true, topology{}, Chain, ""},
		{"mid bcast", wire.KindBcast, Auto, 4, 1 << 20, true, topology{}, ScatterAllgather, ""},
		{"bcast with two ranks", wire.KindBcast, Auto, 2, 16 << 20, true, topology{}, Tree, ""},
		{"mid bcast on one host", wire.KindBcast, Auto, 4, 1 << 20, true, topology{oneHost: true}, Tree, ""},
		{"large bcast on one host", wire.KindBcast, Auto, 4, 16 << 20, true, topology{oneHost: true}, Tree, ""},
		{"allreduce of few ranks below 512 KiB", wire.KindAllreduce, Auto, 4, 256 << 10, true, topology{}, RecursiveDoubling, ""},
		{"allreduce of more ranks below 512 KiB", wire.KindAllreduce, Auto, 8, 256 << 10, true, topology{}, Rabenseifner, ""},
		{"allreduce of more ranks below 64 KiB", wire.KindAllreduce, Auto, 8, 32 << 10, true, topology{}, RecursiveDoubling, ""},
		{"mid reduce", wire.KindReduce, Auto, 4, 1 << 20, true, topology{}, Tree, ""},
		{"large reduce", wire.KindReduce, Auto, 3, 4 << 20, true, topology{}, Tree, ""},
		{"large reduce of many ranks", wire.KindReduce, Auto, 8, 4 << 20, true, topology{}, Rabenseifner, ""},
		{"large non-commutative reduce of many ranks", wire.KindReduce, Auto, 16, 16 << 20, false, topology{}, Rabenseifner, ""},
		{"large reduce of many ranks on one host", wire.KindReduce, Auto, 8, 16 << 20, true, topology{oneHost: true}, Tree, ""},
		{"mid allgather, power of two", wire.KindAllgather, Auto, 4, 256 << 10, true, topology{}, RecursiveDoubling, ""},
		{"large allgather, power of two", wire.KindAllgather, Auto, 4, 1 << 20, true, topology{}, Ring, ""},
		{"large allgather on one host", wire.KindAllgather, Auto, 4, 1 << 20, true, topology{oneHost: true}, RecursiveDoubling, ""},
		{"small allgather", wire.KindAllgather, Auto, 3, 1 << 10, true, topology{}, Bruck, ""},
		{"non-commutative reduce-scatter", wire.KindReduceScatter, Auto, 3, 1 << 20, false, topology{}, RecursiveHalving, ""},
		{"barrier", wire.KindBarrier, Auto, 5, 0, true, topology{}, Dissemination, ""},
		{"small gather of few ranks", wire.KindGather, Auto, 4, 1 << 10, true, topology{}, Linear, ""},
		{"small gather of more ranks", wire.KindGather, Auto, 5, 1 << 10, true, topology{}, Tree, ""},
		{"small scatter of few ranks", wire.KindScatter, Auto, 4, 1 << 10, true, topology{}, Tree, ""},
		{"large gather of more ranks", wire.KindGather, Auto, 5, 1 << 20, true, topology{}, Linear, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := choose(tt.kind, &config{algo: tt.algo}, tt.ranks, tt.bytes, tt.commutative, &tt.topo)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, codec.ErrInvalid)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
