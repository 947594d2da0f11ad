package collective

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"weak"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/objcodec"
)

// The object helpers move arbitrary Go values: configuration,
// vocabularies, metadata, and numbers inside structs. Every value is
// encoded by an ObjectCodec (RawCodec unless WithObjectCodec says
// otherwise) and decoded on arrival, as mpi4py's lowercase methods do
// with pickle: a first call carries a control block with the encoding's
// length and, when it is small, the encoding itself; a larger one
// follows in a second call. With RawCodec the numbers inside a value
// travel as raw bytes, and a BcastObject of a slice or array of numbers
// sends the slice's own memory, as Bcast does. A value that cannot be
// encoded aborts the job, because the other ranks are already waiting
// for it; so does a value that does not decode, which means that the
// ranks disagree on its type or codec.
//
// The options of an object helper apply to the typed collectives it
// makes on []byte and []int64 buffers (Bcast, Allgather, Allgatherv,
// Gatherv, Scatter, Scatterv): WithCompression(codec.Zstd) compresses a
// large encoding, for one, while a lossy codec, which takes only floats,
// is an error. The calls that carry control blocks from a root go
// without receipts unless the options include WithReceipts.

// ObjectCodec encodes the values of the object helpers.
//
// Implementations must be safe for concurrent use (the ranks of a process
// share one), and Decode must not retain b, whose buffer the helpers
// reuse: a decoded value holds copies. An error of Append aborts the job
// with codec.ErrInvalid; an error of Decode, with comm.ErrMismatch. Every
// rank of a call must use the same codec.
type ObjectCodec interface {
	// Append appends the encoding of *v (v is a pointer) to b.
	Append(b []byte, v any) ([]byte, error)
	// Decode sets the value v points to from b.
	Decode(b []byte, v any) error
}

var (
	// RawCodec is the object helpers' default codec. It encodes what gob
	// encodes (numbers, strings, slices, arrays, structs' exported
	// fields, maps, pointers, and types with GobEncode, MarshalBinary or
	// MarshalText), but a slice or array of fixed-size elements (numbers,
	// bools, and arrays and structs of those without padding) is one raw
	// block, its little-endian memory, which on little-endian hosts is
	// copied with one memmove: a []float32 inside a value travels nearly
	// as fast as through a typed collective, where gob writes it element
	// by element, tens of times slower. The encoding is not
	// self-describing: every rank must pass the same type (kinds, sizes,
	// exported field names and their order), which a 64-bit fingerprint
	// of the type, checked on decoding, enforces. Values that hold
	// interfaces, channels or functions go to gob whole. A nil slice or
	// map arrives as nil and an empty one as empty (gob makes both nil);
	// decoding reuses the array of a slice whose capacity suffices, and
	// sets unexported fields to zero.
	RawCodec ObjectCodec = rawCodec{}
	// GobCodec encodes with encoding/gob, each value on its own, so that
	// every encoding is self-describing: for values whose types differ
	// between ranks in ways gob reconciles (fields added or reordered),
	// and for the object helpers' behaviour before RawCodec. Decoding
	// follows gob's rules: into the value already there, so that fields
	// the sender left at zero keep their old values.
	//
	// Unlike RawCodec, whose decoding allocates at most a small multiple
	// of the bytes received (FuzzRecvObject), GobCodec inherits what
	// encoding/gob documents: it is not hardened against hostile input,
	// and a broken or hostile peer's lengths can make it allocate far
	// more than the message holds (up to 10 MiB a slice, and a map's
	// declared size as it stands). GobCodec refuses a message whose gob
	// framing declares more bytes than it has, before gob allocates them.
	// RawCodec hands values that hold interfaces to gob in the same way.
	GobCodec ObjectCodec = gobCodec{}
)

// rawCodec is RawCodec: internal/objcodec, which the object helpers also
// use without it, to send and receive a raw block in place.
type rawCodec struct{}

func (rawCodec) Append(b []byte, v any) ([]byte, error) { return objcodec.Append(b, v) }
func (rawCodec) Decode(b []byte, v any) error           { return objcodec.Decode(b, v) }

// gobCodec is GobCodec.
type gobCodec struct{}

func (gobCodec) Append(b []byte, v any) ([]byte, error) {
	w := appendWriter{b}
	if err := gob.NewEncoder(&w).Encode(v); err != nil {
		return b, err
	}
	return w.b, nil
}

