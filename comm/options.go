package comm

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gocoll/gocoll/comm/internal/rendezvous"
	"github.com/gocoll/gocoll/internal/mtls"
	"github.com/gocoll/gocoll/tuning"
)

// Option configures Init and NewLocal.
type Option func(*options) error

type options struct {
	transport       string
	timeout         time.Duration
	heartbeat       time.Duration // 0: none
	secret          []byte
	tls             *tls.Config // nil: plain TCP
	logger          *slog.Logger
	unexpectedLimit int
	hostOf          func(rank int) string
	segmentSlot     int // 0: DefaultSegmentSlot
	tuning          *tuning.Table
	// report is where the world's failure is reported to the launcher
	// (Init under gocoll run), or nil.
	report io.Writer
	// segmentFault, a test hook, fails the mapping of a rank's segments
	// when it returns an error.
	segmentFault func(rank int) error
	// lossSettle is LossSettle but for tests, which stretch it.
	lossSettle time.Duration
}

// DefaultTimeout bounds every blocking call when WithTimeout is not given
// (and GOCOLL_TIMEOUT is not set). Gloo and NCCL default to 30 s and
// 10–30 min; five minutes lets a rank finish a long step between
// collectives while a dead job still fails in minutes, not hours.
const DefaultTimeout = 5 * time.Minute

// DefaultUnexpectedLimit bounds the bytes of messages that arrived before
// their receive was posted, per rank. Past it a link stops reading until
// receives are posted, so memory stays bounded whatever the senders do.
const DefaultUnexpectedLimit = 64 << 20

func (o *options) setDefault() {
	*o = options{
		transport:       "auto",
		timeout:         DefaultTimeout,
		heartbeat:       DefaultHeartbeat,
		logger:          slog.Default(),
		unexpectedLimit: DefaultUnexpectedLimit,
		lossSettle:      LossSettle,
	}
}

// WithTransport chooses the links between ranks: "auto" (the default of
// Init: shared-memory links between ranks of one host, tcp between hosts,
// chosen per pair), "shm" (shared-memory links only; every rank must run
// on one host), "tcp" (tcp only, no shared memory at all) or "mem"
// (in-memory links between the ranks of one process, the default of
// NewLocal). With auto and shm, communicators whose ranks share a host
// also get a shared-memory Segment, and those that span hosts a
// Hierarchy.
func WithTransport(name string) Option {
	return func(o *options) error {
		switch name {
		case "auto", "tcp", "shm", "mem":
			o.transport = name
			return nil
		}
		return fmt.Errorf("%w: unknown transport %q (want auto, tcp, shm or mem)", ErrInvalid, name)
	}
}

// WithHostIdentity sets the host each rank claims to run on, in place of
// the machine's identity (hostname plus machine id): ranks with equal
// identities share memory, others talk over tcp. It lets one machine
// stand in for several hosts, in tests and for trying hierarchical
// algorithms; Init's ranks can do the same with GOCOLL_HOST.
func WithHostIdentity(hostOf func(rank int) string) Option {
	return func(o *options) error {
		if hostOf == nil {
			return fmt.Errorf("%w: nil host identity function", ErrInvalid)
		}
		o.hostOf = hostOf
		return nil
	}
}

// WithSegmentSlot sets the bytes that each rank moves per round of a
// shared-memory collective, its slot in each half of a communicator's
// segment, in place of DefaultSegmentSlot: a multiple of 4096 from 4 KiB
// to 1 GiB. Every rank of a job must set the same; ranks whose segments
// differ go without (a warning says so) and use links.
func WithSegmentSlot(bytes int) Option {
	return func(o *options) error {
		if bytes < 4096 || bytes > 1<<30 || bytes%4096 != 0 {
			return fmt.Errorf("%w: segment slot of %d bytes (want a multiple of 4096 from 4 KiB to 1 GiB)", ErrInvalid, bytes)
		}
		o.segmentSlot = bytes
		return nil
	}
}

// WithTimeout bounds every blocking call of the communicator, on top of the
// call's context. Zero disables the bound; the default is DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("%w: negative timeout %v", ErrInvalid, d)
		}
		o.timeout = d
		return nil
	}
}

