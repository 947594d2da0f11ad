package core

import "github.com/gocoll/gocoll/internal/hugepage"

// WithHugePages is comm.WithHugePages.
func WithHugePages(on bool) Option {
	return func(o *Options) error {
		o.noHugePages = !on
		return nil
	}
}

// newCollapser is what puts the buffers of a segment's rank on huge
// pages: nil where o turned that off.
func newCollapser(o *Options, rank int) *hugepage.Collapser {
	switch {
	case o.noHugePages:
		return nil
	case o.hugePageCollapse != nil:
		return &hugepage.Collapser{Collapse: func(addr, n uintptr) error { return o.hugePageCollapse(rank, addr, n) }}
	}
	return new(hugepage.Collapser)
}

// useHugePages puts this rank's buffers of an operation that may copy
// once between the ranks' buffers on huge pages, from the second
// operation on the same buffer (hugepage.Collapser), before the other
// ranks can learn where they are: the kernel then pins and walks a
// 2 MiB page of them where it walked 512 of 4 KiB, which made single
// copies of 1 MiB 1.5-2 times faster on a Zen 5 VM (2026-11-30).
// Buffers in registered memory are shared mappings, which stay as they
// are.
func (op *SegmentOp) useHugePages(bufs [2][]byte, decider int) {
	s := op.s
	if s.huge == nil || op.direct || !op.chosen(decider) || !s.everyoneReads() {
		return
	}
	for _, b := range bufs {
		if asked, err := s.huge.Use(b); asked && err != nil {
			s.c.ep.log.Debug("a buffer of a single copy stays on small pages", "comm", s.c.id, "rank", s.c.rank, "bytes", len(b), "err", err)
		}
	}
}