func (gobCodec) Decode(b []byte, v any) error {
	// encoding/gob would allocate what a message's length declares, up
	// to 10 MiB, before it found the bytes missing: a 7-byte payload from
	// a hostile or broken peer cost 10 MiB (FuzzRecvObject).
	if err := objcodec.CheckGobFrames(b); err != nil {
		return err
	}
	r := bytes.NewReader(b)
	if err := gob.NewDecoder(r).Decode(v); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%d bytes left over after the gob value", r.Len())
	}
	return nil
}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// BcastObject sets *v on every rank to root's *v. A rank other than root
// that decodes a different type or codec aborts the job with
// comm.ErrMismatch; root, which may have returned by then, learns of it
// from its next call.
//
// The first Bcast carries a control block of 1 KiB with the encoding's
// length and as much of it as fits; a larger encoding takes a second
// Bcast of the rest. With RawCodec, once a communicator has seen a
// BcastObject of the same root and type whose encoding had up to 64 KiB
// (16 KiB where the ranks share a host, whose second Bcast costs less
// than the copies of one), the block grows to fit that length and a
// sixteenth more, which all ranks know alike, so that a value broadcast
// again and again at about the same size (a training loop's) takes one
// Bcast. With RawCodec, a larger slice or array of fixed-size elements
// goes from root's memory straight into the receivers' *v, as Bcast
// moves a typed slice, and so does one that ends the value: the last
// field of a struct (type Task struct { ID int; Grad []float32 }), or of
// what a last pointer field points to. A receiver's slice keeps its
// array when its capacity suffices. After such a call whose other
// fields took up to 71 bytes, the next call's control block is 96 bytes,
// small enough to cross a shared segment in a rank's fast line rather
// than through its slots.
func BcastObject[T any](ctx context.Context, c *comm.Comm, v *T, root int, opts ...Option) error {
	const call = "BcastObject"
	if err := nilComm(c, call); err != nil {
		return err
	}
	oc, err := collectiveCodecOf(c, call, opts)
	if err != nil {
		return err
	}
	var hints *objectHints
	var key hintKey
	size := bcastBlock
	if _, raw := oc.(rawCodec); raw {
		hints = hintsOf(c)
		key = hintKey{root: root, fp: objcodec.Fingerprint(reflect.TypeFor[T]())}
		size = hints.blockSize(key, hintMaxOf(c))
	}
	buf := getObjectBuf()
	defer putObjectBuf(buf)
	var sent bcastSent
	if c.Rank() == root {
		sent, err = bcastObjectRoot(ctx, c, oc, buf, v, root, size, opts)
	} else {
		sent, err = bcastObjectRecv(ctx, c, oc, buf, v, root, size, opts)
	}
	if err == nil && hints != nil {
		hints.set(key, sent)
	}
	return err
}

// bcastSent is what a BcastObject's control block said: the encoding's
// length, and how much of it the block carried (with RawCodec, only the
// head of a value whose raw block went on its own).
type bcastSent struct{ total, inline int }

// bcastObjectRoot is BcastObject at root, with a first Bcast of size
// bytes: the encoding goes after the control block's head in buf, so
// that the block holds its first bytes and the rest follows without a
// copy; with RawCodec, a raw block that does not fit goes from v's
// memory. It returns what the block said.
func bcastObjectRoot[T any](ctx context.Context, c *comm.Comm, oc ObjectCodec, buf *[]byte, v *T, root, size int, opts []Option) (bcastSent, error) {
	const call = "BcastObject"
	b := grow((*buf)[:0], blockHead)
	var body []byte
	split, encoded := false, false
	if _, raw := oc.(rawCodec); raw {
		var err error
		if b, body, split, err = objcodec.Split(b, v); err != nil {
			return bcastSent{}, encodeFailed[T](c, call, err)
		}
		encoded = split
		// A raw block that fits goes in the first Bcast with its head;
		// a head too long for it goes whole, in two.
		if split && (len(b)+len(body) <= size || len(b) > size) {
			b, body, split = append(b, body...), nil, false
		}
	}
	if !encoded {
		var err error
		if b, err = encodeObject(c, call, oc, b, v); err != nil {
			return bcastSent{}, err
		}
	}
	sent := bcastSent{total: len(b) - blockHead + len(body), inline: min(len(b), size) - blockHead}
	b = padTo(b, size)
	*buf = b
	writeBlock(b, sent.total, sent.inline, false)
	if err := Bcast(ctx, c, b[:size], root, bcastBlockOptions(size, opts)...); err != nil {
		return bcastSent{}, err
	}
	switch {
	case split:
		return sent, Bcast(ctx, c, body, root, opts...)
	case sent.total > sent.inline:
		return sent, Bcast(ctx, c, b[size:blockHead+sent.total], root, opts...)
	}
	return sent, nil
}

