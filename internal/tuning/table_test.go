package tuning

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/wire"
)

const validTable = `{"entries": [
 {"collective": "allreduce", "ranks": 4, "transport": "tcp", "min_bytes": 0, "max_bytes": 8191, "algorithm": "tree", "chunk": 0, "codec": "none"},
 {"collective": "Allreduce", "ranks": 4, "transport": "tcp", "min_bytes": 1048576, "max_bytes": 16777215, "algorithm": "ring_chunked", "chunk": 1048576},
 {"collective": "allreduce", "ranks": 2, "transport": "tcp", "min_bytes": 0, "max_bytes": 100, "algorithm": "ring", "chunk": 0, "codec": "none"},
 {"collective": "bcast", "ranks": 4, "transport": "shm", "min_bytes": 0, "max_bytes": 100, "algorithm": "chain", "chunk": 65536, "codec": "none"},
 {"collective": "allreduce", "ranks": 4, "transport": "tcp", "min_bytes": 16777216, "max_bytes": 67108864, "algorithm": "ring_chunked", "chunk": 0, "codec": "bf16"},
 {"collective": "allgather", "ranks": 4, "transport": "tcp", "min_bytes": 0, "max_bytes": 100, "algorithm": "ring", "chunk": 0, "codec": "zstd"}
]}`

