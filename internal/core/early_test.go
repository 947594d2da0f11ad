package core

import (
	"context"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/wire"
)

// payloadLink is a link whose payload reads fill the slice with a
// pattern and remember where they wrote. The rest of transport.Link is
// not called here.
type payloadLink struct {
	transport.Link
	into []*byte
}

func (l *payloadLink) ReadPayload(p []byte) error {
	for i := range p {
		p[i] = byte(i)
	}
	if len(p) > 0 {
		l.into = append(l.into, &p[0])
	}
	return nil
}

// TestLateReceiveTakesALargeMessageInPlace: a large message whose
// receive is about to be posted, by a goroutine that has not run yet,
// is read straight into that receive's buffer, not into an early
// message's buffer and copied out again. With one processor, the
// reading goroutine used to read on without letting the receiver post
// (earlyYieldMin).
func TestLateReceiveTakesALargeMessageInPlace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	cs, err := NewLocal(2)
	require.NoError(t, err)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for _, tc := range []struct {
		name    string
		size    int
		inPlace bool
	}{
		{"large", earlyYieldMin, true},
		{"small", earlyYieldMin - 1, false}, // copied: not worth a yield
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, tag := cs[1], len(tc.name)
			buf := make([]byte, tc.size)
			var r *Request
			var postErr error
			posted := make(chan struct{})
			go func() {
				defer close(posted)
				r, postErr = c.Irecv(0, tag, buf)
			}()
			h := wire.Header{Kind: wire.KindSend, Comm: c.id, Tag: int64(tag), DType: kernel.Uint8,
				Length: uint64(tc.size), Count: uint64(tc.size), Root: -1}
			l := &payloadLink{}
			require.NoError(t, c.ep.receive(0, &c.ep.inboxes[0], l, &h, true))
			<-posted
			require.NoError(t, postErr)
			st, err := r.Wait(context.Background())
			require.NoError(t, err)
			require.Equal(t, tc.size, st.Bytes)
			for i, b := range buf {
				require.Equal(t, byte(i), b, "byte %d", i)
			}
			require.Len(t, l.into, 1)
			require.Equal(t, tc.inPlace, unsafe.Pointer(l.into[0]) == unsafe.Pointer(&buf[0]), "read straight into the receive's buffer")
		})
	}
}
