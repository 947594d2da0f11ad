package core

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCloseWithLateLink makes the accept loop get a link only after Close
// has closed the inbound links, as happens when a peer dials just as a
// rank closes: Close must answer that link with its goodbye, close it and
// return while the peer keeps its end open, and the peer's dial fails
// saying that the rank closed.
func TestCloseWithLateLink(t *testing.T) {
	cs, err := NewLocal(2, WithTransport("tcp"), WithTimeout(20*time.Second))
	require.NoError(t, err)
	defer cs[0].Close()
	require.Nil(t, cs[0].ep.peers[1].link.Load(), "rank 0 already has a link to rank 1")
	late := cs[1].ep
	inboxesClosed := make(chan struct{})
	var once sync.Once
	testHookInboxesClosed = func(ep *endpoint) {
		if ep != late {
			return
		}
		once.Do(func() { close(inboxesClosed) })
	}
	held := make(chan struct{})
	testHookAfterAccept = func(ep *endpoint) {
		if ep == late {
			close(held)
			select {
			case <-inboxesClosed:
			case <-time.After(10 * time.Second):
			}
		}
	}
	defer func() {
		testHookAfterAccept = func(*endpoint) {}
		testHookInboxesClosed = func(*endpoint) {}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Rank 0 opens a link to rank 1, whose accept loop holds it at the
	// hook, unanswered.
	dialed := make(chan error, 1)
	go func() {
		_, err := cs[0].ep.linkTo(ctx, 1)
		dialed <- err
	}()
	<-held
	closed := make(chan error, 1)
	go func() { closed <- cs[1].Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("rank 1's Close waits for a link it accepted after closing its inbound links")
	}
	require.ErrorIs(t, <-dialed, ErrPeerClosed)
}
