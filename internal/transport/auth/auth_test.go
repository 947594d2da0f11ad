package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/transport"
)

type result struct {
	peer  int
	jobID uint64
	err   error
}

// handshake runs Client and Server against each other over a net.Pipe.
func handshake(t *testing.T, cp Params, wantPeer int, sp Params, admit func(int) error) (client, server result) {
	t.Helper()
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	deadline := time.Now().Add(5 * time.Second)
	require.NoError(t, c.SetDeadline(deadline))
	require.NoError(t, s.SetDeadline(deadline))
	done := make(chan result, 1)
	go func() {
		peer, err := Server(s, sp, admit)
		// Unblock a client that still waits for bytes the server will
		// never send.
		s.Close()
		done <- result{peer: peer, err: err}
	}()
	client.peer, client.jobID, client.err = Client(c, cp, wantPeer)
	c.Close()
	server = <-done
	return client, server
}

func TestHandshake(t *testing.T) {
	secret := []byte("job secret")
	const job = 0x1234
	base := func(rank int) Params {
		return Params{Secret: secret, JobID: job, Service: ServiceLink, Rank: rank}
	}
	tests := []struct {
		name     string
		client   Params
		wantPeer int
		server   Params
		admit    func(int) error
		// clientErr and serverErr are substrings of the errors; empty
		// means success.
		clientErr, serverErr string
		clientByPeer         bool
	}{
		{name: "good", client: base(3), wantPeer: 1, server: base(1)},
		{name: "any peer", client: base(3), wantPeer: -1, server: base(7)},
		{name: "learn job", client: Params{Secret: secret, Service: ServiceLink, Rank: 2}, wantPeer: 0, server: base(0)},
		{name: "empty secret", client: Params{JobID: job, Service: ServiceStore, Rank: 5}, wantPeer: 0,
			server: Params{JobID: job, Service: ServiceStore, Rank: 0}},
		{name: "dialer without rank", client: Params{Secret: secret, JobID: job, Service: ServiceStore, Rank: -1}, wantPeer: 0,
			server: Params{Secret: secret, JobID: job, Service: ServiceStore, Rank: 0}},
		{name: "client has wrong secret", client: Params{Secret: []byte("guess"), JobID: job, Service: ServiceLink, Rank: 3},
			wantPeer: 1, server: base(1),
			clientErr: "acceptor failed authentication", serverErr: "refused by the peer: acceptor failed authentication"},
		{name: "server has wrong secret", client: base(3), wantPeer: 1,
			server:    Params{Secret: []byte("other"), JobID: job, Service: ServiceLink, Rank: 1},
			clientErr: "acceptor failed authentication", serverErr: "refused by the peer: acceptor failed authentication"},
		{name: "client has no secret", client: Params{JobID: job, Service: ServiceLink, Rank: 3}, wantPeer: 1, server: base(1),
			clientErr: "acceptor failed authentication", serverErr: "acceptor failed authentication"},
		{name: "wrong job", client: Params{Secret: secret, JobID: job + 1, Service: ServiceLink, Rank: 3}, wantPeer: 1, server: base(1),
			clientErr: "dialer belongs to job 0x1235, this end to job 0x1234", serverErr: "refusing the peer", clientByPeer: true},
		{name: "wrong service", client: Params{Secret: secret, JobID: job, Service: ServiceStore, Rank: 3}, wantPeer: 1, server: base(1),
			clientErr: `dialer asked for service 'S', this end serves 'L'`, serverErr: "refusing the peer", clientByPeer: true},
		{name: "wrong wanted rank", client: base(3), wantPeer: 2, server: base(1),
			clientErr: "dialer wanted rank 2, this end is rank 1", serverErr: "refusing the peer", clientByPeer: true},
		{name: "admit refuses", client: base(3), wantPeer: 1, server: base(1),
			admit:     func(r int) error { return fmt.Errorf("rank %d is already connected", r) },
			clientErr: "rank 3 is already connected", serverErr: "rank 3 is already connected", clientByPeer: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var admitted []int
			admit := func(r int) error {
				admitted = append(admitted, r)
				if tc.admit != nil {
					return tc.admit(r)
				}
				return nil
			}
			c, s := handshake(t, tc.client, tc.wantPeer, tc.server, admit)
			if tc.clientErr == "" {
				require.NoError(t, c.err)
				require.NoError(t, s.err)
				assert.Equal(t, tc.server.Rank, c.peer)
				assert.Equal(t, tc.server.JobID, c.jobID)
				assert.Equal(t, tc.client.Rank, s.peer)
				assert.Equal(t, []int{tc.client.Rank}, admitted)
				return
			}
			require.Error(t, c.err)
			require.Error(t, s.err)
			assert.ErrorIs(t, c.err, transport.ErrRefused)
			assert.ErrorIs(t, s.err, transport.ErrRefused)
			assert.Contains(t, c.err.Error(), tc.clientErr)
			assert.Contains(t, s.err.Error(), tc.serverErr)
			var re *RefusedError
			require.ErrorAs(t, c.err, &re)
			assert.Equal(t, tc.clientByPeer, re.ByPeer)
			assert.Equal(t, -1, c.peer)
			assert.Equal(t, -1, s.peer)
			if tc.admit == nil {
				assert.Empty(t, admitted, "admit must not be called for a refused dialer")
			}
		})
	}
}

