package collective

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/objcodec"
)

// fuzzObject is the value FuzzRecvObject receives: every kind of field
// a task or a result holds, and a slice of numbers last, which SendObject
// sends split, its raw block behind the head.
type fuzzObject struct {
	Name   string
	Tags   map[string]int32
	Parts  []fuzzPart
	Scale  float64
	Values []float32
}

type fuzzPart struct {
	ID   int64
	Data []uint16
}

// FuzzRecvObject: whatever a peer sends, as one payload or split into a
// head and a raw block as SendObject sends a value that ends with a
// slice, RecvObject and RecvObjectInto (RawCodec, the default) return a
// value or an error wrapping comm.ErrMismatch. They never panic, and
// never allocate much more than the message holds, whatever lengths it
// declares. objcodec's FuzzDecode fuzzes the decoding alone; this fuzzes
// it behind the receive, whose Placer sizes the raw block from a head it
// has not checked yet. GobCodec is left out: encoding/gob is not hardened
// against hostile input (its package documentation says so), and a map
// length it reads is a size hint that it allocates as it stands.
func FuzzRecvObject(f *testing.F) {
	valid := fuzzObject{Name: "task", Tags: map[string]int32{"a": 1, "b": -2},
		Parts: []fuzzPart{{ID: 7, Data: []uint16{1, 2, 3}}}, Scale: 0.5, Values: make([]float32, 600)}
	whole, err := RawCodec.Append(nil, &valid)
	if err != nil {
		f.Fatal(err)
	}
	head, body, ok, err := objcodec.Split(nil, &valid)
	if err != nil || !ok {
		f.Fatalf("splitting the seed: ok %v, %v", ok, err)
	}
	split := append(append([]byte(nil), head...), body...)
	f.Add(whole, uint16(0))
	f.Add(split, uint16(len(head)))
	f.Add(whole[:len(whole)/2], uint16(0))                                                      // truncated
	f.Add(split[:len(head)+10], uint16(len(head)))                                              // a block cut short
	f.Add(split, uint16(len(head)-1))                                                           // a head one byte short
	f.Add(append(whole[:9:9], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), uint16(0)) // a huge length
	f.Add([]byte{}, uint16(0))

	cs := job(f, 2)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, payload []byte, headLen uint16) {
		sent := make(chan error, 2)
		send := func() {
			if h := int(headLen); h > 0 && h <= len(payload) {
				sent <- (*core.Comm)(cs[1]).SendSplit(ctx, 0, 5, payload[:h], payload[h:])
			} else {
				sent <- cs[1].Send(ctx, 0, 5, payload)
			}
		}
		check := func(call string, err error, allocated uint64) {
			t.Helper()
			if err != nil && !errors.Is(err, comm.ErrMismatch) {
				t.Fatalf("%s of %d bytes (head %d): %v, not a mismatch", call, len(payload), headLen, err)
			}
			if limit := 64*uint64(len(payload)) + 1<<20; allocated > limit {
				t.Fatalf("%s of %d bytes (head %d) allocated %d bytes", call, len(payload), headLen, allocated)
			}
			select {
			case err := <-sent:
				if err != nil {
					t.Fatalf("sending: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s of %d bytes (head %d, err %v): the send did not end: %x", call, len(payload), headLen, err, payload)
			}
		}

		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		go send()
		before := allocatedBytes()
		_, _, err := RecvObject[fuzzObject](rctx, cs[0], comm.AnySource, 5)
		check("RecvObject", err, allocatedBytes()-before)

		// Into a value that has arrays already, which decoding reuses.
		into := valid
		into.Values = make([]float32, 4)
		go send()
		before = allocatedBytes()
		_, err = RecvObjectInto(rctx, cs[0], 1, 5, &into)
		check("RecvObjectInto", err, allocatedBytes()-before)
	})
}

// allocatedBytes is what this process has allocated on the heap so far.
func allocatedBytes() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}
