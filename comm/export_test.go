package comm

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
