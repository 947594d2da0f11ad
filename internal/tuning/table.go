package tuning

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/wire"
)

// MaxChunk bounds an entry's chunk, as it bounds nothing else: a larger
// chunk is a typo, not a tuning.
const MaxChunk = 1 << 30

// Transports are the transports an entry may name.
var Transports = []string{"auto", "tcp", "shm", "mem"}

// An Entry is one row of a table. See the package documentation.
type Entry struct {
	Collective string `json:"collective"`
	Ranks      int    `json:"ranks"`
	Transport  string `json:"transport"`
	MinBytes   int64  `json:"min_bytes"`
	MaxBytes   int64  `json:"max_bytes"`
	Algorithm  string `json:"algorithm"`
	Chunk      int    `json:"chunk"`
	Codec      string `json:"codec"`

	kind  wire.Kind
	algo  wire.Algorithm
	codec codec.ID
}

// A Table is a checked list of entries. The zero Table has no entries and
// chooses nothing.
type Table struct {
	Entries []Entry `json:"entries"`
}

// A Choice is what a table says of one call.
type Choice struct {
	Algorithm wire.Algorithm
	Chunk     int // bytes; 0 for the default
	// Codec is the wire codec. A lossy one (codec.BF16,
	// codec.FP16) applies to float32 and float64 calls only; package
	// collective sends other element types uncompressed.
	Codec codec.ID
}

// Load reads and checks the table in the file at path. Its errors name
// the file and, for a bad entry, the entry's index.
func Load(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tuning table: %w", err)
	}
	t, err := Parse(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("tuning table %s: %w", path, err)
	}
	return t, nil
}

// Parse reads and checks a table from r.
func Parse(r io.Reader) (*Table, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("%w: %w", codec.ErrInvalid, err)
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return &t, nil
}

// New checks entries and returns them as a table.
func New(entries []Entry) (*Table, error) {
	t := &Table{Entries: slices.Clone(entries)}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// check validates every entry and fills in what Lookup uses.
func (t *Table) check() error {
	var errs []error
	for i := range t.Entries {
		if err := t.Entries[i].check(); err != nil {
			errs = append(errs, fmt.Errorf("entry %d: %w", i, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Overlaps are looked for among the entries of one collective, rank
	// count and transport, in order of their ranges.
	order := make([]int, len(t.Entries))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ea, eb := &t.Entries[a], &t.Entries[b]
		return cmp.Or(cmp.Compare(ea.kind, eb.kind), cmp.Compare(ea.Ranks, eb.Ranks),
			cmp.Compare(ea.Transport, eb.Transport), cmp.Compare(ea.MinBytes, eb.MinBytes))
	})
	for j := 1; j < len(order); j++ {
		p, e := &t.Entries[order[j-1]], &t.Entries[order[j]]
		if p.kind == e.kind && p.Ranks == e.Ranks && p.Transport == e.Transport && e.MinBytes <= p.MaxBytes {
			errs = append(errs, fmt.Errorf("%w: entry %d (%s, %d ranks, %s, %d to %d bytes) overlaps entry %d (%d to %d bytes)",
				codec.ErrInvalid, order[j], e.Collective, e.Ranks, e.Transport, e.MinBytes, e.MaxBytes, order[j-1], p.MinBytes, p.MaxBytes))
		}
	}
	return errors.Join(errs...)
}

func (e *Entry) check() error {
	var err error
	if e.kind, err = wire.ParseCollective(e.Collective); err != nil {
		return err
	}
	if e.algo, err = wire.ParseAlgorithm(e.Algorithm); err != nil {
		return err
	}
	switch {
	case e.algo == wire.AlgoAuto:
		return fmt.Errorf("%w: algorithm auto chooses nothing; leave the range out of the table to keep the built-in selection", codec.ErrInvalid)
	case !wire.Accepts(e.kind, e.algo):
		return fmt.Errorf("%w: %s has no %s algorithm (it has %v)", codec.ErrInvalid, e.kind, e.algo, wire.Algorithms(e.kind))
	case e.Ranks < 1:
		return fmt.Errorf("%w: ranks %d: want at least 1", codec.ErrInvalid, e.Ranks)
	case !slices.Contains(Transports, e.Transport):
		return fmt.Errorf("%w: transport %q: want one of %s", codec.ErrInvalid, e.Transport, strings.Join(Transports, ", "))
	case e.MinBytes < 0 || e.MaxBytes < e.MinBytes:
		return fmt.Errorf("%w: byte range %d to %d: want 0 <= min_bytes <= max_bytes", codec.ErrInvalid, e.MinBytes, e.MaxBytes)
	case e.Chunk < 0 || e.Chunk > MaxChunk:
		return fmt.Errorf("%w: chunk %d: want 0 (the default) or 1 to %d bytes", codec.ErrInvalid, e.Chunk, MaxChunk)
	case e.Chunk > 0 && !e.algo.Pipelined():
		return fmt.Errorf("%w: chunk %d with %s: only the pipelined algorithms (ring_chunked, chain) take a chunk size", codec.ErrInvalid, e.Chunk, e.algo)
	}
	if e.Codec == "" {
		e.Codec = codec.None.String()
	}
	if e.codec, err = codec.Parse(e.Codec); err != nil {
		return err
	}
	// The shared-memory algorithms move data through memory, not
	// messages, and package collective refuses to force them with a
	// codec: such an entry could never run as written.
	if e.codec != codec.None && !e.algo.Compresses() {
		return fmt.Errorf("%w: codec %s with %s: the shared-memory algorithms do not compress; want codec none", codec.ErrInvalid, e.codec, e.algo)
	}
	return nil
}

// Lookup returns the choice of the entry for a call of kind with bytes
// bytes on a communicator of ranks ranks over transport, if one applies.
// A nil table chooses nothing.
func (t *Table) Lookup(kind wire.Kind, ranks int, transport string, bytes int64) (Choice, bool) {
	if t == nil {
		return Choice{}, false
	}
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.kind == kind && e.Ranks == ranks && e.Transport == transport && e.MinBytes <= bytes && bytes <= e.MaxBytes {
			return e.Choice(), true
		}
	}
	return Choice{}, false
}

// Choice returns what e chooses. e must be an entry of a Table, whose
// checks fill in what Choice reads from the entry's fields.
func (e *Entry) Choice() Choice { return Choice{Algorithm: e.algo, Chunk: e.Chunk, Codec: e.codec} }

// Write writes t as indented JSON, the format Load reads.
func (t *Table) Write(w io.Writer) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
