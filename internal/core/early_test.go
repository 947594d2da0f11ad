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
// (earlyYieldMin). The yield lets the poster run nearly always, not
// always (the scheduler takes the yielder back from the global queue
// one turn in 61, for fairness), so a large message is required in
// place in most of several tries; a small one never is.
func TestLateReceiveTakesALargeMessageInPlace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	cs, err := NewLocal(2)
	require.NoError(t, err)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	const tries = 20
	for _, tc := range []struct {
		name       string
		size       int
		minInPlace int
		maxInPlace int
	}{
		{"large", earlyYieldMin, tries * 3 / 4, tries},
		{"small", earlyYieldMin - 1, 0, 0}, // copied: not worth a yield
	} {
		t.Run(tc.name, func(t *testing.T) {
			inPlace := 0
			for try := range tries {
				if lateReceiveInPlace(t, cs[1], try, tc.size) {
					inPlace++
				}
			}
			require.GreaterOrEqual(t, inPlace, tc.minInPlace, "messages read straight into the receive's buffer")
			require.LessOrEqual(t, inPlace, tc.maxInPlace, "messages read straight into the receive's buffer")
		})
	}
}

// lateReceiveInPlace has c's reading side take a message of size bytes
// with tag from rank 0 (through a payloadLink) while a goroutine that has
// not run yet is about to post its receive, checks what the receive got,
// and reports whether the payload was read straight into its buffer.
func lateReceiveInPlace(t *testing.T, c *Comm, tag, size int) bool {
	t.Helper()
	buf := make([]byte, size)
	var r *Request
	var postErr error
	posted := make(chan struct{})
	go func() {
		defer close(posted)
		r, postErr = c.Irecv(0, tag, buf)
	}()
	h := wire.Header{Kind: wire.KindSend, Comm: c.id, Tag: int64(tag), DType: kernel.Uint8,
		Length: uint64(size), Count: uint64(size), Root: -1}
	l := &payloadLink{}
	require.NoError(t, c.ep.receive(0, &c.ep.inboxes[0], l, &h, true))
	<-posted
	require.NoError(t, postErr)
	st, err := r.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, size, st.Bytes)
	for i, b := range buf {
		if b != byte(i) {
			t.Fatalf("byte %d of the message is %d, want %d", i, b, byte(i))
		}
	}
	require.Len(t, l.into, 1)
	return unsafe.Pointer(l.into[0]) == unsafe.Pointer(&buf[0])
}
