package collective

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// The object helpers move arbitrary Go values encoded with encoding/gob:
// configuration, vocabularies, small metadata. They are the slow path.
// Every value is encoded, its length sent first, and decoded on arrival:
// mpi4py's lowercase methods do the same with pickle. For slices of
// numbers use the typed collectives, which send the slice's own memory.
// A value that cannot be encoded aborts the job, because the other ranks
// are already waiting for it.

// BcastObject sets *v on every rank to root's *v.
func BcastObject[T any](ctx context.Context, c *comm.Comm, v *T, root int) error {
	if err := nilComm(c, "BcastObject"); err != nil {
		return err
	}
	var payload []byte
	if c.Rank() == root {
		var err error
		if payload, err = encode(c, "BcastObject", v); err != nil {
			return err
		}
	}
	length := []int64{int64(len(payload))}
	if err := Bcast(ctx, c, length, root); err != nil {
		return err
	}
	if c.Rank() != root {
		payload = make([]byte, length[0])
	}
	if err := Bcast(ctx, c, payload, root); err != nil {
		return err
	}
	if c.Rank() == root {
		return nil
	}
	return decode(c, "BcastObject", payload, v, root)
}

// AllgatherObject returns every rank's v, in rank order, on every rank.
func AllgatherObject[T any](ctx context.Context, c *comm.Comm, v T) ([]T, error) {
	if err := nilComm(c, "AllgatherObject"); err != nil {
		return nil, err
	}
	payload, err := encode(c, "AllgatherObject", &v)
	if err != nil {
		return nil, err
	}
	lengths := make([]int64, c.Size())
	if err := Allgather(ctx, c, []int64{int64(len(payload))}, lengths); err != nil {
		return nil, err
	}
	counts, total := countsOf(lengths)
	all := make([]byte, total)
	if err := Allgatherv(ctx, c, payload, all, counts); err != nil {
		return nil, err
	}
	return decodeAll[T](c, "AllgatherObject", all, counts)
}

// GatherObject returns every rank's v, in rank order, at root, and nil on
// the other ranks.
func GatherObject[T any](ctx context.Context, c *comm.Comm, v T, root int) ([]T, error) {
	if err := nilComm(c, "GatherObject"); err != nil {
		return nil, err
	}
	payload, err := encode(c, "GatherObject", &v)
	if err != nil {
		return nil, err
	}
	var lengths []int64
	if c.Rank() == root {
		lengths = make([]int64, c.Size())
	}
	if err := Gather(ctx, c, []int64{int64(len(payload))}, lengths, root); err != nil {
		return nil, err
	}
	// Every rank must pass Gatherv the same counts, so root shares them.
	if c.Rank() != root {
		lengths = make([]int64, c.Size())
	}
	if err := Bcast(ctx, c, lengths, root); err != nil {
		return nil, err
	}
	counts, total := countsOf(lengths)
	var all []byte
	if c.Rank() == root {
		all = make([]byte, total)
	}
	if err := Gatherv(ctx, c, payload, all, counts, root); err != nil {
		return nil, err
	}
	if c.Rank() != root {
		return nil, nil
	}
	return decodeAll[T](c, "GatherObject", all, counts)
}

// nilComm refuses a nil communicator, as the typed collectives do.
func nilComm(c *comm.Comm, call string) error {
	if c == nil {
		return fmt.Errorf("%w: %s on a nil communicator", codec.ErrInvalid, call)
	}
	return nil
}

func encode[T any](c *comm.Comm, call string, v *T) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		err = fmt.Errorf("%w: %s on rank %d: encoding %T: %w", codec.ErrInvalid, call, c.Rank(), *v, err)
		c.Abort(err)
		return nil, err
	}
	return b.Bytes(), nil
}

// decode decodes the payload from rank from into v. A payload that does
// not decode means the ranks disagree on the type: the job is aborted
// with ErrMismatch, so that no rank goes on with a partial result.
func decode[T any](c *comm.Comm, call string, payload []byte, v *T, from int) error {
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(v); err != nil {
		err = fmt.Errorf("%w: %s on rank %d: the %d bytes from rank %d do not decode as %T (do all ranks pass the same type?): %w",
			comm.ErrMismatch, call, c.Rank(), len(payload), from, *v, err)
		c.Abort(err)
		return err
	}
	return nil
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

func decodeAll[T any](c *comm.Comm, call string, all []byte, counts []int) ([]T, error) {
	out := make([]T, len(counts))
	off := 0
	for r, n := range counts {
		if err := decode(c, call, all[off:off+n], &out[r], r); err != nil {
			return nil, err
		}
		off += n
	}
	return out, nil
}
