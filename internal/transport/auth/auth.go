package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode"

	"github.com/gocoll/gocoll/internal/transport"
)

// Params is what one end of a handshake knows about itself.
type Params struct {
	// Secret is the job's shared secret. It may be empty; then the
	// handshake binds JobID, Service and the ranks but authenticates
	// nobody.
	Secret []byte
	// JobID identifies the job; both ends must agree, unless the dialer
	// passes 0, which means "learn it from the acceptor" (Client returns
	// it).
	JobID uint64
	// Service says what the connection is for (ServiceLink or
	// ServiceStore); an acceptor refuses a dialer that asks for another.
	Service byte
	// Rank is this end's rank. A dialer that does not know its rank yet
	// may pass -1 and leave the decision to the acceptor's admit hook.
	Rank int
}

// The services a connection can be opened for.
const (
	ServiceLink  byte = 'L' // a transport link between two ranks
	ServiceStore byte = 'S' // a connection to the rendezvous store
)

// MaxReason bounds the reason text of a refusal, in bytes. Longer reasons
// are cut when sent.
const MaxReason = 255

// Version is the protocol version this package speaks.
const Version = 2

const (
	magic     = "GCAUTH2"
	nonceSize = 32
	macSize   = sha256.Size

	helloSize     = len(magic) + 1 + 1 + nonceSize // 41
	challengeSize = nonceSize + macSize            // 64, after the status byte
	claimSize     = 8 + 8 + 8                      // from, want, jobID
	proofSize     = claimSize + macSize            // 56, after the status byte
	answerSize    = 8 + 8                          // rank, jobID
	replySize     = answerSize + macSize           // 48, after the status byte

	statusOK      = 0
	statusRefused = 1

	labelChallenge = "acceptor challenge"
	labelDialer    = "dialer"
	labelAcceptor  = "acceptor"
)

// RefusedError is the error of a refused handshake. It wraps
// transport.ErrRefused.
type RefusedError struct {
	// ByPeer is true when the other end refused this one (Reason is the
	// text it sent) and false when this end refused the other.
	ByPeer bool
	// Reason says why, in a few words.
	Reason string
}

func (e *RefusedError) Error() string {
	if e.ByPeer {
		return "auth: refused by the peer: " + e.Reason
	}
	return "auth: refusing the peer: " + e.Reason
}

// Unwrap returns transport.ErrRefused.
func (e *RefusedError) Unwrap() error { return transport.ErrRefused }

// ErrProtocol is wrapped by the error of a handshake in which the other
// end sent bytes that break the protocol.
var ErrProtocol = errors.New("auth: protocol violation")

// unmarshalHello checks the dialer's opening message; a non-empty reason
// means it is refused. It returns the service asked for, which the
// acceptor only acts on once the dialer has proven the secret.
func unmarshalHello(b *[helloSize]byte) (service byte, reason string) {
	if string(b[:len(magic)]) != magic {
		return 0, "not a gocoll handshake (bad magic)"
	}
	if v := b[len(magic)]; v != Version {
		return 0, fmt.Sprintf("unsupported handshake version %d (this end speaks %d)", v, Version)
	}
	return b[len(magic)+1], ""
}

// claim is what the dialer says about itself once the acceptor has proven
// the secret: its rank, the rank it wants and the job.
type claim struct {
	from, want int64
	jobID      uint64
}

func (c *claim) marshal(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], uint64(c.from))
	binary.LittleEndian.PutUint64(b[8:], uint64(c.want))
	binary.LittleEndian.PutUint64(b[16:], c.jobID)
}

func (c *claim) unmarshal(b []byte) (reason string) {
	c.from = int64(binary.LittleEndian.Uint64(b[0:]))
	c.want = int64(binary.LittleEndian.Uint64(b[8:]))
	c.jobID = binary.LittleEndian.Uint64(b[16:])
	switch {
	case c.from < -1 || c.from > math.MaxInt32:
		return fmt.Sprintf("invalid dialer rank %d", c.from)
	case c.want < -1 || c.want > math.MaxInt32:
		return fmt.Sprintf("invalid wanted rank %d", c.want)
	}
	return ""
}

// mac computes HMAC-SHA256(secret, label | parts...) into out: each MAC
// covers the whole conversation up to it.
func mac(out *[macSize]byte, secret []byte, label string, parts ...[]byte) {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	for _, p := range parts {
		m.Write(p)
	}
	m.Sum(out[:0])
}