// bcastObjectRecv is BcastObject off the root. It returns what the block
// said.
func bcastObjectRecv[T any](ctx context.Context, c *comm.Comm, oc ObjectCodec, buf *[]byte, v *T, root, size int, opts []Option) (bcastSent, error) {
	const call = "BcastObject"
	b := grow((*buf)[:0], size)
	*buf = b
	if err := Bcast(ctx, c, b, root, bcastBlockOptions(size, opts)...); err != nil {
		return bcastSent{}, err
	}
	total, inline, _, ok := readBlock(b)
	if !ok {
		return bcastSent{}, badBlock(c, call, root)
	}
	sent := bcastSent{total: total, inline: len(inline)}
	if total == len(inline) {
		return sent, decodeObject(c, call, oc, inline, v, root)
	}
	if _, raw := oc.(rawCodec); raw {
		dst, ok, err := objcodec.Place(inline, total-len(inline), v)
		if err != nil {
			return bcastSent{}, mismatchObject[T](c, call, total, root, err)
		}
		if ok {
			return sent, Bcast(ctx, c, dst, root, opts...)
		}
	}
	// The rest lands after the inline bytes, over the block's padding.
	b = grow(b, max(len(b), blockHead+total))
	*buf = b
	if err := Bcast(ctx, c, b[blockHead+len(inline):blockHead+total], root, opts...); err != nil {
		return bcastSent{}, err
	}
	return sent, decodeObject(c, call, oc, b[blockHead:blockHead+total], v, root)
}

// objectHints remembers, for one communicator, what the control block of
// the last BcastObject with RawCodec of each root and type said, which
// every rank learns from the block: shared knowledge, from which all
// ranks size the next call's first Bcast alike. The type is its
// fingerprint, which is the same on all ranks whose types decode each
// other's values (GobCodec and other codecs decode across types that
// differ more, and take no hints).
// It also keeps AllreduceObject's scratch values, by type, between calls.
type objectHints struct {
	mu      sync.Mutex
	last    map[hintKey]bcastSent
	scratch map[reflect.Type]any
}

type hintKey struct {
	root int
	fp   uint64
}

// hintMax is the longest encoding whose successors go in one Bcast over
// links: 64 KiB of data and its header. Beyond it the second Bcast costs
// less than the two copies that a raw block then takes (into root's
// buffer and out of the receivers'), once the four buffers outgrow a
// core's cache. On 2 ranks (BenchmarkObjectBcast, 2026-11-26, 2 vCPUs),
// a hinted call of 64 KiB took 1.2 times a typed Bcast over shared
// memory and loopback tcp against 1.45 and 1.3 in two calls; at 128 KiB
// the copies made links in memory 2.7 times slower while shared memory
// and tcp still gained 15%.
const hintMax = 64<<10 + 64

// hintMaxSegment is hintMax where the ranks share a segment: there the
// first Bcast of a split value costs a fast line, less than the copies
// from 16 KiB up. Two processes (gocoll bench --objects, 2026-11-28,
// three alternating rounds): a 64 KiB BcastObject took 6.9 µs in two
// Bcasts against 7.9-8.8 in one, a 32 KiB one 2.3-4.7 against 3.0-5.9
// in two phases of the host, and 16 KiB ones the same either way.
const hintMaxSegment = 16<<10 + 64

// hintMaxOf is hintMax, or hintMaxSegment where c's ranks share a
// segment.
func hintMaxOf(c *comm.Comm) int {
	if (*core.Comm)(c).Segment() != nil {
		return hintMaxSegment
	}
	return hintMax
}

// headBlock is the first Bcast's size after a BcastObject whose raw
// block went on its own and whose head left room in a block this long:
// a segment's fast line, which a Bcast crosses at about the cost of a
// cache line, where one of bcastBlock goes through the slots. Two ranks
// sharing a host (2026-11-28), receivers' median: 0.33 µs for the block
// against 1.04-1.08, of a 64 KiB BcastObject's 6.3-6.7.
const headBlock = core.FastBytes

// blockSize is the first Bcast's size for the next BcastObject of k, of
// at most most bytes in one Bcast.
func (h *objectHints) blockSize(k hintKey, most int) int {
	h.mu.Lock()
	last, ok := h.last[k]
	h.mu.Unlock()
	switch {
	case !ok:
		return bcastBlock
	case last.total <= most:
		return max(bcastBlock, (blockHead+last.total+last.total/16+63)&^63)
	case blockHead+last.inline < headBlock:
		// Of a value larger than most, the head alone came in the
		// block, and next time's most likely fits a shorter one; a
		// longer one goes whole in two Bcasts, and fills the block,
		// after which the next call's is bcastBlock again.
		return headBlock
	}
	return bcastBlock
}

