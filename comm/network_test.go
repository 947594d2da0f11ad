package comm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/comm"
)

// TestLinksPerPair: with the auto transport, ranks that share a host
// talk through shared memory and the others over tcp, in one job; with
// shm every link is shared memory, and ranks on other hosts are refused.
func TestLinksPerPair(t *testing.T) {
	hosts := []string{"a", "a", "b", "b", "a"}
	tests := []struct {
		transport string
		hosts     []string
	}{
		{"auto", hosts},
		{"auto", []string{"a", "a", "a"}},
		{"shm", []string{"a", "a", "a"}},
		{"tcp", hosts},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.transport, "/", tt.hosts), func(t *testing.T) {
			n := len(tt.hosts)
			cs := newJob(t, n, comm.WithTransport(tt.transport), comm.WithHostIdentity(func(r int) string { return tt.hosts[r] }))
			runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
				me := c.Rank()
				// Every rank sends to every other and receives from each.
				errc := make(chan error, n)
				for dst := range n {
					if dst != me {
						go func() { errc <- c.Send(ctx, dst, 1, []byte{byte(me), byte(dst)}) }()
					}
				}
				for src := range n {
					if src == me {
						continue
					}
					got := make([]byte, 2)
					if _, err := c.Recv(ctx, src, 1, got); err != nil {
						return err
					}
					if got[0] != byte(src) || got[1] != byte(me) {
						return fmt.Errorf("rank %d got %v from rank %d", me, got, src)
					}
				}
				for range n - 1 {
					if err := <-errc; err != nil {
						return err
					}
				}
				return nil
			})
			for _, c := range cs {
				for dst := range n {
					if dst == c.Rank() {
						continue
					}
					want := "tcp"
					if tt.transport != "tcp" && tt.hosts[dst] == tt.hosts[c.Rank()] {
						want = "shm"
					}
					require.Equal(t, want, comm.LinkKind(c, dst), "link from rank %d to rank %d", c.Rank(), dst)
				}
			}
		})
	}
	t.Run("shm across hosts", func(t *testing.T) {
		_, err := comm.NewLocal(3, comm.WithTransport("shm"), comm.WithHostIdentity(func(r int) string { return hosts[r] }))
		require.ErrorIs(t, err, comm.ErrInvalid)
		require.ErrorContains(t, err, `the shm transport needs every rank on one host, but rank 0 runs on "a" and rank 2 on "b"`)
	})
}
