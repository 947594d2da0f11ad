package core

import (
	"time"
)

// The hooks below let the tests of the public packages, which cannot
// reach core's fields, fake faults and look at what the engine chose.

// WithSegmentFault makes the ranks for which f returns an error fail to
// map their communicators' shared memory, as a rank without room or
// permission would.
func WithSegmentFault(f func(rank int) error) Option {
	return func(o *Options) error {
		o.segmentFault = f
		return nil
	}
}

// WithSingleCopyRefused makes the ranks for which refused returns true
// find, when their communicators' segments are made, that they cannot
// read the other ranks' memory, as a rank that may not ptrace them does.
func WithSingleCopyRefused(refused func(rank int) bool) Option {
	return func(o *Options) error {
		o.singleRefused = refused
		return nil
	}
}

// WithHugePageCollapse has the ranks' segments call collapse, with the
// rank, instead of asking the kernel to put a buffer's regions on huge
// pages: the tests see which buffers would be.
func WithHugePageCollapse(collapse func(rank int, addr, n uintptr) error) Option {
	return func(o *Options) error {
		o.hugePageCollapse = collapse
		return nil
	}
}

// WithLossSettle stretches (or shortens) LossSettle for the ranks it is
// given to.
func WithLossSettle(d time.Duration) Option {
	return func(o *Options) error {
		o.lossSettle = d
		return nil
	}
}

// LinkKind names the package of the link that carries c's messages to
// its rank dst ("shm", "tcp", "mem"), or "" before the first message.
func (c *Comm) LinkKind(dst int) string {
	o := c.ep.peers[c.group[dst]].link.Load()
	if o == nil {
		return ""
	}
	return linkKind(o.Link)
}