// validHello is a well-formed hello for a link.
func validHello() [helloSize]byte {
	var hb [helloSize]byte
	copy(hb[:], magic)
	hb[len(magic)] = Version
	hb[len(magic)+1] = ServiceLink
	return hb
}

// TestServerChecksDialerMAC plays a dialer that ignores the acceptor's
// challenge and answers with a forged MAC.
func TestServerChecksDialerMAC(t *testing.T) {
	c, s := net.Pipe()
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	require.NoError(t, s.SetDeadline(time.Now().Add(5*time.Second)))
	done := make(chan error, 1)
	go func() {
		_, err := Server(s, Params{Secret: []byte("s"), JobID: 1, Service: ServiceLink, Rank: 0}, nil)
		s.Close()
		done <- err
	}()
	hb := validHello()
	_, err := c.Write(hb[:])
	require.NoError(t, err)
	var ch [1 + challengeSize]byte
	_, err = io.ReadFull(c, ch[:])
	require.NoError(t, err)
	var proof [1 + proofSize]byte
	(&claim{from: 1, want: 0, jobID: 1}).marshal(proof[1:])
	rand.Read(proof[1+claimSize:])
	_, err = c.Write(proof[:])
	require.NoError(t, err)
	err = readStatus(c, proof[:1], "reply")
	require.ErrorIs(t, err, transport.ErrRefused)
	assert.Contains(t, err.Error(), "dialer claiming rank 1 failed authentication")
	err = <-done
	require.ErrorIs(t, err, transport.ErrRefused)
	assert.Contains(t, err.Error(), "failed authentication")
}

// recorder keeps a copy of everything read through it.
type recorder struct {
	io.ReadWriter
	got bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.ReadWriter.Read(p)
	r.got.Write(p[:n])
	return n, err
}

// The acceptor of the stranger tests: its rank and job id must never
// reach a dialer that has not proven the secret.
const acceptorRank, acceptorJob = 0x5eed, 0xfeedfacecafebeef

// secretAcceptor runs Server for acceptorRank of acceptorJob, with the
// secret "job secret" and admit, on one end of a pipe and returns the
// other end, closed when the test ends.
func secretAcceptor(t *testing.T, admit func(rank int) error) net.Conn {
	c, s := net.Pipe()
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	require.NoError(t, s.SetDeadline(time.Now().Add(5*time.Second)))
	go func() {
		Server(s, Params{Secret: []byte("job secret"), JobID: acceptorJob, Service: ServiceLink, Rank: acceptorRank}, admit)
		s.Close()
	}()
	return c
}

