//go:build linux

package shm

import (
	"sync/atomic"

	"github.com/gocoll/gocoll/internal/shmem"
)

// The layout of a link's region. Words that different processes write
// sit in slots of their own, two cache lines wide because x86 prefetches
// lines in adjacent pairs; everything is an offset, since each process
// maps the region at its own address.
//
//	slot 0, 1   closed word of side 0 (the dialer) and of side 1
//	slots 2-7   control of ring 0, which carries side 0's messages
//	slots 8-13  control of ring 1, side 1's messages
//	4096        data of ring 0 (ringSize bytes), then of ring 1
//
// The control of a ring is, slot by slot: tail (bytes ever written,
// stored by the producer), head (bytes ever consumed, stored by the
// consumer), the consumer's bell, the producer's bell, the words with
// which the consumer answers a CMA message (the ack, the resume offset,
// and where the producer is to write its share of a helped copy: the
// offset in the payload and the address in the consumer's memory), and
// the producer's answer to a request for help.
const (
	slot = 128

	offClosed    = 0
	offRings     = 2 * slot
	ringTail     = 0
	ringHead     = 1 * slot
	ringConsumer = 2 * slot
	ringProducer = 3 * slot
	ringAck      = 4 * slot
	ringResume   = ringAck + 8
	ringHelpOff  = ringAck + 16
	ringHelpDst  = ringAck + 24
	ringHelped   = 5 * slot
	ringCtlSize  = 6 * slot

	ctlSize = 4096
)

// Values of a side's closed word.
const (
	sideOpen   = 0
	sideClosed = 1 // the side closed its end
	sideDied   = 2 // stored by the other side when the process is gone
)

// Values of a ring's ack word, which the consumer stores as it reads a
// CMA message, and the producer (ackAbandoned) if it stops waiting first.
// A writer waits for a value above ackHelp to return. The consumer asks
// for help, and the producer abandons, by compare-and-swap from
// ackPending, so that a writer either answers a request or was gone
// before it.
const (
	ackPending   = 0
	ackHelp      = 1 // write the payload from the help offset on to the help address, then wait on
	ackDone      = 2 // read or skipped: the writer may return
	ackRefused   = 3 // process_vm_readv was refused: send the CMA part from the resume offset on through the ring
	ackAbandoned = 4 // the writer stopped waiting (its context ended, or the link closed): ask nothing of it
)

// Values of a ring's helped word, which the producer stores once it has
// answered a request for help (ackHelp).
const (
	helpPending = 0
	helpDone    = 1 // the producer's share is in the consumer's memory
	helpFailed  = 2 // it is not: the consumer copies it itself
)

// regionSize is the size of the region of a link whose rings hold
// ringSize bytes each.
func regionSize(ringSize int) int { return ctlSize + 2*ringSize }

// ring is one direction of a link: a single-producer, single-consumer
// byte ring in the region.
type ring struct {
	tail, head *atomic.Uint64
	consumer   shmem.Bell // the reader sleeps here for data
	producer   shmem.Bell // the writer sleeps here for space or an ack
	ack        *atomic.Uint64
	resume     *atomic.Uint64
	helpOff    *atomic.Uint64
	helpDst    *atomic.Uint64
	helped     *atomic.Uint64
	data       []byte
	mask       uint64
}

func newRing(reg *shmem.Region, r, size int) ring {
	ctl := offRings + r*ringCtlSize
	data := ctlSize + r*size
	return ring{
		tail:     reg.Uint64(ctl + ringTail),
		head:     reg.Uint64(ctl + ringHead),
		consumer: shmem.Bell{Sleepers: reg.Uint32(ctl + ringConsumer), Seq: reg.Uint32(ctl + ringConsumer + 4)},
		producer: shmem.Bell{Sleepers: reg.Uint32(ctl + ringProducer), Seq: reg.Uint32(ctl + ringProducer + 4)},
		ack:      reg.Uint64(ctl + ringAck),
		resume:   reg.Uint64(ctl + ringResume),
		helpOff:  reg.Uint64(ctl + ringHelpOff),
		helpDst:  reg.Uint64(ctl + ringHelpDst),
		helped:   reg.Uint64(ctl + ringHelped),
		data:     reg.Bytes()[data : data+size : data+size],
		mask:     uint64(size - 1),
	}
}

// put copies p into the ring at position pos, wrapping around its end.
// len(p) is at most the ring's size. The reader's core holds the ring's
// lines, which shmem.Copy writes without waiting for each.
func (r *ring) put(pos uint64, p []byte) {
	n := shmem.Copy(r.data[pos&r.mask:], p)
	shmem.Copy(r.data, p[n:])
}

// get copies len(p) bytes from position pos into p, wrapping around the
// ring's end. len(p) is at most the ring's size.
func (r *ring) get(pos uint64, p []byte) {
	n := copy(p, r.data[pos&r.mask:])
	copy(p[n:], r.data)
}