// Client runs the dialer's side of the handshake over rw. wantPeer is the
// rank the dialer expects at the other end, or -1 for any. It returns the
// acceptor's rank and the job's ID (learned from the acceptor when
// p.JobID is 0).
//
// A refusal, by either end, is a *RefusedError (wrapping
// transport.ErrRefused) that carries the reason; a failing read or write
// is returned wrapped with the step it interrupted. Client sets no
// deadline: the caller sets one on the connection first.
func Client(rw io.ReadWriter, p Params, wantPeer int) (peer int, jobID uint64, err error) {
	if p.Rank < -1 || p.Rank > math.MaxInt32 {
		return -1, 0, fmt.Errorf("auth: invalid rank %d", p.Rank)
	}
	if wantPeer < -1 || wantPeer > math.MaxInt32 {
		return -1, 0, fmt.Errorf("auth: invalid wanted rank %d", wantPeer)
	}
	var hb [helloSize]byte
	copy(hb[:], magic)
	hb[len(magic)] = Version
	hb[len(magic)+1] = p.Service
	rand.Read(hb[len(magic)+2:])
	if _, err := rw.Write(hb[:]); err != nil {
		return -1, 0, fmt.Errorf("auth: sending hello: %w", err)
	}

	// The acceptor proves the secret before this end says anything about
	// itself.
	var ch [1 + challengeSize]byte
	if err := readStatus(rw, ch[:1], "challenge"); err != nil {
		return -1, 0, err
	}
	if _, err := io.ReadFull(rw, ch[1:]); err != nil {
		return -1, 0, fmt.Errorf("auth: reading challenge: %w", noEOF(err))
	}
	nonceA := ch[1 : 1+nonceSize]
	var want [macSize]byte
	mac(&want, p.Secret, labelChallenge, hb[:], nonceA)
	if !hmac.Equal(want[:], ch[1+nonceSize:]) {
		return -1, 0, refuse(rw, "acceptor failed authentication (wrong secret or another job?)")
	}

	var proof [1 + proofSize]byte
	proof[0] = statusOK
	c := claim{from: int64(p.Rank), want: int64(wantPeer), jobID: p.JobID}
	c.marshal(proof[1:])
	var md [macSize]byte
	mac(&md, p.Secret, labelDialer, hb[:], ch[1:], proof[1:1+claimSize])
	copy(proof[1+claimSize:], md[:])
	if _, err := rw.Write(proof[:]); err != nil {
		return -1, 0, fmt.Errorf("auth: sending proof: %w", err)
	}

	var reply [1 + replySize]byte
	if err := readStatus(rw, reply[:1], "reply"); err != nil {
		return -1, 0, err
	}
	if _, err := io.ReadFull(rw, reply[1:]); err != nil {
		return -1, 0, fmt.Errorf("auth: reading reply: %w", noEOF(err))
	}
	answer := reply[1 : 1+answerSize]
	mac(&want, p.Secret, labelAcceptor, hb[:], ch[1:], proof[1:], answer)
	if !hmac.Equal(want[:], reply[1+answerSize:]) {
		return -1, 0, refuse(rw, "acceptor's reply failed authentication")
	}
	rankA := int64(binary.LittleEndian.Uint64(answer[0:]))
	jobA := binary.LittleEndian.Uint64(answer[8:])
	switch {
	case rankA < 0 || rankA > math.MaxInt32:
		return -1, 0, refuse(rw, fmt.Sprintf("acceptor claims invalid rank %d", rankA))
	case wantPeer >= 0 && rankA != int64(wantPeer):
		return -1, 0, refuse(rw, fmt.Sprintf("dialed rank %d but acceptor is rank %d", wantPeer, rankA))
	case p.JobID != 0 && jobA != p.JobID:
		return -1, 0, refuse(rw, fmt.Sprintf("acceptor belongs to job %#x, not %#x", jobA, p.JobID))
	}
	if _, err := rw.Write([]byte{statusOK}); err != nil {
		return -1, 0, fmt.Errorf("auth: sending result: %w", err)
	}
	return int(rankA), jobA, nil
}

