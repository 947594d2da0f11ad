//go:build linux

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/shmem"
)

// After the auth handshake, the dialer offers the region it created and
// the acceptor answers:
//
//	offer, with the region's descriptor attached (SCM_RIGHTS):
//	 0 magic "GCSHM\x00\x00\x01"   8 ring size
//	16 region's device            24 region's inode
//	32 dialer's cookie address    40 dialer's cookie
//
//	answer: a status byte, then
//	 statusOK:      the acceptor's cookie address and cookie (8 bytes each)
//	 statusRefused: a length byte and the reason
//
// All numbers are little-endian. Each side learns the other's PID from
// the kernel (SO_PEERCRED), as seen from its own PID namespace.
const (
	offerMagic = "GCSHM\x00\x00\x01"
	offerSize  = 48
	answerSize = 16 // after the status byte

	statusOK      = 0
	statusRefused = 1
	maxReason     = 255
)

// offer is what the dialer tells the acceptor about a new link.
type offer struct {
	ringSize int
	id       shmem.Identity
	cookie   shmem.Cookie
}

func (o *offer) marshal(b *[offerSize]byte) {
	copy(b[:], offerMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(o.ringSize))
	binary.LittleEndian.PutUint64(b[16:], o.id.Dev)
	binary.LittleEndian.PutUint64(b[24:], o.id.Ino)
	binary.LittleEndian.PutUint64(b[32:], o.cookie.Addr)
	binary.LittleEndian.PutUint64(b[40:], o.cookie.Value)
}

func (o *offer) unmarshal(b *[offerSize]byte) error {
	if string(b[:8]) != offerMagic {
		return fmt.Errorf("not a shm offer (magic %q)", b[:8])
	}
	size := binary.LittleEndian.Uint64(b[8:])
	if size < MinRingSize || size > MaxRingSize || bits.OnesCount64(size) != 1 {
		return fmt.Errorf("offered ring of %d bytes (want a power of two from %d to %d)", size, MinRingSize, MaxRingSize)
	}
	o.ringSize = int(size)
	o.id = shmem.Identity{Dev: binary.LittleEndian.Uint64(b[16:]), Ino: binary.LittleEndian.Uint64(b[24:])}
	o.cookie = shmem.Cookie{Addr: binary.LittleEndian.Uint64(b[32:]), Value: binary.LittleEndian.Uint64(b[40:])}
	return nil
}

// sendOffer sends o with descriptor fd attached.
func sendOffer(c *net.UnixConn, o *offer, fd int) error {
	var b [offerSize]byte
	o.marshal(&b)
	if _, _, err := c.WriteMsgUnix(b[:], unix.UnixRights(fd), nil); err != nil {
		return fmt.Errorf("sending the shared memory: %w", err)
	}
	return nil
}

// recvOffer reads an offer and the one descriptor attached to it.
func recvOffer(c *net.UnixConn) (offer, int, error) {
	var o offer
	var b [offerSize]byte
	// Room for a few descriptors, so that an offer with too many is
	// refused naming how many on every architecture (one's space holds
	// two on 64-bit ones, where control messages align to 8 bytes).
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(b[:], oob)
	if err != nil {
		return o, -1, fmt.Errorf("reading the offer: %w", noEOF(err))
	}
	fd, err := oneFD(oob[:oobn], flags)
	if err != nil {
		return o, -1, err
	}
	// The descriptor comes with the first byte; the rest may follow.
	if _, err := io.ReadFull(c, b[n:]); err != nil {
		unix.Close(fd)
		return o, -1, fmt.Errorf("reading the offer: %w", noEOF(err))
	}
	if err := o.unmarshal(&b); err != nil {
		unix.Close(fd)
		return o, -1, err
	}
	return o, fd, nil
}

// oneFD returns the descriptor of control messages that must hold
// exactly one, closing any others.
func oneFD(oob []byte, flags int) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1, fmt.Errorf("reading the offer's descriptor: %w", err)
	}
	var fds []int
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) == 1 && flags&unix.MSG_CTRUNC == 0 {
		return fds[0], nil
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	return -1, fmt.Errorf("the offer came with %d descriptors (truncated: %t), want 1", len(fds), flags&unix.MSG_CTRUNC != 0)
}

// sendAnswer accepts the offer and tells the dialer this side's cookie.
func sendAnswer(c *net.UnixConn, cookie shmem.Cookie) error {
	var b [1 + answerSize]byte
	b[0] = statusOK
	binary.LittleEndian.PutUint64(b[1:], cookie.Addr)
	binary.LittleEndian.PutUint64(b[9:], cookie.Value)
	if _, err := c.Write(b[:]); err != nil {
		return fmt.Errorf("answering the offer: %w", err)
	}
	return nil
}

// sendRefusal refuses the offer, best effort: the refusal stands even if
// it cannot be delivered.
func sendRefusal(c *net.UnixConn, reason string) {
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	b := append([]byte{statusRefused, byte(len(reason))}, reason...)
	c.Write(b)
}

// recvAnswer reads the acceptor's answer and returns its cookie.
func recvAnswer(c *net.UnixConn) (cookie shmem.Cookie, err error) {
	var b [1 + answerSize]byte
	if _, err := io.ReadFull(c, b[:1]); err != nil {
		return shmem.Cookie{}, fmt.Errorf("reading the answer to the offer: %w", noEOF(err))
	}
	switch b[0] {
	case statusOK:
		if _, err := io.ReadFull(c, b[1:]); err != nil {
			return shmem.Cookie{}, fmt.Errorf("reading the answer to the offer: %w", noEOF(err))
		}
		return shmem.Cookie{Addr: binary.LittleEndian.Uint64(b[1:]), Value: binary.LittleEndian.Uint64(b[9:])}, nil
	case statusRefused:
		var reason [1 + maxReason]byte
		if _, err := io.ReadFull(c, reason[:1]); err != nil {
			return shmem.Cookie{}, fmt.Errorf("reading the refusal of the offer: %w", noEOF(err))
		}
		n := int(reason[0])
		if _, err := io.ReadFull(c, reason[1:1+n]); err != nil {
			return shmem.Cookie{}, fmt.Errorf("reading the refusal of the offer: %w", noEOF(err))
		}
		return shmem.Cookie{}, fmt.Errorf("the acceptor could not use the shared memory: %q", reason[1:1+n])
	default:
		return shmem.Cookie{}, fmt.Errorf("invalid answer to the offer (status %#x)", b[0])
	}
}

// peerPID returns the PID of the process at the other end of c, as the
// kernel recorded it when the connection was made; 0 when that process
// is in a PID namespace that this one cannot see.
func peerPID(c *net.UnixConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return int(cred.Pid), nil
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: a setup that stops before
// its end is cut short.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
