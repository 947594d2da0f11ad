package core

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/flight"
	"github.com/gocoll/gocoll/internal/testutil"
)

// TestDumpGoesWhereAsked checks where a rank's dump goes: to the file
// that GOCOLL_DUMP names, with the rank in its name, or, without one, to
// the rank's logger, as a launcher other than gocoll run sees it.
func TestDumpGoesWhereAsked(t *testing.T) {
	for _, tc := range []struct {
		name string
		path bool
	}{{"log", false}, {"file", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var log testutil.SyncBuffer
			cs, err := NewLocal(2, WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			require.NoError(t, err)
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			ep := cs[1].ep
			path := filepath.Join(t.TempDir(), "dump.json")
			if tc.path {
				ep.opts.dumpPath = path
			}
			ep.dump("asked")
			if !tc.path {
				require.Contains(t, log.String(), "flight recorder")
				require.Contains(t, log.String(), "reason=asked")
				return
			}
			b, err := os.ReadFile(flight.RankPath(path, 1))
			require.NoError(t, err)
			d, err := flight.ReadDump(bytes.NewReader(b))
			require.NoError(t, err)
			require.Equal(t, 1, d.Rank)
			require.Equal(t, "asked", d.Reason)
			require.NotContains(t, log.String(), "flight recorder")
		})
	}
}