// Server runs the acceptor's side of the handshake over rw and returns
// the dialer's rank. admit, if not nil, is called once the dialer has
// proven that it knows the secret and asked for the right service, job
// and rank; a non-nil error refuses the dialer with that error's text.
//
// A refusal, by either end, is a *RefusedError (wrapping
// transport.ErrRefused); bytes that are not a handshake are refused as
// well. A failing read or write is returned wrapped with the step it
// interrupted. Server sets no deadline: the caller sets one on the
// connection first.
func Server(rw io.ReadWriter, p Params, admit func(peerRank int) error) (peer int, err error) {
	var hb [helloSize]byte
	if _, err := io.ReadFull(rw, hb[:]); err != nil {
		return -1, fmt.Errorf("auth: reading hello: %w", noEOF(err))
	}
	service, reason := unmarshalHello(&hb)
	if reason != "" {
		return -1, refuse(rw, reason)
	}

	// The challenge proves the secret and says nothing else: no rank, no
	// job id for a dialer that has not proven it too.
	var ch [1 + challengeSize]byte
	ch[0] = statusOK
	rand.Read(ch[1 : 1+nonceSize])
	var ma [macSize]byte
	mac(&ma, p.Secret, labelChallenge, hb[:], ch[1:1+nonceSize])
	copy(ch[1+nonceSize:], ma[:])
	if _, err := rw.Write(ch[:]); err != nil {
		return -1, fmt.Errorf("auth: sending challenge: %w", err)
	}

	var proof [1 + proofSize]byte
	if err := readStatus(rw, proof[:1], "proof"); err != nil {
		return -1, err
	}
	if _, err := io.ReadFull(rw, proof[1:]); err != nil {
		return -1, fmt.Errorf("auth: reading proof: %w", noEOF(err))
	}
	var c claim
	reason = c.unmarshal(proof[1 : 1+claimSize])
	var md [macSize]byte
	mac(&md, p.Secret, labelDialer, hb[:], ch[1:], proof[1:1+claimSize])
	if !hmac.Equal(md[:], proof[1+claimSize:]) {
		return -1, refuse(rw, fmt.Sprintf("dialer claiming rank %d failed authentication (wrong secret or another job?)", c.from))
	}
	switch {
	case reason != "":
	case service != p.Service:
		reason = fmt.Sprintf("dialer asked for service %q, this end serves %q", service, p.Service)
	case c.jobID != 0 && c.jobID != p.JobID:
		reason = fmt.Sprintf("dialer belongs to job %#x, this end to job %#x", c.jobID, p.JobID)
	case c.want >= 0 && c.want != int64(p.Rank):
		reason = fmt.Sprintf("dialer wanted rank %d, this end is rank %d", c.want, p.Rank)
	case admit != nil:
		if err := admit(int(c.from)); err != nil {
			reason = err.Error()
		}
	}
	if reason != "" {
		return -1, refuse(rw, reason)
	}

	var reply [1 + replySize]byte
	reply[0] = statusOK
	answer := reply[1 : 1+answerSize]
	binary.LittleEndian.PutUint64(answer[0:], uint64(int64(p.Rank)))
	binary.LittleEndian.PutUint64(answer[8:], p.JobID)
	mac(&ma, p.Secret, labelAcceptor, hb[:], ch[1:], proof[1:], answer)
	copy(reply[1+answerSize:], ma[:])
	if _, err := rw.Write(reply[:]); err != nil {
		return -1, fmt.Errorf("auth: sending reply: %w", err)
	}
	var result [1]byte
	if err := readStatus(rw, result[:], "result"); err != nil {
		return -1, err
	}
	return int(c.from), nil
}

// refuse sends a refusal with reason to the other end (best effort: the
// refusal stands even if it cannot be delivered) and returns the local
// error for it.
func refuse(w io.Writer, reason string) error {
	if len(reason) > MaxReason {
		reason = reason[:MaxReason]
	}
	var b [2 + MaxReason]byte
	b[0] = statusRefused
	b[1] = byte(len(reason))
	n := copy(b[2:], reason)
	w.Write(b[:2+n])
	return &RefusedError{Reason: reason}
}

// readStatus reads the status byte that opens every answer into b[0]. A
// refusal is read to its end and returned as a *RefusedError.
func readStatus(r io.Reader, b []byte, step string) error {
	if _, err := io.ReadFull(r, b[:1]); err != nil {
		return fmt.Errorf("auth: reading %s: %w", step, noEOF(err))
	}
	switch b[0] {
	case statusOK:
		return nil
	case statusRefused:
	default:
		return fmt.Errorf("%w: invalid status byte %#x in %s", ErrProtocol, b[0], step)
	}
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return fmt.Errorf("auth: reading %s refusal: %w", step, noEOF(err))
	}
	var text [MaxReason]byte
	if _, err := io.ReadFull(r, text[:n[0]]); err != nil {
		return fmt.Errorf("auth: reading %s refusal: %w", step, noEOF(err))
	}
	return &RefusedError{ByPeer: true, Reason: sanitize(string(text[:n[0]]))}
}

// sanitize makes a reason received from a peer safe to print.
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "?")
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: a handshake that stops
// before its end is always cut short.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
