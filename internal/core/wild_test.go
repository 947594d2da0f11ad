package core

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// TestWildcardsSkipCollectiveTraffic: a message of a collective (a
// negative tag) that arrived first is neither probed nor received by a
// wildcard; the collective's own receive still gets it. Over every kind
// of link: each has its own path from arrival to matching.
func TestWildcardsSkipCollectiveTraffic(t *testing.T) {
	for _, tr := range []string{"mem", "tcp", "shm"} {
		t.Run(tr, func(t *testing.T) {
			cs, err := NewLocal(2, WithTransport(tr))
			require.NoError(t, err)
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			ctx := context.Background()
			internal := InternalTag(5, 1)
			h := wire.Header{Kind: wire.KindSend, DType: kernel.Uint8, Tag: internal, Count: 1, Length: 1, Root: -1}
			require.NoError(t, cs[1].SendHeader(ctx, 0, &h, []byte{7}))
			require.NoError(t, cs[1].Send(ctx, 0, 3, []byte{9}))
			_, err = cs[0].Probe(ctx, 1, 3) // the link delivers in order: both are in
			require.NoError(t, err)
			st, ok, err := cs[0].Iprobe(AnySource, AnyTag)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, Status{Source: 1, Tag: 3, Bytes: 1}, st)
			buf := make([]byte, 1)
			st, err = cs[0].Recv(ctx, AnySource, AnyTag, buf)
			require.NoError(t, err)
			require.Equal(t, 3, st.Tag)
			require.Equal(t, byte(9), buf[0])
			_, ok, err = cs[0].Iprobe(AnySource, AnyTag)
			require.NoError(t, err)
			require.False(t, ok, "a wildcard probe saw the collective's message")
			n, got, err := cs[0].RecvHeader(ctx, 1, internal, buf)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, internal, got.Tag)
			require.Equal(t, byte(7), buf[0])
		})
	}
}