func (h *objectHints) set(k hintKey, sent bcastSent) {
	h.mu.Lock()
	h.last[k] = sent
	h.mu.Unlock()
}

// bcastHints holds an *objectHints per communicator, by weak pointer,
// so that a communicator's entry goes when the communicator does.
var bcastHints sync.Map

func hintsOf(c *comm.Comm) *objectHints {
	w := weak.Make(c)
	if h, ok := bcastHints.Load(w); ok {
		return h.(*objectHints)
	}
	h, loaded := bcastHints.LoadOrStore(w, &objectHints{last: make(map[hintKey]bcastSent), scratch: make(map[reflect.Type]any)})
	if !loaded {
		runtime.AddCleanup(c, func(w weak.Pointer[comm.Comm]) { bcastHints.Delete(w) }, w)
	}
	return h.(*objectHints)
}

// AllgatherObject returns every rank's v, in rank order, on every rank
// (its own value decoded from its encoding, as the others', so that the
// result shares no memory with v). Encodings of up to 72 bytes travel
// in one Allgather of 96 bytes per rank, which a shared segment carries
// in its ranks' fast lines; when some rank's is larger, an
// Allgatherv of those follows. With RawCodec, a value that ends with a
// slice or array of fixed-size elements (see BcastObject) puts only its
// head in the Allgather when it can, and the Allgatherv takes that block
// from the rank's v, without encoding it first.
func AllgatherObject[T any](ctx context.Context, c *comm.Comm, v T, opts ...Option) ([]T, error) {
	const call = "AllgatherObject"
	if err := nilComm(c, call); err != nil {
		return nil, err
	}
	oc, err := collectiveCodecOf(c, call, opts)
	if err != nil {
		return nil, err
	}
	out := make([]T, c.Size())
	rest := getObjectBuf()
	defer putObjectBuf(rest)
	if err := gatherValues(ctx, c, call, oc, &v, out, gathering{skip: -1, skipInSegment: -1, rest: rest}, opts); err != nil {
		return nil, err
	}
	return out, nil
}

// gathering says how gatherValues fills its results: all but skip's,
// with the Allgatherv parts in *rest (skip's own part not even copied
// there where skip is the calling rank), or all but skipInSegment's where
// the parts are read where they lie in the segment (allgatherViews), and,
// where viewed is not nil, with the raw blocks of the results left where
// they arrived, viewed in place (see objcodec.View) rather than copied,
// each such result's viewed[r] set. use, if not nil, runs once the
// results are set, while those views hold, told whether they lie in the
// segment.
type gathering struct {
	skip, skipInSegment int
	rest                *[]byte
	viewed              []bool
	use                 func(inSegment bool) error
}

// gatherValues sets out[r] to rank r's *v for every rank r but g.skip,
// decoding into what out[r] holds. Each rank's block in the Allgather
// carries its encoding's length and as much of it as fits, or, with
// RawCodec, the head of a value that ends with a raw block (the block's
// flag says so), whose raw block then goes in the Allgatherv from v's
// memory and is copied on arrival into the memory that placing the head
// gives in out[r], or viewed where it arrived. Then it runs g.use.
func gatherValues[T any](ctx context.Context, c *comm.Comm, call string, oc ObjectCodec, v *T, out []T, g gathering, opts []Option) error {
	buf, blocks := getObjectBuf(), getObjectBuf()
	defer putObjectBuf(buf)
	defer putObjectBuf(blocks)
	b, body, err := encodeGathered(c, call, oc, grow((*buf)[:0], blockHead), v)
	if err != nil {
		return err
	}
	total := len(b) - blockHead + len(body)
	inline := total
	if body != nil {
		inline = len(b) - blockHead
	} else if total > gatherBlock-blockHead {
		inline = 0 // all of it in the Allgatherv
	}
	b = padTo(b, gatherBlock)
	*buf = b
	writeBlock(b, total, inline, body != nil)
	p := c.Size()
	all := grow((*blocks)[:0], p*gatherBlock)
	*blocks = all
	if err := Allgather(ctx, c, b[:gatherBlock], all, opts...); err != nil {
		return err
	}
	// counts: what each rank's Allgatherv part holds, its raw block when
	// placed[r].
	counts, placed := make([]int, p), make([]bool, p)
	inlines := make([][]byte, p)
	sum := 0
	for r := range p {
		total, in, more, ok := readBlock(all[r*gatherBlock : (r+1)*gatherBlock])
		if !ok {
			return badBlock(c, call, r)
		}
		inlines[r], placed[r] = in, more
		counts[r] = total - len(in)
		sum += counts[r]
	}
	parts := make([][]byte, p)
	if sum > 0 {
		mine := body
		if mine == nil {
			mine = b[blockHead+inline : blockHead+inline+counts[c.Rank()]]
		}
		if allEqual(counts) {
			var placeErr error
			ran, err := allgatherViews(ctx, c, mine, opts, func(views [][]byte) {
				placeErr = placeGathered(c, call, oc, g, inlines, views, placed, out, true)
			})
			if ran && placeErr != nil {
				return placeErr // it ran, its data in hand: the cause of any failure after it
			}
			if ran {
				return err
			}
		}
		rests := grow((*g.rest)[:0], sum)
		*g.rest = rests
		if err := allgatherParts(ctx, c, mine, rests, counts, g.skip == c.Rank(), opts); err != nil {
			return err
		}
		for r, off := 0, 0; r < p; r++ {
			parts[r], off = rests[off:off+counts[r]], off+counts[r]
		}
	}
	return placeGathered(c, call, oc, g, inlines, parts, placed, out, false)
}

