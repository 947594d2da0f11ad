package core

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSettledLossSparesLeavers: a loss names the ranks found lost while it
// settles, except those that left knowingly: a rank that passed a failure
// on (and may have exited before a write to it broke) and a rank that
// said goodbye.
func TestSettledLossSparesLeavers(t *testing.T) {
	cs, err := NewLocal(4, WithLossSettle(50*time.Millisecond), WithHeartbeat(0))
	require.NoError(t, err)
	ep := cs[0].ep
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})

	lost := errors.New("link broke")
	ep.lose(3, lost, false) // the loss itself
	ep.leaving(1)           // a failure frame came from rank 1 ...
	ep.lose(1, lost, false) // ... and then a write to it broke
	ep.inboxes[2].close(ErrPeerClosed)
	ep.lose(2, lost, false) // rank 2 said goodbye, then a write broke

	<-ep.failed
	var pe *PeerError
	require.ErrorAs(t, ep.err(), &pe)
	require.Equal(t, []int{3}, pe.Ranks)
}