func writeFile(t *testing.T, text string) string {
	path := filepath.Join(t.TempDir(), "tuning.json")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestLoadValid(t *testing.T) {
	tab, err := Load(writeFile(t, validTable))
	require.NoError(t, err)
	require.Len(t, tab.Entries, 6)
	require.Equal(t, "none", tab.Entries[1].Codec, "an omitted codec is none")
	require.Equal(t, Choice{Algorithm: wire.AlgoRingChunked, Codec: codec.BF16}, tab.Entries[4].Choice())

	var buf bytes.Buffer
	require.NoError(t, tab.Write(&buf))
	again, err := Parse(&buf)
	require.NoError(t, err)
	require.Equal(t, tab.Entries, again.Entries, "Write writes what Parse reads")
}

func TestLoadInvalid(t *testing.T) {
	entry := func(fields string) string {
		base := map[string]string{"collective": `"allreduce"`, "ranks": "2", "transport": `"tcp"`,
			"min_bytes": "0", "max_bytes": "100", "algorithm": `"ring"`, "chunk": "0", "codec": `"none"`}
		for f := range strings.SplitSeq(fields, ";") {
			if k, v, ok := strings.Cut(f, "="); ok {
				base[k] = v
			}
		}
		var parts []string
		for k, v := range base {
			parts = append(parts, `"`+k+`": `+v)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	ok := entry("")
	tests := []struct {
		name, text, want string
	}{
		{"not json", `{"entries": [`, "unexpected EOF"},
		{"unknown field", `{"entries": [{"collectiv": "allreduce"}]}`, "unknown field"},
		{"unknown collective", `{"entries": [` + ok + `, ` + entry(`collective="allsum"`) + `]}`, `entry 1: invalid input: unknown collective "allsum"`},
		{"unknown algorithm", `{"entries": [` + entry(`algorithm="fast"`) + `]}`, `entry 0: invalid input: unknown algorithm "fast"`},
		{"algorithm of another collective", `{"entries": [` + entry(`algorithm="chain"`) + `]}`, "entry 0: invalid input: Allreduce has no chain algorithm"},
		{"auto", `{"entries": [` + entry(`algorithm="auto"`) + `]}`, "entry 0: invalid input: algorithm auto chooses nothing"},
		{"no ranks", `{"entries": [` + entry(`ranks=0`) + `]}`, "entry 0: invalid input: ranks 0"},
		{"unknown transport", `{"entries": [` + entry(`transport="ib"`) + `]}`, `entry 0: invalid input: transport "ib"`},
		{"reversed range", `{"entries": [` + entry(`min_bytes=10;max_bytes=5`) + `]}`, "entry 0: invalid input: byte range 10 to 5"},
		{"negative chunk", `{"entries": [` + entry(`algorithm="ring_chunked";chunk=-1`) + `]}`, "entry 0: invalid input: chunk -1"},
		{"huge chunk", `{"entries": [` + entry(`algorithm="ring_chunked";chunk=1073741825`) + `]}`, "entry 0: invalid input: chunk 1073741825"},
		{"chunk of an unpipelined algorithm", `{"entries": [` + entry(`chunk=65536`) + `]}`, "entry 0: invalid input: chunk 65536 with ring"},
		{"unknown codec", `{"entries": [` + ok + `, ` + entry(`codec="lz4";transport="shm"`) + `]}`, `entry 1: invalid input: unknown codec "lz4"`},
		{"codec names are lower case", `{"entries": [` + entry(`codec="BF16"`) + `]}`, `entry 0: invalid input: unknown codec "BF16"`},
		{"codec with shm", `{"entries": [` + entry(`algorithm="shm";codec="s2"`) + `]}`,
			"entry 0: invalid input: codec s2 with shm: the shared-memory algorithms do not compress"},
		{"codec with hierarchical", `{"entries": [` + entry(`algorithm="hierarchical";codec="bf16"`) + `]}`,
			"entry 0: invalid input: codec bf16 with hierarchical"},
		{"overlap", `{"entries": [` + ok + `, ` + entry(`transport="shm"`) + `, ` + entry(`min_bytes=100;max_bytes=200`) + `]}`,
			"entry 2 (allreduce, 2 ranks, tcp, 100 to 200 bytes) overlaps entry 0 (0 to 100 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.text)
			_, err := Load(path)
			require.ErrorIs(t, err, codec.ErrInvalid)
			require.ErrorContains(t, err, "tuning table "+path+": ")
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "none.json")
}

func TestLookup(t *testing.T) {
	tab, err := Parse(strings.NewReader(validTable))
	require.NoError(t, err)
	tests := []struct {
		name      string
		kind      wire.Kind
		ranks     int
		transport string
		bytes     int64
		want      Choice
		found     bool
	}{
		{"low end of a range", wire.KindAllreduce, 4, "tcp", 0, Choice{Algorithm: wire.AlgoTree}, true},
		{"high end of a range", wire.KindAllreduce, 4, "tcp", 8191, Choice{Algorithm: wire.AlgoTree}, true},
		{"between ranges", wire.KindAllreduce, 4, "tcp", 8192, Choice{}, false},
		{"with a chunk", wire.KindAllreduce, 4, "tcp", 4 << 20, Choice{Algorithm: wire.AlgoRingChunked, Chunk: 1 << 20}, true},
		{"above every range", wire.KindAllreduce, 4, "tcp", 64<<20 + 1, Choice{}, false},
		{"other rank count", wire.KindAllreduce, 2, "tcp", 50, Choice{Algorithm: wire.AlgoRing}, true},
		{"ranks match exactly", wire.KindAllreduce, 3, "tcp", 50, Choice{}, false},
		{"other transport", wire.KindAllreduce, 4, "shm", 50, Choice{}, false},
		{"other collective", wire.KindBcast, 4, "shm", 50, Choice{Algorithm: wire.AlgoChain, Chunk: 65536}, true},
		{"a lossy codec", wire.KindAllreduce, 4, "tcp", 64 << 20, Choice{Algorithm: wire.AlgoRingChunked, Codec: codec.BF16}, true},
		{"a lossless codec", wire.KindAllgather, 4, "tcp", 100, Choice{Algorithm: wire.AlgoRing, Codec: codec.Zstd}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := tab.Lookup(tt.kind, tt.ranks, tt.transport, tt.bytes)
			require.Equal(t, tt.found, found)
			require.Equal(t, tt.want, got)
		})
	}
	var none *Table
	_, found := none.Lookup(wire.KindAllreduce, 4, "tcp", 0)
	require.False(t, found, "a nil table chooses nothing")
}