// placeGathered sets out[r], for every rank r but g.skip (g.skipInSegment
// where parts lie in the segment), from its head inlines[r] and its part
// of the Allgatherv, parts[r]: a raw block where placed[r] says so,
// otherwise the encoding that did not fit inline. Then it runs g.use,
// while views of parts are valid.
func placeGathered[T any](c *comm.Comm, call string, oc ObjectCodec, g gathering, inlines, parts [][]byte, placed []bool, out []T, inSegment bool) error {
	skip := g.skip
	if inSegment {
		skip = g.skipInSegment
	}
	for r, part := range parts {
		var err error
		switch {
		case r == skip:
		case placed[r] && g.viewed != nil:
			// A head that does not view is placed, which names a mismatch.
			if g.viewed[r], err = objcodec.View(inlines[r], part, &out[r]); err != nil || !g.viewed[r] {
				err = placeValue(c, call, oc, inlines[r], part, &out[r], r)
			}
		case placed[r]:
			err = placeValue(c, call, oc, inlines[r], part, &out[r], r)
		case len(part) > 0:
			err = decodeObject(c, call, oc, part, &out[r], r)
		default:
			err = decodeObject(c, call, oc, inlines[r], &out[r], r)
		}
		if err != nil {
			return err
		}
	}
	if g.use == nil {
		return nil
	}
	return g.use(inSegment)
}

// allEqual reports whether every count is the first.
func allEqual(counts []int) bool {
	for _, n := range counts[1:] {
		if n != counts[0] {
			return false
		}
	}
	return true
}

// allgatherParts is Allgatherv, or Allgather when every count is the
// same, as it is for values of one shape: shared memory runs Allgather
// through the segment, several times faster than Allgatherv's ring of
// messages. Every rank knows the counts from the same blocks, so all
// choose alike. ownUnused is allgather's.
func allgatherParts(ctx context.Context, c *comm.Comm, send, recv []byte, counts []int, ownUnused bool, opts []Option) error {
	if !allEqual(counts) {
		return Allgatherv(ctx, c, send, recv, counts, opts...)
	}
	return allgather(ctx, c, send, recv, ownUnused, opts)
}

// encodeGathered appends v's encoding to b, as encodeObject. With
// RawCodec and a value whose encoding ends with a raw block, whose head
// fits a gather block and whose whole encoding does not, it appends only
// the head and returns the block's memory in v as body; every rank
// decides this alone, and its block says which.
func encodeGathered[T any](c *comm.Comm, call string, oc ObjectCodec, b []byte, v *T) ([]byte, []byte, error) {
	if _, raw := oc.(rawCodec); raw {
		head, body, ok, err := objcodec.Split(b, v)
		if err != nil {
			return b, nil, encodeFailed[T](c, call, err)
		}
		if ok && len(head) <= gatherBlock && len(head)+len(body) > gatherBlock {
			return head, body, nil
		}
	}
	b, err := encodeObject(c, call, oc, b, v)
	return b, nil, err
}

