package collective

import (
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/ops"
)

// ReduceLocal combines src into dst with op on this rank alone, as MPI's
// MPI_Reduce_local does: dst[i] = dst[i] ∘ src[i], dst holding the left
// operand, as a user op's fn takes it (MPI_Reduce_local's in-out buffer
// is the right one). It runs the collectives' kernels (AVX2 on amd64)
// and allocates nothing: what a program uses to combine values that came
// as objects (AllgatherObject, RecvObject), or its own contributions
// before a collective.
//
// dst and src must have the same length and be the same slice or not
// overlap. It is an error wrapping codec.ErrInvalid (also
// comm.ErrInvalid), and dst is unchanged, if the lengths differ, if op
// cannot reduce T (a bitwise op on floats, a user op of another type),
// or if op is Avg, whose division by the number of contributions only a
// collective knows: combine with Sum and divide.
func ReduceLocal[T codec.Elem](dst, src []T, op codec.Op) error {
	if kernel.ID(op) == ops.Avg {
		return fmt.Errorf("%w: ReduceLocal with op avg, which divides by the number of contributions: use sum and divide", codec.ErrInvalid)
	}
	if err := kernel.Reduce(op, dst, src); err != nil {
		return fmt.Errorf("ReduceLocal: %w", err)
	}
	return nil
}
