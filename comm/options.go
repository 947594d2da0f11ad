package comm

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures Init and NewLocal.
type Option func(*options) error

type options struct {
	transport       string
	timeout         time.Duration
	secret          []byte
	logger          *slog.Logger
	unexpectedLimit int
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
		logger:          slog.Default(),
		unexpectedLimit: DefaultUnexpectedLimit,
	}
}

// WithTransport chooses the links between ranks: "tcp", "mem" (ranks of
// one process only, the default of NewLocal) or "auto" (the default of
// Init: tcp between processes).
func WithTransport(name string) Option {
	return func(o *options) error {
		switch name {
		case "auto", "tcp", "mem":
			o.transport = name
			return nil
		}
		return fmt.Errorf("%w: unknown transport %q (want auto, tcp or mem)", ErrInvalid, name)
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
// One message larger than the limit is still accepted when nothing else is
// buffered, so no message size is refused.
func WithUnexpectedLimit(bytes int) Option {
	return func(o *options) error {
		if bytes <= 0 {
			return fmt.Errorf("%w: unexpected-message limit %d must be positive", ErrInvalid, bytes)
		}
		o.unexpectedLimit = bytes
		return nil
	}
}
