package bench

import (
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
)

// The object sweeps move the same float32 data as allreduce and allgather
// inside a Go value, through collective.AllgatherObject: encoded with RawCodec,
// its length sent first, decoded on arrival, and, for allreduce, summed
// locally, as mpi4py's lowercase allreduce and allgather do with pickle.
// Next to the typed rows they show what serialisation costs.

// vector is the value each rank contributes.
type vector struct {
	Data []float32
}

// gatherVectors calls AllgatherObject and checks that every rank's vector
// has m elements, so that a short one is an error rather than a panic.
func (k *kernel) gatherVectors(v vector, m int) ([]vector, error) {
	all, err := collective.AllgatherObject(k.ctx, k.c, v)
	if err != nil {
		return nil, err
	}
	for r, got := range all {
		if len(got.Data) != m {
			return nil, fmt.Errorf("rank %d's vector has %d elements, want %d", r, len(got.Data), m)
		}
	}
	return all, nil
}

// allreduceObject sums the vectors in rank order after the gather, with
// ReduceLocal, as numpy's vectorised + does for mpi4py.
func (k *kernel) allreduceObject() {
	v, out := vector{Data: make([]float32, k.elems())}, make([]float32, k.elems())
	k.out = out
	for i := range v.Data {
		v.Data[i] = k.pattern(k.me, i)
	}
	k.prepare = func(it int) { v.Data[0] = k.stamp(k.me, it) }
	k.call = func() error {
		all, err := k.gatherVectors(v, len(out))
		if err != nil {
			return err
		}
		copy(out, all[0].Data)
		for _, w := range all[1:] {
			if err := collective.ReduceLocal(out, w.Data, codec.Sum); err != nil {
				return err
			}
		}
		return nil
	}
	k.stamped = func(it int) error {
		return k.expect(0, it, sumOver(k.n, func(r int) float32 { return k.stamp(r, it) }))
	}
	k.check = func() error {
		return k.expectAll(len(k.out), func(i int) float32 {
			return sumOver(k.n, func(r int) float32 { return k.pattern(r, i) })
		})
	}
}

// bcastObject sets every rank's vector to rank 0's through BcastObject,
// as mpi4py's lowercase bcast does; the receivers' vectors keep their
// arrays from call to call, which the codec decodes into.
func (k *kernel) bcastObject() {
	v := vector{Data: make([]float32, k.elems())}
	if k.me == 0 {
		for i := range v.Data {
			v.Data[i] = k.pattern(0, i)
		}
	}
	k.out = v.Data
	k.prepare = func(it int) {
		v.Data[0] = -1
		if k.me == 0 {
			v.Data[0] = k.stamp(0, it)
		}
	}
	k.call = func() error {
		if err := collective.BcastObject(k.ctx, k.c, &v, 0); err != nil {
			return err
		}
		if len(v.Data) != len(k.out) {
			return fmt.Errorf("rank 0's vector arrived with %d elements, want %d", len(v.Data), len(k.out))
		}
		k.out = v.Data
		return nil
	}
	k.stamped = func(it int) error { return k.expect(0, it, k.stamp(0, it)) }
	k.check = func() error { return k.expectAll(len(k.out), func(i int) float32 { return k.pattern(0, i) }) }
}

// allgatherObject lays the vectors out in rank order, as allgather does.
func (k *kernel) allgatherObject() {
	m := k.block()
	v, out := vector{Data: make([]float32, m)}, make([]float32, k.elems())
	k.out = out
	for i := range v.Data {
		v.Data[i] = k.pattern(k.me, i)
	}
	k.prepare = func(it int) { v.Data[0] = k.stamp(k.me, it) }
	k.call = func() error {
		all, err := k.gatherVectors(v, m)
		if err != nil {
			return err
		}
		for q, w := range all {
			copy(out[q*m:], w.Data)
		}
		return nil
	}
	k.stamped = func(it int) error { return k.expectBlocks(m, it, k.stamp) }
	k.check = func() error { return k.expectAll(m, func(i int) float32 { return k.pattern(i/m, i%m) }) }
}
