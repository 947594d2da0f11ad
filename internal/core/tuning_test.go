package core

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWithTuning(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	require.NoError(t, os.WriteFile(good, []byte(`{"entries": [{"collective": "bcast", "ranks": 2, "transport": "mem",
		"min_bytes": 0, "max_bytes": 10, "algorithm": "chain", "chunk": 0, "codec": "none"}]}`), 0o600))
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"entries": [{"collective": "bcast", "ranks": 2, "transport": "mem",
		"min_bytes": 0, "max_bytes": 10, "algorithm": "ring"}]}`), 0o600))

	tests := []struct {
		name    string
		path    string
		entries int
		wantErr string
	}{
		{"a table", good, 1, ""},
		{"no table", "", 0, ""},
		{"a bad entry", bad, 0, "tuning table " + bad + ": entry 0: invalid input: Bcast has no ring algorithm"},
		{"a missing file", filepath.Join(dir, "missing.json"), 0, "missing.json: no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := NewLocal(2, WithTuning(tt.path))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			for _, c := range cs {
				defer c.Close()
			}
			require.Equal(t, "mem", cs[1].Transport())
			if tt.entries == 0 {
				require.Nil(t, cs[1].Tuning())
				return
			}
			require.Len(t, cs[1].Tuning().Entries, tt.entries)
		})
	}
}

func TestTuningFromEnv(t *testing.T) {
	env := map[string]string{"GOCOLL_RANK": "0", "GOCOLL_SIZE": "2", "GOCOLL_ADDR": "127.0.0.1:1234", "GOCOLL_TUNING": "/tmp/t.json"}
	spec, err := jobFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err)
	require.Equal(t, "/tmp/t.json", spec.tuning)
}
