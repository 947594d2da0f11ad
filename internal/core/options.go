package core

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gocoll/gocoll/internal/mtls"
	"github.com/gocoll/gocoll/internal/rendezvous"
	"github.com/gocoll/gocoll/internal/transport/tcp"
	"github.com/gocoll/gocoll/internal/tuning"
)

// Option configures Init and NewLocal.
type Option func(*Options) error

type Options struct {
	transport       string
	timeout         time.Duration
	heartbeat       time.Duration // 0: none
	spin            time.Duration // how long a wait for a message polls before it parks; 0: never
	yield           bool          // spinning hands the CPU over between looks: the host is oversubscribed
	secret          []byte
	tls             *tls.Config // nil: plain TCP
	tcpCongestion   string      // "": the tcp transport's default
	logger          *slog.Logger
	unexpectedLimit int
	hostOf          func(rank int) string
	singleton       *bool  // WithSingleton; nil: GOCOLL_SINGLETON decides
	segmentSlot     int    // 0: DefaultSegmentSlot
	singleCopy      string // WithSingleCopy
	noHugePages     bool   // WithHugePages(false)
	statsSampling   int    // time one call in statsSampling below timedFrom; 0: none
	tracePath       string // "": no timeline (WithTimeline)
	dumpPath        string // GOCOLL_DUMP: where the flight recorder dumps; "": the log
	dumpOnFailure   bool   // dump the flight recorder when the job fails (ranks of Init)
	tuning          *tuning.Table
	// report is where the world's failure is reported to the launcher
	// (Init under gocoll run), or nil.
	report io.Writer
	// segmentFault, a test hook, fails the mapping of a rank's segments
	// when it returns an error.
	segmentFault func(rank int) error
	// singleRefused, a test hook, makes ranks find that they cannot read
	// the others' memory.
	singleRefused func(rank int) bool
	// hugePageCollapse, a test hook, is called instead of the kernel to
	// put a rank's buffers on huge pages (WithHugePageCollapse).
	hugePageCollapse func(rank int, addr, n uintptr) error
	// lossSettle is LossSettle but for tests, which stretch it.
	lossSettle time.Duration
}

// DefaultTimeout is comm.DefaultTimeout.
const DefaultTimeout = 5 * time.Minute

// DefaultUnexpectedLimit is comm.DefaultUnexpectedLimit.
const DefaultUnexpectedLimit = 64 << 20

func (o *Options) setDefault() {
	*o = Options{
		transport:       "auto",
		timeout:         DefaultTimeout,
		heartbeat:       DefaultHeartbeat,
		spin:            DefaultSpin,
		logger:          slog.Default(),
		unexpectedLimit: DefaultUnexpectedLimit,
		lossSettle:      LossSettle,
		statsSampling:   DefaultStatsSampling,
		singleCopy:      SingleCopyAuto,
	}
}

// WithTransport is comm.WithTransport.
func WithTransport(name string) Option {
	return func(o *Options) error {
		switch name {
		case "auto", "tcp", "shm", "mem":
			o.transport = name
			return nil
		}
		return fmt.Errorf("%w: unknown transport %q (want auto, tcp, shm or mem)", ErrInvalid, name)
	}
}

// WithHostIdentity is comm.WithHostIdentity.
func WithHostIdentity(hostOf func(rank int) string) Option {
	return func(o *Options) error {
		if hostOf == nil {
			return fmt.Errorf("%w: nil host identity function", ErrInvalid)
		}
		o.hostOf = hostOf
		return nil
	}
}

// WithSegmentSlot is comm.WithSegmentSlot.
func WithSegmentSlot(bytes int) Option {
	return func(o *Options) error {
		if bytes < 4096 || bytes > 1<<30 || bytes%4096 != 0 {
			return fmt.Errorf("%w: segment slot of %d bytes (want a multiple of 4096 from 4 KiB to 1 GiB)", ErrInvalid, bytes)
		}
		o.segmentSlot = bytes
		return nil
	}
}

// WithTimeout is comm.WithTimeout.
func WithTimeout(d time.Duration) Option {
	return func(o *Options) error {
		if d < 0 {
			return fmt.Errorf("%w: negative timeout %v", ErrInvalid, d)
		}
		o.timeout = d
		return nil
	}
}

// DefaultSpin is comm.DefaultSpin.
const DefaultSpin = 50 * time.Microsecond

// MaxSpin bounds WithSpin: a rank that waits longer than that for a
// message should give the core back.
const MaxSpin = 10 * time.Millisecond

// WithSpin is comm.WithSpin.
func WithSpin(d time.Duration) Option {
	return func(o *Options) error {
		if d < 0 || d > MaxSpin {
			return fmt.Errorf("%w: spin %v (want 0 to %v)", ErrInvalid, d, MaxSpin)
		}
		o.spin = d
		return nil
	}
}

// WithStatsSampling is comm.WithStatsSampling.
func WithStatsSampling(n int) Option {
	return func(o *Options) error {
		if n < 0 {
			return fmt.Errorf("%w: stats sampling %d (want 0 for none, 1 for every call, or more)", ErrInvalid, n)
		}
		o.statsSampling = n
		return nil
	}
}

// WithTimeline is comm.WithTimeline.
func WithTimeline(path string) Option {
	return func(o *Options) error {
		o.tracePath = path
		return nil
	}
}

// DefaultHeartbeat is comm.DefaultHeartbeat.
const DefaultHeartbeat = 4 * time.Second

// WithHeartbeat is comm.WithHeartbeat.
func WithHeartbeat(period time.Duration) Option {
	return func(o *Options) error {
		if period != 0 && (period < rendezvous.MinHeartbeat || period > rendezvous.MaxHeartbeat) {
			return fmt.Errorf("%w: heartbeat period %v (want 0 for none, or %v to %v)", ErrInvalid, period, rendezvous.MinHeartbeat, rendezvous.MaxHeartbeat)
		}
		o.heartbeat = period
		return nil
	}
}

// WithTLS is comm.WithTLS.
func WithTLS(certFile, keyFile, caFile string) Option {
	return func(o *Options) error {
		cfg, err := mtls.Load(certFile, keyFile, caFile)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		o.tls = cfg
		return nil
	}
}

// WithTCPCongestion is comm.WithTCPCongestion.
func WithTCPCongestion(name string) Option {
	return func(o *Options) error {
		if _, err := tcp.New(tcp.WithCongestionControl(name)); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		o.tcpCongestion = name
		return nil
	}
}

// WithSecret is comm.WithSecret.
func WithSecret(secret []byte) Option {
	return func(o *Options) error {
		o.secret = append([]byte(nil), secret...)
		return nil
	}
}

// WithLogger is comm.WithLogger.
func WithLogger(l *slog.Logger) Option {
	return func(o *Options) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalid)
		}
		o.logger = l
		return nil
	}
}

// WithUnexpectedLimit is comm.WithUnexpectedLimit.
func WithUnexpectedLimit(bytes int) Option {
	return func(o *Options) error {
		if bytes <= 0 {
			return fmt.Errorf("%w: unexpected-message limit %d must be positive", ErrInvalid, bytes)
		}
		o.unexpectedLimit = bytes
		return nil
	}
}

// WithTuning is comm.WithTuning.
func WithTuning(path string) Option {
	return func(o *Options) error {
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
