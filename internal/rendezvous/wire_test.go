package rendezvous

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// validRequests are one well-formed frame of each request type.
func validRequests() []request {
	return []request{
		{typ: tHello, version: protoVersion, size: 4},
		{typ: tSet, id: 1, key: "addr/3", value: []byte("10.0.0.3:4000")},
		{typ: tSet, id: 2, key: "k", value: []byte{}},
		{typ: tGet, id: 3, key: "addr/3"},
		{typ: tGet, id: 1<<64 - 1, key: strings.Repeat("x", MaxKey)},
		{typ: tCancel, id: 3},
		{typ: tAbort, id: 4, value: []byte("loss is NaN")},
		{typ: tAbort, id: 5, value: []byte{}},
		{typ: tLose, id: 6, rank: 3, value: []byte("connection to rank 3 lost: EOF")},
		{typ: tLose, id: 7, rank: MaxSize - 1, value: []byte{}},
		{typ: tBye},
		{typ: tBeat, period: MinHeartbeat},
		{typ: tBeat, period: 4 * time.Second},
	}
}

func TestRequestRoundTrip(t *testing.T) {
	withValue := []frameType{tSet, tAbort, tLose}
	for _, want := range validRequests() {
		b := encodeRequest(want)
		typ, body, err := readFrame(bytes.NewReader(b), true)
		require.NoError(t, err)
		got, err := parseRequest(typ, body)
		require.NoError(t, err)
		if want.value == nil && slices.Contains(withValue, want.typ) {
			want.value = []byte{}
		}
		if got.value == nil && slices.Contains(withValue, got.typ) {
			got.value = []byte{}
		}
		require.Equal(t, want, got)
	}
}