// assertLearntNothing checks that got, all a stranger read, holds
// neither the acceptor's rank nor its job id.
func assertLearntNothing(t *testing.T, got string) {
	t.Helper()
	var rankBytes, jobBytes [8]byte
	binary.LittleEndian.PutUint64(rankBytes[:], acceptorRank)
	binary.LittleEndian.PutUint64(jobBytes[:], acceptorJob)
	assert.NotContains(t, got, string(rankBytes[:]), "the stranger learnt the acceptor's rank")
	assert.NotContains(t, got, string(jobBytes[:]), "the stranger learnt the job id")
}

// TestStrangerLearnsNothing runs Client with a wrong secret, or none,
// against an acceptor: nothing it reads may carry the acceptor's rank or
// the job id.
func TestStrangerLearnsNothing(t *testing.T) {
	for _, secret := range [][]byte{nil, []byte("guess")} {
		t.Run(fmt.Sprintf("secret=%q", secret), func(t *testing.T) {
			c := secretAcceptor(t, nil)
			rec := &recorder{ReadWriter: c}
			_, _, err := Client(rec, Params{Secret: secret, Service: ServiceLink, Rank: 3}, -1)
			require.ErrorIs(t, err, transport.ErrRefused)
			assertLearntNothing(t, rec.got.String())
		})
	}
}

// TestWrongSecretLearnsNothing lets a dialer with the wrong secret (or
// none) ignore the failed challenge and send a proof anyway: every byte
// it gets back must be free of the acceptor's rank and job id, and the
// acceptor must not call admit.
func TestWrongSecretLearnsNothing(t *testing.T) {
	for _, secret := range [][]byte{nil, []byte("guess")} {
		t.Run(fmt.Sprintf("secret=%q", secret), func(t *testing.T) {
			admitted := make(chan int, 1)
			c := secretAcceptor(t, func(r int) error { admitted <- r; return nil })
			// The stranger speaks the protocol but ignores the result of the
			// challenge check and sends a proof anyway, then reads all.
			hb := validHello()
			_, err := c.Write(hb[:])
			require.NoError(t, err)
			var got bytes.Buffer
			var ch [1 + challengeSize]byte
			_, err = io.ReadFull(c, ch[:])
			require.NoError(t, err)
			got.Write(ch[:])
			var proof [1 + proofSize]byte
			(&claim{from: 3, want: -1}).marshal(proof[1:])
			var md [macSize]byte
			mac(&md, secret, labelDialer, hb[:], ch[1:], proof[1:1+claimSize])
			copy(proof[1+claimSize:], md[:])
			_, err = c.Write(proof[:])
			require.NoError(t, err)
			io.Copy(&got, c)
			assertLearntNothing(t, got.String())
			assert.Contains(t, got.String(), "failed authentication")
			select {
			case r := <-admitted:
				t.Fatalf("a stranger was admitted as rank %d", r)
			default:
			}
		})
	}
}

// rw reads from r and writes to w.
type rw struct {
	io.Reader
	io.Writer
}

func TestServerGarbage(t *testing.T) {
	random := make([]byte, 4096)
	rand.Read(random)
	valid := validHello()
	badVersion := valid
	badVersion[len(magic)] = 9
	var badRank [1 + proofSize]byte
	(&claim{from: -7, want: 0}).marshal(badRank[1:])
	tests := []struct {
		name    string
		input   []byte
		errText string
	}{
		{"empty", nil, "unexpected EOF"},
		{"random", random, "bad magic"},
		{"http", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("x", 100)), "bad magic"},
		{"version 1", []byte("GCAUTH1" + strings.Repeat("\x00", 60)), "bad magic"},
		{"short hello", valid[:20], "unexpected EOF"},
		{"bad version", badVersion[:], "unsupported handshake version 9"},
		{"hello then nothing", valid[:], "reading proof: unexpected EOF"},
		{"hello then bad status", append(valid[:], 7), "invalid status byte 0x7"},
		{"hello then refusal cut short", append(valid[:], statusRefused, 200, 'x'), "unexpected EOF"},
		{"hello then random proof", append(append(valid[:], statusOK), random[:proofSize]...), "failed authentication"},
		{"hello then unproven bad rank", append(valid[:], badRank[:]...), "failed authentication"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			peer, err := Server(rw{bytes.NewReader(tc.input), &out}, Params{Secret: []byte("k"), JobID: 1, Service: ServiceLink}, nil)
			require.Error(t, err)
			assert.Equal(t, -1, peer)
			assert.Contains(t, err.Error(), tc.errText)
			assert.True(t, errors.Is(err, transport.ErrRefused) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrProtocol),
				"error %v is neither a refusal nor a protocol error", err)
			assert.LessOrEqual(t, out.Len(), 1+challengeSize+2+MaxReason)
		})
	}
}

