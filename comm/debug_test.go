package comm_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/testutil"
)

// TestDebugLogsSetup checks that a debug logger hears what a
// communicator is made of: every communicator with its segment or none,
// and every link as it comes up, with its kind.
func TestDebugLogsSetup(t *testing.T) {
	for _, tc := range []struct {
		transport string
		want      []string
	}{
		{"mem", []string{"msg=communicator", "comm=0x1", "size=2", "segment=none", "msg=\"link up\"", "kind=mem"}},
		{"auto", []string{"msg=communicator", "segment=\"2 ranks,", "kind=shm"}},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			var log testutil.SyncBuffer
			cs := newJob(t, 2, comm.WithTransport(tc.transport),
				comm.WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				peer := 1 - c.Rank()
				errc := make(chan error, 1)
				go func() { errc <- c.Send(ctx, peer, 1, []byte{1}) }()
				if _, err := c.Recv(ctx, peer, 1, make([]byte, 1)); err != nil {
					return err
				}
				return <-errc
			})
			for _, want := range tc.want {
				require.Contains(t, log.String(), want)
			}
		})
	}
}