func TestReadFrameRejects(t *testing.T) {
	frame := func(n uint32, typ frameType, body ...byte) []byte {
		return append(appendHeader(nil, typ, int(n)), body...)
	}
	tests := []struct {
		name       string
		in         []byte
		fromClient bool
		want       error
	}{
		{"empty stream", nil, true, io.EOF},
		{"cut header", []byte{1, 0}, true, io.ErrUnexpectedEOF},
		{"cut body", frame(10, tGet, 1, 2), true, io.ErrUnexpectedEOF},
		{"unknown request", frame(0, 0x7f), true, ErrProtocol},
		{"reply type from a client", frame(1, tWelcome, 1), true, ErrProtocol},
		{"request type from the server", frame(0, tBye), false, ErrProtocol},
		{"hello too short", frame(4, tHello, 1, 2, 3, 4), true, ErrProtocol},
		{"get too long", frame(idLen+MaxKey+1, tGet), true, ErrProtocol},
		{"get without key", frame(idLen, tGet, make([]byte, idLen)...), true, ErrProtocol},
		{"set too long", frame(idLen+2+MaxKey+MaxValue+1, tSet), true, ErrProtocol},
		{"abort reason too long", frame(idLen+MaxReason+1, tAbort), true, ErrProtocol},
		{"loss without a rank", frame(idLen+3, tLose), true, ErrProtocol},
		{"loss reason too long", frame(idLen+4+MaxReason+1, tLose), true, ErrProtocol},
		{"bye with a body", frame(1, tBye, 0), true, ErrProtocol},
		{"beat without a period", frame(0, tBeat), true, ErrProtocol},
		{"pulse with a body", frame(1, tPulse, 0), false, ErrProtocol},
		{"value too long", frame(idLen+MaxValue+1, tValue), false, ErrProtocol},
		{"huge length", frame(1<<32-1, tSet), true, ErrProtocol},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := readFrame(bytes.NewReader(tc.in), tc.fromClient)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestParseRequestRejects(t *testing.T) {
	tests := []struct {
		name string
		typ  frameType
		body []byte
	}{
		{"size zero", tHello, []byte{1, 0, 0, 0, 0}},
		{"size too large", tHello, []byte{1, 0xff, 0xff, 0xff, 0xff}},
		{"set key length zero", tSet, append(make([]byte, idLen), 0, 0, 'v')},
		{"set key past the body", tSet, append(make([]byte, idLen), 5, 0, 'k')},
		{"set key too long", tSet, append(append(make([]byte, idLen), 0x01, 0x04), make([]byte, MaxKey+1)...)},
		{"loss of a rank beyond MaxSize", tLose, append(make([]byte, idLen), 0xff, 0xff, 0xff, 0xff)},
		{"beat period zero", tBeat, []byte{0, 0, 0, 0}},
		{"beat period below MinHeartbeat", tBeat, []byte{99, 0, 0, 0}},
		{"beat period above MaxHeartbeat", tBeat, []byte{0xff, 0xff, 0xff, 0xff}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRequest(tc.typ, tc.body)
			require.ErrorIs(t, err, ErrProtocol)
		})
	}
}

func TestParseReply(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  reply
		err   error
	}{
		{"welcome", welcomeFrame(), reply{typ: tWelcome, version: protoVersion}, nil},
		{"refuse", textFrame(tRefuse, "no"), reply{typ: tRefuse, msg: "no"}, nil},
		{"ok", okFrame(7), reply{typ: tOK, id: 7}, nil},
		{"value", append(valueHeader(8, 2), 'h', 'i'), reply{typ: tValue, id: 8, value: []byte("hi")}, nil},
		{"event", eventFrame(Event{Kind: Aborted, Rank: 3, Reason: "why"}),
			reply{typ: tEvent, ev: Event{Kind: Aborted, Rank: 3, Reason: "why"}}, nil},
		{"gone", textFrame(tGone, "bye"), reply{typ: tGone, msg: "bye"}, nil},
		{"pulse", pulseFrame(), reply{typ: tPulse}, nil},
		{"event of kind StoreGone", eventFrame(Event{Kind: StoreGone, Rank: 1}), reply{}, ErrProtocol},
		{"event of kind 0", eventFrame(Event{Rank: 1}), reply{}, ErrProtocol},
		{"event about a huge rank", eventFrame(Event{Kind: Lost, Rank: MaxSize}), reply{}, ErrProtocol},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			typ, body, err := readFrame(bytes.NewReader(tc.frame), false)
			require.NoError(t, err)
			got, err := parseReply(typ, body)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestClip(t *testing.T) {
	require.Equal(t, "short", clip("short"))
	require.Len(t, clip(strings.Repeat("a", MaxReason+10)), MaxReason)
	// A cut never splits a UTF-8 sequence.
	s := clip("a" + strings.Repeat("é", MaxReason))
	require.Equal(t, "a"+strings.Repeat("é", (MaxReason-1)/2), s)
}

// FuzzServerFrames feeds arbitrary bytes to the parser the store runs on
// every client frame, and to the whole request loop of a member. Nothing
// may panic or allocate beyond the bounds; a frame that parses re-encodes
// to the same bytes, and the store's bookkeeping of waiting gets stays
// consistent whatever a client sends.
func FuzzServerFrames(f *testing.F) {
	var all []byte
	for _, r := range validRequests() {
		b := encodeRequest(r)
		f.Add(b)
		all = append(all, b...)
	}
	f.Add(all)
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, byte(tSet)})
	f.Add(append(encodeRequest(request{typ: tGet, id: 1, key: "a"}), encodeRequest(request{typ: tGet, id: 1, key: "b"})...))
	f.Add(append(encodeRequest(request{typ: tGet, id: 9, key: "a"}), encodeRequest(request{typ: tCancel, id: 9})...))

	f.Fuzz(func(t *testing.T, data []byte) {
		// The parser alone.
		typ, body, err := readFrame(bytes.NewReader(data), true)
		if err == nil {
			req, err := parseRequest(typ, body)
			if err == nil {
				require.Equal(t, data[:frameHeaderLen+len(body)], encodeRequest(req))
			} else {
				require.ErrorIs(t, err, ErrProtocol)
			}
		} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			require.ErrorIs(t, err, ErrProtocol)
		}

		// The request loop of a member.
		s, err := NewServer(2, nil, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		sess := &session{rank: 1, peer: discardPeer{}, gets: make(map[uint64]string)}
		s.mu.Lock()
		require.NoError(t, s.joinLocked(sess))
		s.mu.Unlock()
		// Frames come from data; the connection only takes the deadlines
		// that beats set.
		conn, other := net.Pipe()
		defer conn.Close()
		defer other.Close()
		wc := newWireConn(conn, bufio.NewReader(bytes.NewReader(data)))
		_ = s.readRequests(sess, wc)
		n := 0
		for key, ws := range s.waiters {
			require.NotEmpty(t, ws)
			for _, w := range ws {
				require.Equal(t, key, sess.gets[w.id])
				n++
			}
		}
		require.Equal(t, len(sess.gets), n)
	})
}

// discardPeer stands in for a client that reads nothing back.
type discardPeer struct{}

func (discardPeer) ok(uint64)            {}
func (discardPeer) value(uint64, []byte) {}
func (discardPeer) event(Event)          {}
func (discardPeer) gone(string)          {}
func (discardPeer) pulse()               {}
func (discardPeer) cut()                 {}
