package objcodec

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"reflect"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrCorrupt is wrapped by every error of Decode (and Place) about
	// its input: truncated data, a length longer than what remains, a
	// bad varint or bool byte, nesting deeper than 10000 levels, bytes
	// left over, a marshaler or gob refusing its bytes.
	ErrCorrupt = errors.New("objcodec: invalid input")
	// ErrType is wrapped when the input encodes a value of another type
	// than the one decoded into: its type's fingerprint differs.
	ErrType = errors.New("objcodec: type mismatch")
)

// target checks that v is a non-nil pointer and returns it and the plan
// of the type it points to.
func target(v any, fn string) (reflect.Value, *plan, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return rv, nil, fmt.Errorf("objcodec: %s needs a non-nil pointer, not %T", fn, v)
	}
	p := planOf(rv.Type().Elem())
	if p.err != nil {
		return rv, nil, p.err
	}
	return rv, p, nil
}

// Append appends the encoding of *v to b; v must be a non-nil pointer.
// On error it returns b as it was.
func Append(b []byte, v any) ([]byte, error) {
	rv, p, err := target(v, "Append")
	if err != nil {
		return b, err
	}
	at := len(b)
	b = p.appendHeader(b)
	if p.gob {
		w := appender{b}
		if err := gob.NewEncoder(&w).Encode(v); err != nil {
			return b[:at], fmt.Errorf("objcodec: encoding %s with gob (%s): %w", p.t, p.why, err)
		}
		return w.b, nil
	}
	b, err = p.root.encode(b, rv.Elem(), 0)
	if err != nil {
		return b[:at], err
	}
	return b, nil
}

// appender is an io.Writer that appends to b.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// Decode sets *v from the encoding b, which must be the whole of an
// encoding of a value of v's type; v must be a non-nil pointer. An error
// about b wraps ErrCorrupt, or ErrType when b holds another type; *v may
// then be partly set.
func Decode(b []byte, v any) error {
	rv, p, err := target(v, "Decode")
	if err != nil {
		return err
	}
	b, err = p.checkHeader(b)
	if err != nil {
		return err
	}
	if p.gob {
		if err := CheckGobFrames(b); err != nil {
			return err
		}
		rv.Elem().SetZero()
		r := bytes.NewReader(b)
		if err := gob.NewDecoder(r).Decode(v); err != nil {
			return fmt.Errorf("%w: gob: %v", ErrCorrupt, err)
		}
		if r.Len() != 0 {
			return fmt.Errorf("%w: %d bytes left over after the gob value", ErrCorrupt, r.Len())
		}
		return nil
	}
	d := newDecoder(b)
	if err := p.root.decode(&d, rv.Elem(), 0); err != nil {
		return err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d bytes left over after the %s", ErrCorrupt, len(d.b), p.t)
	}
	return nil
}

// Fingerprint returns the fingerprint of t that the header of every
// encoding of a value of t carries: equal for two types exactly when
// one's encodings decode as the other.
func Fingerprint(t reflect.Type) uint64 { return planOf(t).fp }

// Split is Append without the copy of a raw block, for a transport that
// can send two buffers: where every encoding of *v's type ends with a raw
// block that is the value's memory (a slice or array of fixed-size
// elements, on a little-endian host, without the purego and nounsafe
// tags; or a struct whose last field, or a pointer whose value, ends so),
// it appends to b the head of the encoding, every byte before that block,
// and returns body, a view of the block's memory in *v (not a copy: it
// must not be written while in use), with ok true. head followed by body
// is what Append appends; body is empty when a nil slice or pointer ends
// the encoding first. Otherwise it returns b unchanged and ok false, and
// the caller uses Append.
func Split(b []byte, v any) (head, body []byte, ok bool, err error) {
	rv, p, err := target(v, "Split")
	if err != nil {
		return b, nil, false, err
	}
	if !rawMemory || !p.tail {
		return b, nil, false, nil
	}
	at := len(b)
	b, body, err = p.root.split(p.appendHeader(b), rv.Elem(), 0)
	if err != nil {
		return b[:at], nil, false, err
	}
	return b, body, true, nil
}

// Place is Decode without the copy of a raw block, for a transport that
// can receive into place: head is the head of an encoding (what Split
// appends) and bodyLen the length of the rest. Where the rest can go
// straight into *v's memory, Place sets *v but that block, sizes the
// slice that takes it (reusing its array when its capacity suffices) and
// returns that memory, bodyLen bytes, with ok true; the caller then
// writes the rest into dst, which completes the decoding. It returns ok
// false when *v's type has no such form (see Split) or when head is not
// exactly a head, having perhaps set some of *v; the caller then decodes
// the whole encoding with Decode. Errors are Decode's: head of another
// type (ErrType), or a length that disagrees with bodyLen (ErrCorrupt).
func Place(head []byte, bodyLen int, v any) (dst []byte, ok bool, err error) {
	return place(head, bodyLen, nil, v, "Place")
}

// View is Place with the rest in hand: instead of returning memory to
// copy body into, it makes the slice that takes the raw block view body
// itself, which *v then shares, with no copy. It returns ok false, with
// a nil error, where Place would, where that block is an array (whose
// memory is *v's own) and where body is not aligned for the slice's
// elements; the caller then uses Place.
func View(head, body []byte, v any) (ok bool, err error) {
	_, ok, err = place(head, len(body), body, v, "View")
	return ok, err
}

func place(head []byte, bodyLen int, view []byte, v any, call string) ([]byte, bool, error) {
	rv, p, err := target(v, call)
	if err != nil {
		return nil, false, err
	}
	rest, err := p.checkHeader(head)
	if err != nil {
		return nil, false, err
	}
	if !rawMemory || !p.tail {
		return nil, false, nil
	}
	d := newDecoder(rest)
	dst, err := p.root.place(&d, rv.Elem(), bodyLen, view, 0)
	switch {
	case errors.Is(err, errNotHead), errors.Is(err, errNoView):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return dst, true, nil
}

// CheckGobFrames checks that b is a sequence of whole gob messages, each
// a count and that many bytes: gob's decoder would allocate a hostile
// count's bytes (up to 10 MiB) before finding that the input is short.
// Errors wrap ErrCorrupt.
func CheckGobFrames(b []byte) error {
	for len(b) > 0 {
		c := b[0]
		b = b[1:]
		n := uint64(c)
		if c > 0x7f {
			w := -int(int8(c))
			if w > 8 || w > len(b) {
				return fmt.Errorf("%w: a bad gob message count", ErrCorrupt)
			}
			n = 0
			for _, x := range b[:w] {
				n = n<<8 | uint64(x)
			}
			b = b[w:]
		}
		if n > uint64(len(b)) {
			return fmt.Errorf("%w: a gob message of %d bytes where %d remain", ErrCorrupt, n, len(b))
		}
		b = b[n:]
	}
	return nil
}
