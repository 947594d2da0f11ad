package core

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHugePagesReachTheSegment: GOCOLL_HUGE_PAGES, unset or 1, gives
// each rank's segment a collapser for its buffers, and 0 none; an option
// overrides the variable.
func TestHugePagesReachTheSegment(t *testing.T) {
	tests := []struct {
		value string // "" for unset
		opts  []Option
		on    bool
	}{
		{"", nil, true},
		{"1", nil, true},
		{"0", nil, false},
		{"0", []Option{WithHugePages(true)}, true},
		{"1", []Option{WithHugePages(false)}, false},
	}
	for _, tt := range tests {
		t.Run("GOCOLL_HUGE_PAGES="+tt.value+"/options="+strconv.Itoa(len(tt.opts)), func(t *testing.T) {
			const n = 2
			addr := freeAddr(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			comms, errs := make([]*Comm, n), make([]error, n)
			var wg sync.WaitGroup
			for r := range n {
				env := map[string]string{"GOCOLL_RANK": strconv.Itoa(r), "GOCOLL_SIZE": strconv.Itoa(n), "GOCOLL_ADDR": addr}
				if tt.value != "" {
					env["GOCOLL_HUGE_PAGES"] = tt.value
				}
				opts := append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, tt.opts...)
				wg.Go(func() { comms[r], errs[r] = initFromEnv(ctx, mapEnv(env), opts) })
			}
			wg.Wait()
			defer closeAtOnce(comms)
			for r := range n {
				require.NoError(t, errs[r], "rank %d", r)
				s := comms[r].Segment()
				require.NotNil(t, s, "rank %d's segment", r)
				require.Equal(t, tt.on, s.huge != nil, "rank %d's collapser", r)
			}
		})
	}
}