// DefaultHeartbeat is the heartbeat period of Init's ranks when
// WithHeartbeat is not given (and GOCOLL_HEARTBEAT is not set): a rank
// that is frozen or cut off from rank 0 is reported lost within it (plus
// LossSettle). A rank that dies is reported at once, heartbeat or not.
const DefaultHeartbeat = 4 * time.Second

// WithHeartbeat sets the heartbeat period of Init's ranks. Each rank
// beats to rank 0 over the rendezvous connection four times a period,
// from a goroutine of its own, so ranks that compute for hours between
// calls keep beating; a rank that sends nothing for a whole period
// (stopped, swapped out, cut off by the network) is reported lost to the
// others, and rank 0 silent for a period is reported lost to the rank.
// The period must be at least 100 ms; zero turns heartbeats off, and then
// a frozen rank is found only by the communicator's timeout and a host cut
// off by TCP keepalive (about 30 s). NewLocal has no heartbeat: its ranks
// share one process.
func WithHeartbeat(period time.Duration) Option {
	return func(o *options) error {
		if period != 0 && (period < rendezvous.MinHeartbeat || period > rendezvous.MaxHeartbeat) {
			return fmt.Errorf("%w: heartbeat period %v (want 0 for none, or %v to %v)", ErrInvalid, period, rendezvous.MinHeartbeat, rendezvous.MaxHeartbeat)
		}
		o.heartbeat = period
		return nil
	}
}

// WithTLS runs every tcp link and the rendezvous connection inside mutual
// TLS 1.3: each rank presents the certificate in certFile (key in keyFile)
// and accepts a peer only if the peer's certificate chains to the CA
// certificates in caFile. Host names are not checked; the job secret's
// handshake still runs inside TLS and binds job and ranks. Shared-memory
// links, which never leave the host, are unchanged. Use it when ranks talk
// across a network others can read or write: without it links are
// authenticated (the secret) but not encrypted. Init also takes the files
// from GOCOLL_TLS_CERT, GOCOLL_TLS_KEY and GOCOLL_TLS_CA; every rank must
// use TLS or none.
func WithTLS(certFile, keyFile, caFile string) Option {
	return func(o *options) error {
		cfg, err := mtls.Load(certFile, keyFile, caFile)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		o.tls = cfg
		return nil
	}
}

// WithSecret sets the job secret that every link and the rendezvous
// authenticate with. By default Init uses GOCOLL_SECRET, which gocoll run
// generates per job; NewLocal uses a random one.
func WithSecret(secret []byte) Option {
	return func(o *options) error {
		o.secret = append([]byte(nil), secret...)
		return nil
	}
}

// WithLogger sets where refused connections, lost peers and (with
// GOCOLL_DEBUG set) debug events are logged. The default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalid)
		}
		o.logger = l
		return nil
	}
}

// WithUnexpectedLimit bounds the bytes buffered for messages that arrive
// before their receive is posted; the default is DefaultUnexpectedLimit.
// Each message counts its payload plus MessageOverhead, so many small
// messages are bounded as well as a few large ones. One message larger
// than the limit is still accepted when nothing else is buffered, so no
// message size is refused.
func WithUnexpectedLimit(bytes int) Option {
	return func(o *options) error {
		if bytes <= 0 {
			return fmt.Errorf("%w: unexpected-message limit %d must be positive", ErrInvalid, bytes)
		}
		o.unexpectedLimit = bytes
		return nil
	}
}

// WithTuning loads the tuning table in the file at path (see package
// tuning; gocoll tune writes one) for the collectives to choose algorithms
// and chunk sizes by, in place of their built-in selection, on this
// communicator and those split from it. The order is: the call's
// WithAlgorithm and WithChunkSize, then GOCOLL_ALGO and GOCOLL_CHUNK, then
// the table, then the built-in selection. Every rank must load the same
// table, or ranks choose different algorithms for one call and fail it
// with a mismatch error. A file that does not load fails Init. It
// overrides GOCOLL_TUNING; an empty path loads no table.
func WithTuning(path string) Option {
	return func(o *options) error {
		if path == "" {
			o.tuning = nil
			return nil
		}
		t, err := tuning.Load(path)
		if err != nil {
			return fmt.Errorf("%w: tuning table: %w", ErrInvalid, err)
		}
		o.tuning = t
		return nil
	}
}