// placeValue sets *v from rank from's head and raw block, copying the
// block into the memory that placing the head gives in *v. A head that
// does not place (another type) is decoded whole with its block, which
// names the mismatch.
func placeValue[T any](c *comm.Comm, call string, oc ObjectCodec, head, body []byte, v *T, from int) error {
	dst, ok, err := objcodec.Place(head, len(body), v)
	if err == nil && ok {
		copy(dst, body)
		return nil
	}
	scratch := getObjectBuf()
	defer putObjectBuf(scratch)
	whole := append(append((*scratch)[:0], head...), body...)
	*scratch = whole
	return decodeObject(c, call, oc, whole, v, from)
}

// GatherObject returns every rank's v, in rank order, at root, and nil on
// the other ranks. It takes an Allgather of the encodings' lengths and a
// Gatherv of the encodings.
func GatherObject[T any](ctx context.Context, c *comm.Comm, v T, root int, opts ...Option) ([]T, error) {
	const call = "GatherObject"
	if err := nilComm(c, call); err != nil {
		return nil, err
	}
	oc, err := collectiveCodecOf(c, call, opts)
	if err != nil {
		return nil, err
	}
	buf, recv := getObjectBuf(), getObjectBuf()
	defer putObjectBuf(buf)
	defer putObjectBuf(recv)
	payload, err := encodeObject(c, call, oc, (*buf)[:0], &v)
	if err != nil {
		return nil, err
	}
	*buf = payload
	// Every rank learns every length, so that all pass Gatherv the same
	// counts, which it allows everywhere (and requires off the root in
	// its older form).
	p := c.Size()
	lengths := make([]int64, p)
	if err := Allgather(ctx, c, []int64{int64(len(payload))}, lengths, opts...); err != nil {
		return nil, err
	}
	counts, total := countsOf(lengths)
	var all []byte
	if c.Rank() == root {
		all = grow((*recv)[:0], total)
		*recv = all
	}
	if err := Gatherv(ctx, c, payload, all, counts, root, opts...); err != nil {
		return nil, err
	}
	if c.Rank() != root {
		return nil, nil
	}
	return decodeAll[T](c, call, oc, all, counts)
}

// ScatterObject returns values[r] on each rank r: root passes one value
// per rank (len(values) == c.Size()), the other ranks pass nil, which is
// ignored. Root encodes every value; when each encoding fits in 72
// bytes they travel in one Scatter of 96 bytes per rank, and otherwise
// a Bcast of their lengths and a Scatterv of them follow.
func ScatterObject[T any](ctx context.Context, c *comm.Comm, values []T, root int, opts ...Option) (T, error) {
	const call = "ScatterObject"
	var zero T
	if err := nilComm(c, call); err != nil {
		return zero, err
	}
	oc, err := collectiveCodecOf(c, call, opts)
	if err != nil {
		return zero, err
	}
	p, me := c.Size(), c.Rank()
	enc, blocks, recv := getObjectBuf(), getObjectBuf(), getObjectBuf()
	defer putObjectBuf(enc)
	defer putObjectBuf(blocks)
	defer putObjectBuf(recv)
	var send []byte
	var lengths []int64
	more := false
	if me == root {
		if len(values) != p {
			err := fmt.Errorf("%w: %s at root %d: values has %d elements; it needs one per rank (%d)",
				codec.ErrInvalid, call, root, len(values), p)
			c.Abort(err)
			return zero, err
		}
		b := (*enc)[:0]
		lengths = make([]int64, p)
		for r := range values {
			at := len(b)
			if b, err = encodeObject(c, call, oc, b, &values[r]); err != nil {
				return zero, err
			}
			lengths[r] = int64(len(b) - at)
			more = more || len(b)-at > gatherBlock-blockHead
		}
		*enc = b
		send = padTo((*blocks)[:0], p*gatherBlock)
		*blocks = send
		at := 0
		for r, n := range lengths {
			block := send[r*gatherBlock : (r+1)*gatherBlock]
			inline := 0
			if !more {
				inline = copy(block[blockHead:], b[at:at+int(n)])
			}
			writeBlock(block, int(n), inline, more)
			at += int(n)
		}
	}
	block := grow((*recv)[:0], gatherBlock)
	*recv = block
	if err := Scatter(ctx, c, send, block[:gatherBlock], root, blockOptions(opts)...); err != nil {
		return zero, err
	}
	total, inline, more, ok := readBlock(block[:gatherBlock])
	if !ok {
		return zero, badBlock(c, call, root)
	}
	payload := inline
	if more {
		// Scatterv takes the counts on every rank (its older form
		// requires them there), so root shares them.
		if me != root {
			lengths = make([]int64, p)
		}
		if err := Bcast(ctx, c, lengths, root, blockOptions(opts)...); err != nil {
			return zero, err
		}
		counts, _ := countsOf(lengths)
		if counts[me] != total {
			return zero, badBlock(c, call, root)
		}
		payload = grow(block[:0], total)
		*recv = payload
		if err := Scatterv(ctx, c, (*enc)[:len(*enc):len(*enc)], counts, payload, root, opts...); err != nil {
			return zero, err
		}
	}
	var out T
	if err := decodeObject(c, call, oc, payload, &out, root); err != nil {
		return zero, err
	}
	return out, nil
}