func TestClientGarbage(t *testing.T) {
	random := make([]byte, 4096)
	rand.Read(random)
	long := append([]byte{statusRefused, 255}, bytes.Repeat([]byte{0, '\n', 0xff}, 85)...)
	tests := []struct {
		name    string
		input   []byte
		errText string
	}{
		{"nothing", nil, "reading challenge: unexpected EOF"},
		{"random", append([]byte{statusOK}, random...), "acceptor failed authentication"},
		{"bad status", []byte{9}, "invalid status byte"},
		{"refusal with control characters", long, "refused by the peer: " + strings.Repeat("?", 255)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, _, err := Client(rw{bytes.NewReader(tc.input), &out}, Params{Secret: []byte("k"), Service: ServiceLink}, -1)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errText)
		})
	}
}

func TestLongAdmitReasonIsCut(t *testing.T) {
	p := Params{Secret: []byte("k"), JobID: 1, Service: ServiceLink, Rank: 0}
	c, s := handshake(t, Params{Secret: []byte("k"), JobID: 1, Service: ServiceLink, Rank: 1}, 0, p,
		func(int) error { return errors.New(strings.Repeat("a", 1000)) })
	require.ErrorIs(t, c.err, transport.ErrRefused)
	require.ErrorIs(t, s.err, transport.ErrRefused)
	var re *RefusedError
	require.ErrorAs(t, c.err, &re)
	assert.Equal(t, strings.Repeat("a", MaxReason), re.Reason)
}

func TestInvalidLocalRanks(t *testing.T) {
	var out bytes.Buffer
	_, _, err := Client(rw{bytes.NewReader(nil), &out}, Params{Rank: -2}, -1)
	require.ErrorContains(t, err, "invalid rank -2")
	_, _, err = Client(rw{bytes.NewReader(nil), &out}, Params{Rank: 0}, -5)
	require.ErrorContains(t, err, "invalid wanted rank -5")
	assert.Zero(t, out.Len(), "nothing may be sent for invalid parameters")
}

// FuzzServer feeds arbitrary bytes to the acceptor's side. It must never
// panic, never write more than a reply and a refusal, and never admit
// the input.
func FuzzServer(f *testing.F) {
	hb := validHello()
	f.Add(hb[:])
	f.Add(append(hb[:], statusOK))
	f.Add(append(hb[:], statusRefused, 3, 'a', 'b', 'c'))
	f.Add(append(hb[:], make([]byte, 1+proofSize)...))
	f.Add([]byte(magic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		for _, secret := range [][]byte{nil, []byte("fuzz")} {
			out.Reset()
			peer, err := Server(rw{bytes.NewReader(in), &out}, Params{Secret: secret, JobID: 1, Service: ServiceLink, Rank: 0}, nil)
			if out.Len() > 1+challengeSize+2+MaxReason {
				t.Fatalf("server wrote %d bytes", out.Len())
			}
			// The acceptor's nonce is fresh, so no fixed input can carry
			// the right proof, not even for an empty secret.
			if err == nil {
				t.Fatalf("fuzzed input admitted as rank %d", peer)
			}
			if peer != -1 {
				t.Fatalf("peer %d with error %v", peer, err)
			}
		}
	})
}
