// Package objcodec encodes Go values for the object collectives
// (collective.BcastObject and the others), so that the numbers inside an
// object travel as raw bytes, as a typed collective sends them, instead
// of element by element as encoding/gob writes them.
//
// Append(b, &v) appends the encoding of v to b and Decode(b, &v) sets v
// from it. The encoding is not self-describing: both sides must use the
// same type (the same kinds, sizes, exported field names in the same
// order, array lengths), which a fingerprint in the header checks.
//
// # What it encodes
//
// bool, every int, uint, float and complex kind, string, slices, arrays,
// structs (their exported fields; unexported ones are skipped, as gob
// skips them, and Decode sets them to zero), maps and pointers. A type
// that implements gob.GobEncoder, else encoding.BinaryMarshaler, else
// encoding.TextMarshaler (each with its decoding method on the pointer)
// is encoded by those methods, as gob does: time.Time, for one.
//
// A value whose type holds an interface, a channel, a function or an
// unsafe.Pointer anywhere (or, rarely, a slice or map whose elements
// could encode to no bytes at all, such as []struct{}) is encoded whole by
// encoding/gob instead, behind the same header, which marks it. gob's
// rules then apply: the concrete types behind interfaces must be
// registered with gob.Register, and channels and functions are refused.
// A struct type with fields but none of them exported is an error, as
// it is for gob.
//
// # Format
//
// Every encoding starts with a 9-byte header: a format byte (1 for this
// package's encoding, 2 for gob) and the 64-bit FNV-1a fingerprint,
// little-endian, of a canonical description of the static type (kinds
// with their sizes in bits, so that int is int64 on 64-bit hosts,
// exported field names, array lengths, the names of types that marshal
// themselves), computed once per type. Decoding into a type whose
// fingerprint differs fails with ErrType, naming the type decoded into
// and both fingerprints.
//
// The value follows, with nothing between values:
//
//   - bool, int8, uint8: one byte. Wider ints: a zigzag varint; wider
//     uints: a varint (binary.AppendVarint, binary.AppendUvarint).
//     Floats and complex numbers: their IEEE bits, little-endian, real
//     part first.
//   - string: its length as a varint, then its bytes.
//   - slice and map: 0 for nil, else the length plus 1 as a varint, then
//     the elements (for a map, each entry's key and then its value, in
//     Go's map order). nil and empty are told apart: a nil slice or map
//     decodes as nil, an empty one as empty (where gob decodes both as
//     nil, or leaves a struct field untouched).
//   - array: its elements.
//   - struct: its exported fields, in order.
//   - pointer: 0 for nil, else 1 and the value it points to.
//   - a marshaler: the length of its bytes as a varint, then the bytes.
//
// A slice or array whose element is fixed-size (a number or bool, or an
// array or struct made only of such, with every field exported and no
// padding, as reflect measures it) is one raw block: the length as
// above for a slice, then the elements' little-endian memory, length
// times the element size. On little-endian hosts that is one memmove
// each way, so that a []float32 encodes and decodes at the speed of
// copy; elsewhere, or with the purego or nounsafe build tag, each
// element is written and read through reflect, to the same bytes.
// Inside a raw block ints are fixed-width, not varints. Decode reuses a
// slice's array when its capacity suffices, as gob does: a caller that
// decodes into the same variable again and again allocates once.
// Split and Place hand a raw block to a transport without the copy.
//
// Decode sets the whole of *v: pointers point to new values, maps are new
// maps, and unexported struct fields are zeroed.
//
// # Why an encoding of its own
//
// gob writes a []float32 element by element, tens of times slower than a
// typed send, and so do the self-describing formats Go programs reach
// for (MessagePack, CBOR, JSON: a tagged value per element). The formats
// that do send numbers as one packed block (Protocol Buffers' packed
// fields, FlatBuffers, Cap'n Proto) need a schema, and generated code,
// for every type a worker sends. The object helpers take any Go value
// that gob takes, with no schema, and want its numbers as one block of
// memory: that is this encoding, which is small enough to fuzz whole
// (FuzzDecode, FuzzRoundTrip). gob stays the fallback for values it does
// not take, and the choice (collective.GobCodec) where an encoding must
// describe itself.
//
// # Hostile input
//
// Decode never panics on any input, and never allocates more than 48
// times the input's length plus 32 KiB. Every declared length is checked
// against the bytes that remain before anything is allocated for it, at
// its element's size for a raw block and at the fewest bytes an element
// can take otherwise (1 for a string or a pointer); and since nested
// lengths each check against the same bytes, a decoding also draws what
// it allocates from that budget, which a valid encoding, at most 24
// bytes of slice headers per byte of input (a [][]T), never exhausts.
// The nesting of pointers, slices and maps is bounded at 10000 levels on
// both sides, so that a cycle of pointers or hostile nesting is an
// error, not a stack overflow. Truncated input, lengths beyond what
// remains, bad varints, bool bytes other than 0 and 1, and bytes left
// over after the value are errors wrapping ErrCorrupt; so is a marshaler
// or gob refusing its bytes. Values that go to gob are as safe as gob's
// decoder makes them: Decode first checks that gob's messages fit the
// input, and gob refuses lengths beyond its message, but it may allocate
// a few MiB for a short hostile message.
package objcodec