// Control blocks: the first message of BcastObject, AllgatherObject and
// ScatterObject, of a fixed size, so that the receivers know its count.
// Its head is a magic number, flags, the length of the encoding and the
// number of its first bytes that the block carries (inline); the rest, if
// any, follows in a second call. Every rank checks the magic number, so
// that a rank that made another call with a buffer of the same size
// finds the mismatch instead of allocating a stranger's length.
const (
	blockMagic = 0x6a624f67 // "gObj"
	blockHead  = 24         // magic (4), flags (4), length (8), inline (8)
	// bcastBlock is BcastObject's block: one message carries a value
	// whose encoding has up to 1000 bytes, at about the cost of 8 (2
	// ranks, 2026-11-26: 4.8 µs either way over links in memory, 1.3
	// against 0.6 µs through shared memory).
	bcastBlock = 1024
	// gatherBlock is each rank's block in AllgatherObject (and the
	// Allgather of AllreduceObject) and ScatterObject, which every rank
	// receives p of: 72 bytes inline cover a rank's small metadata (a
	// loss and a count, a short name), and a block no longer than a
	// segment's fast line (core.FastBytes, asserted below) takes the
	// blocks' Allgather through the fast lines rather than a round
	// through the slots. Two ranks sharing a host, a 16-byte struct,
	// between barriers, four alternating runs (2026-11-28):
	// AllgatherObject 1.50-1.82 µs against 1.85-2.14 with blocks of 128
	// bytes, AllreduceObject 3.99-4.17 against 4.09-4.79.
	gatherBlock = 96
	// blockMore flags, in ScatterObject, that a Scatterv follows.
	blockMore = 1
	// maxEncoding bounds the length a control block may declare.
	maxEncoding = math.MaxInt >> 1
)

// A gather block fits a fast line (this fails to compile if it does not).
var _ [core.FastBytes - gatherBlock]struct{}

// blockOptions are the options of the calls that send control blocks
// from a root (and ScatterObject's lengths): opts after
// WithReceipts(false), so that root sends the rest at once instead of
// waiting a round trip for the receivers' receipts first. The call that
// sends the rest, when there is one, takes receipts as opts say, and
// without one root's return is that of WithReceipts(false). A
// WithReceipts in opts overrides.
func blockOptions(opts []Option) []Option {
	if len(opts) == 0 {
		return noReceipts
	}
	return append(append(make([]Option, 0, len(opts)+1), noReceipts...), opts...)
}

// bcastBlockOptions are the options of BcastObject's first Bcast, of
// size bytes: blockOptions' for a control block of bcastBlock bytes, and
// opts as they are for a larger one, which a hint sized to carry the
// whole value: root then waits for the receivers' receipts instead of
// running ahead of them, which would make each receive copy its early
// message once more.
func bcastBlockOptions(size int, opts []Option) []Option {
	if size > bcastBlock {
		return opts
	}
	return blockOptions(opts)
}

// noReceipts is read-only: Bcast and Scatter do not write their opts.
var noReceipts = []Option{WithReceipts(false)}

func writeBlock(b []byte, total, inline int, more bool) {
	le := binary.LittleEndian
	le.PutUint32(b, blockMagic)
	flags := uint32(0)
	if more {
		flags |= blockMore
	}
	le.PutUint32(b[4:], flags)
	le.PutUint64(b[8:], uint64(total))
	le.PutUint64(b[16:], uint64(inline))
}

// readBlock parses a control block; ok is false when it is not one.
func readBlock(b []byte) (total int, inline []byte, more, ok bool) {
	le := binary.LittleEndian
	t, in := le.Uint64(b[8:]), le.Uint64(b[16:])
	if le.Uint32(b) != blockMagic || in > uint64(len(b)-blockHead) || in > t || t > maxEncoding {
		return 0, nil, false, false
	}
	return int(t), b[blockHead : blockHead+int(in)], le.Uint32(b[4:])&blockMore != 0, true
}

func badBlock(c *comm.Comm, call string, from int) error {
	err := fmt.Errorf("%w: %s on rank %d: the first message from rank %d is not an object's (do all ranks make the same call?)",
		comm.ErrMismatch, call, c.Rank(), from)
	c.Abort(err)
	return err
}

