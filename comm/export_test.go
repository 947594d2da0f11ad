package comm

import (
	"path"
	"reflect"
	"time"
)

// ProbeDelay exports probeDelay to the external tests.
const ProbeDelay = probeDelay

// WithSegmentFault makes the ranks for which f returns an error fail to
// map their communicators' shared memory, as a rank without room or
// permission would.
func WithSegmentFault(f func(rank int) error) Option {
	return func(o *options) error {
		o.segmentFault = f
		return nil
	}
}

// WithLossSettle stretches (or shortens) LossSettle for the ranks it is
// given to.
func WithLossSettle(d time.Duration) Option {
	return func(o *options) error {
		o.lossSettle = d
		return nil
	}
}

// LinkKind names the package of the link that carries c's messages to
// its rank dst ("shm", "tcp", "mem"), or "" before the first message.
func LinkKind(c *Comm, dst int) string {
	o := c.ep.peers[c.group[dst]].link.Load()
	if o == nil {
		return ""
	}
	t := reflect.TypeOf(o.Link).Elem()
	return path.Base(t.PkgPath())
}
