package bench

import (
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/collective"
)

// The object sweeps move the same float32 data as allreduce, bcast and
// allgather inside a Go value, through collective.AllreduceObject,
// BcastObject and AllgatherObject with RawCodec, as mpi4py's lowercase
// allreduce, bcast and allgather do with pickle. Next to the typed rows
// they show what going through the object codec costs.

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

// allreduceObject sums the vectors with AllreduceObject and ReduceLocal,
// as mpi4py's lowercase allreduce does with numpy's vectorised +. The
// call works in place, as MPI_IN_PLACE does, so the rank's vector is set
// again before each call, untimed.
func (k *kernel) allreduceObject() {
	send, v := make([]float32, k.elems()), vector{Data: make([]float32, k.elems())}
	for i := range send {
		send[i] = k.pattern(k.me, i)
	}
	k.out = v.Data
	k.prepare = func(it int) {
		send[0] = k.stamp(k.me, it)
		v.Data = append(v.Data[:0], send...)
	}
	sum := func(acc, x *vector) error { return collective.ReduceLocal(acc.Data, x.Data, codec.Sum) }
	k.call = func() error {
		if err := collective.AllreduceObject(k.ctx, k.c, &v, sum); err != nil {
			return err
		}
		if len(v.Data) != len(send) {
			return fmt.Errorf("the sum arrived with %d elements, want %d", len(v.Data), len(send))
		}
		k.out = v.Data
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
