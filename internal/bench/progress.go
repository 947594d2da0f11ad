package bench

import (
	"fmt"
	"io"
	"strings"
)

// A ProgressBar draws the progress of a sweep on one line of a terminal,
// redrawing it in place.
type ProgressBar struct {
	w     io.Writer
	drawn bool
}

// NewProgressBar returns a bar that draws on w, typically os.Stderr.
func NewProgressBar(w io.Writer) *ProgressBar { return &ProgressBar{w: w} }

// barWidth is the number of cells of the bar.
const barWidth = 40

// Update redraws the bar for done points of total.
func (p *ProgressBar) Update(done, total int) {
	if total <= 0 {
		return
	}
	done = min(max(done, 0), total)
	full := barWidth * done / total
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d points", strings.Repeat("#", full), strings.Repeat(" ", barWidth-full), done, total)
	p.drawn = true
}

// Clear erases the bar, so that what follows starts on a clean line.
func (p *ProgressBar) Clear() {
	if p.drawn {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", barWidth+len("[] 10000/10000 points")))
		p.drawn = false
	}
}
