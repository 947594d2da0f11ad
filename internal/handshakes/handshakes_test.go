package handshakes

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCutOldest: connections are cut in the order they arrived, whatever
// was removed in between, and a cut connection is closed.
func TestCutOldest(t *testing.T) {
	var s Set
	var conns []net.Conn
	for range 4 {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		conns = append(conns, a)
		s.Add(a)
	}
	require.Equal(t, 4, s.Len())
	require.True(t, s.Remove(conns[0]))
	require.False(t, s.Remove(conns[0]), "removed twice")

	require.Equal(t, conns[1], s.CutOldest())
	_, err := conns[1].Write([]byte{1})
	require.ErrorIs(t, err, io.ErrClosedPipe, "the cut connection is closed")
	require.False(t, s.Remove(conns[1]), "a cut connection is gone")
	require.Equal(t, conns[2], s.CutOldest())
	require.Equal(t, 1, s.Len())

	s.CloseAll()
	_, err = conns[3].Write([]byte{1})
	require.ErrorIs(t, err, io.ErrClosedPipe)
}
