package comm

import (
	"time"

	"github.com/gocoll/gocoll/internal/core"
)

// ProbeDelay is how long a receive of a collective waits before it asks
// its source what the source is doing.
const ProbeDelay = core.ProbeDelay

// WithSegmentFault makes the ranks for which f returns an error fail to
// map their communicators' shared memory.
func WithSegmentFault(f func(rank int) error) Option {
	return Option(core.WithSegmentFault(f))
}

// WithLossSettle stretches (or shortens) LossSettle.
func WithLossSettle(d time.Duration) Option { return Option(core.WithLossSettle(d)) }

// LinkKind names the package of the link that carries c's messages to
// its rank dst, or "" before the first message.
func LinkKind(c *Comm, dst int) string { return c.core().LinkKind(dst) }
