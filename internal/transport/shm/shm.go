package shm

import (
	"math/bits"

	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/transport"
)

// Sizes of the rings and the CMA threshold.
const (
	// DefaultRingSize is the size of each direction's ring. A message
	// that fits goes out without waiting for the reader, so the ring
	// plays the part of a socket buffer; larger payloads at or above
	// CMAThreshold bypass it anyway. A link's region takes two rings and
	// a page in /dev/shm: a little over 2 MiB by default, which matters
	// in containers whose /dev/shm is small (Docker's default is 64 MiB).
	DefaultRingSize = 1 << 20

	// MinRingSize and MaxRingSize bound WithRingSize.
	MinRingSize = 4 << 10
	MaxRingSize = 1 << 30

	// CMAThreshold is the smallest payload that the reader copies
	// straight out of the writer's memory (process_vm_readv) rather than
	// through the ring, on links that use CMA (WithCMA). Below it, two
	// copies through a ring that stays in the caches cost as little as
	// the system call, the page pinning and the acknowledgement of the
	// single copy. A Transport's links use CMA only WithCMA; ranks'
	// links do unless GOCOLL_SINGLE_COPY=none (core), since the writer
	// copies half of what the reader takes whole (the package doc). With
	// the reader copying alone, the ring's two copies, which overlap on
	// two cores and free the writer at once, beat CMA by far on
	// 2026-11-28, where CMA had won in an earlier state of the host by
	// half as much. Between two processes
	// (BenchmarkProcessBandwidth; Linux, 2 cores of an AMD EPYC VM),
	// GB/s, in the session that chose CMA for every such payload (the host
	// in its slow state for copies between cores) and on 2026-11-28:
	//
	//	payload   CMA        ring       CMA    ring
	//	32 KiB    5.7–6.1    5.9–6.0    7.2    7.5
	//	64 KiB    8.6–9.7    6.1–6.2    6.4    8.1
	//	1 MiB     9.7–11.1   6.6–6.8    9.4    23.5
	//	16 MiB    9.7–10.2   6.8–7.3    4.9    18.3
	CMAThreshold = 64 << 10
)

// Transport makes shared-memory links between processes of one host. The
// zero value is ready to use and has the default of every option; New
// sets options.
type Transport struct {
	o options
}

var _ transport.Transport = (*Transport)(nil)

// options hold the settings of a Transport. The zero value means the
// defaults, so that a zero Transport is usable.
type options struct {
	ringSize int  // 0: DefaultRingSize
	cma      bool // large payloads may go by CMA (WithCMA, WithCMAWhereFaster)
	// ways chooses, payload by payload, between CMA and the ring
	// (WithCMAWhereFaster); nil: every large payload goes by CMA.
	ways *shmem.SingleCopy
	dir  string // "": shmem.DefaultDir
}

// Option sets an option of a Transport.
type Option func(*options)

// New returns a Transport with opts applied over the defaults.
func New(opts ...Option) *Transport {
	t := &Transport{}
	for _, o := range opts {
		o(&t.o)
	}
	return t
}

// WithRingSize sets the size of the ring of each direction of the links
// that this Transport dials (the dialer sizes a link's region; an
// acceptor takes the size it is offered). The size is rounded up to a
// power of two and kept between MinRingSize and MaxRingSize; the default
// is DefaultRingSize. Payloads larger than the ring stream through it.
func WithRingSize(n int) Option {
	return func(o *options) {
		n = min(max(n, MinRingSize), MaxRingSize)
		o.ringSize = 1 << bits.Len(uint(n-1))
	}
}

// WithCMA makes this end send every payload of CMAThreshold bytes or
// more by process_vm_readv, where the reader's kernel allows it, instead
// of through the ring, the writer writing half of a payload that the
// reader takes whole with process_vm_writev. The single copy of CMA
// needs the reader to be allowed to ptrace the writer (and the writer the
// reader, for its half); links find out by themselves when it is not and
// fall back to the ring (to the reader copying alone).
func WithCMA() Option {
	return func(o *options) { o.cma, o.ways = true, nil }
}

// WithCMAWhereFaster is WithCMA, except that a payload of CMAThreshold
// bytes or more goes by CMA only where that has been the faster way: the
// writers of this Transport's links time their writes of such payloads
// both ways, per size class, and sc chooses the way of each
// (shmem.SingleCopy, which tries the way it does not take now and then).
// Which way wins depends on the host, by factors of two and three either
// way. Between two processes (BenchmarkProcessBandwidth), µs a message:
//
//	payload   Intel Xeon, 2026-11-29   Zen 5 VM, 2026-11-29
//	          CMA       ring            CMA       ring
//	64 KiB    -         -               4.0       1.4
//	1 MiB     39-43     97-100          39        21
//	16 MiB    1000-1050 1540-1580       1021      470
//
// A write through the ring is timed until its last byte is in the ring,
// which the reader, if it waits, has then nearly all copied out; one by
// CMA until the reader is done with it.
func WithCMAWhereFaster(sc *shmem.SingleCopy) Option {
	return func(o *options) { o.cma, o.ways = true, sc }
}

// WithDir sets the directory, which should be a tmpfs, that the regions
// of dialed links are created in. The default is /dev/shm. Regions never
// have a name there: the directory only provides the memory.
func WithDir(dir string) Option {
	return func(o *options) { o.dir = dir }
}

func (o *options) ringBytes() int {
	if o.ringSize == 0 {
		return DefaultRingSize
	}
	return o.ringSize
}

// Name returns "shm".
func (t *Transport) Name() string { return "shm" }