// objectCodecOf returns the codec that opts set, RawCodec by default;
// WithObjectCodec(nil) is an error wrapping codec.ErrInvalid.
func objectCodecOf(c *comm.Comm, call string, opts []Option) (ObjectCodec, error) {
	var oc ObjectCodec = rawCodec{}
	for _, o := range opts {
		if o.set != setObjectCodec {
			continue
		}
		if o.objects == nil {
			return nil, fmt.Errorf("%w: %s on rank %d: WithObjectCodec(nil)", codec.ErrInvalid, call, c.Rank())
		}
		oc = o.objects
	}
	return oc, nil
}

// collectiveCodecOf is objectCodecOf for the collective object helpers,
// whose error aborts the job: the other ranks are waiting in the call.
func collectiveCodecOf(c *comm.Comm, call string, opts []Option) (ObjectCodec, error) {
	oc, err := objectCodecOf(c, call, opts)
	if err != nil {
		c.Abort(err)
	}
	return oc, err
}

// nilComm refuses a nil communicator, as the typed collectives do.
func nilComm(c *comm.Comm, call string) error {
	if c == nil {
		return fmt.Errorf("%w: %s on a nil communicator", codec.ErrInvalid, call)
	}
	return nil
}

// encodeObject appends the encoding of *v to b with oc. A value that
// does not encode aborts the job, since the other ranks are waiting for
// it, with an error wrapping codec.ErrInvalid that names the call, the
// rank and the type.
func encodeObject[T any](c *comm.Comm, call string, oc ObjectCodec, b []byte, v *T) ([]byte, error) {
	out, err := oc.Append(b, v)
	if err != nil {
		return b, encodeFailed[T](c, call, err)
	}
	return out, nil
}

func encodeFailed[T any](c *comm.Comm, call string, err error) error {
	err = fmt.Errorf("%w: %s on rank %d: encoding %s: %w", codec.ErrInvalid, call, c.Rank(), reflect.TypeFor[T](), err)
	c.Abort(err)
	return err
}

// decodeObject decodes the payload from rank from into v with oc. A
// payload that does not decode means that the ranks disagree on the type
// or the codec: the job is aborted with comm.ErrMismatch, naming both
// ranks, the payload's length and the type, so that no rank goes on with
// a partial result.
func decodeObject[T any](c *comm.Comm, call string, oc ObjectCodec, payload []byte, v *T, from int) error {
	if err := oc.Decode(payload, v); err != nil {
		return mismatchObject[T](c, call, len(payload), from, err)
	}
	return nil
}

func mismatchObject[T any](c *comm.Comm, call string, n, from int, err error) error {
	err = fmt.Errorf("%w: %s on rank %d: the %d bytes from rank %d do not decode as %s (do all ranks pass the same type and codec?): %w",
		comm.ErrMismatch, call, c.Rank(), n, from, reflect.TypeFor[T](), err)
	c.Abort(err)
	return err
}

func countsOf(lengths []int64) ([]int, int) {
	counts := make([]int, len(lengths))
	total := 0
	for i, l := range lengths {
		counts[i] = int(l)
		total += counts[i]
	}
	return counts, total
}

func decodeAll[T any](c *comm.Comm, call string, oc ObjectCodec, all []byte, counts []int) ([]T, error) {
	out := make([]T, len(counts))
	off := 0
	for r, n := range counts {
		if err := decodeObject(c, call, oc, all[off:off+n], &out[r], r); err != nil {
			return nil, err
		}
		off += n
	}
	return out, nil
}

// objectBufs pools the object helpers' buffers: encodings, control
// blocks and receive buffers, which no decoded value retains (both
// codecs copy what they decode).
var objectBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledObjectBuf is the largest buffer put back in objectBufs, so
// that one huge object does not stay in the pool.
const maxPooledObjectBuf = 16 << 20

func getObjectBuf() *[]byte { return objectBufs.Get().(*[]byte) }

func putObjectBuf(p *[]byte) {
	if cap(*p) > maxPooledObjectBuf {
		*p = nil
	}
	*p = (*p)[:0]
	objectBufs.Put(p)
}

// grow returns b resliced to n bytes, keeping its contents, in a new
// array when its capacity does not suffice.
func grow(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

// padTo returns b extended with zeros to n bytes when it is shorter, so
// that no stale bytes of a pooled buffer go on the wire.
func padTo(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	at := len(b)
	b = grow(b, n)
	clear(b[at:])
	return b
}
