package compare

import (
	"strconv"
	"strings"

	"github.com/gocoll/gocoll/internal/bench"
)

// A Series names the results of one implementation run one way: gocoll's
// algorithm as asked for (auto for the selector's choices, whatever they
// ran, so that they stay apart from the same algorithm forced), codec and
// chunk size, or another implementation's name with whatever variant it
// spells into it.
type Series struct {
	Impl  string
	Algo  string
	Codec string
	Chunk int
}

// SeriesOf is the series r belongs to.
func SeriesOf(r *bench.Result) Series {
	return Series{Impl: r.Impl, Algo: r.Asked(), Codec: r.Codec, Chunk: r.Chunk}
}

// String joins the series' non-empty parts with "/", as in
// "gocoll/ring_chunked/bf16/chunk=65536"; codec "none" is left out, as it
// is what every reference implementation does.
func (s Series) String() string {
	parts := []string{s.Impl}
	if s.Algo != "" {
		parts = append(parts, s.Algo)
	}
	if s.Codec != "" && s.Codec != "none" {
		parts = append(parts, s.Codec)
	}
	if s.Chunk != 0 {
		parts = append(parts, "chunk="+strconv.Itoa(s.Chunk))
	}
	return strings.Join(parts, "/")
}

func (s Series) compare(t Series) int { return strings.Compare(s.String(), t.String()) }

// Ours is the implementation name of gocoll's own results.
const Ours = "gocoll"

// Split divides the results of several files into ours and the
// references: ours are every result whose implementation is "gocoll",
// in whichever file; if no file holds any, ours are the whole first file,
// so that two other implementations can be compared as well. Everything
// else is a reference.
func Split(files [][]bench.Result) (ours, theirs []bench.Result) {
	for _, f := range files {
		for _, r := range f {
			if r.Impl == Ours {
				ours = append(ours, r)
			} else {
				theirs = append(theirs, r)
			}
		}
	}
	if len(ours) > 0 || len(files) == 0 {
		return ours, theirs
	}
	theirs = nil
	for _, f := range files[1:] {
		theirs = append(theirs, f...)
	}
	return files[0], theirs
}
