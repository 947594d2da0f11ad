package core

import (
	"fmt"

	"github.com/gocoll/gocoll/internal/timeline"
)

// A rank's timeline (GOCOLL_TRACE, WithTimeline) records every collective
// call as a span, with the sends and waits inside it as spans of their
// own, in a trace file of its own (package timeline). Spans are timed on
// Now's clock and moved onto the recorder's when added.

// openTimeline opens the timeline file of rank rank of size ranks, for a
// job whose trace goes to path.
func openTimeline(path string, rank, size int) (*timeline.Recorder, error) {
	r, err := timeline.Open(timeline.RankPath(path, rank), rank, size)
	if err != nil {
		return nil, fmt.Errorf("opening the timeline (GOCOLL_TRACE): %w", err)
	}
	return r, nil
}

// setTimeline makes r the endpoint's timeline; nil for none.
func (ep *endpoint) setTimeline(r *timeline.Recorder) {
	ep.timeline = r
	ep.timelineBase = Now() - r.Now()
}

// TimelineSpan adds s to the rank's timeline, its times taken on Now's
// clock. The caller checks that there is a timeline (Tally.Traced).
func (c *Comm) TimelineSpan(s *timeline.Span) {
	s.Start -= c.ep.timelineBase
	s.End -= c.ep.timelineBase
	s.Comm = c.id
	c.ep.timeline.Add(s)
}
