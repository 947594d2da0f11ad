package collective

import (
	"context"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/kernel"
	"github.com/gocoll/gocoll/internal/wire"
)

// Scan is the inclusive prefix reduction: rank r's buf becomes r0∘r1∘…∘rr,
// combined in rank order, so non-commutative ops are welcome. Avg divides
// rank r's sum by r+1, the number of ranks it combines (MPI has no Avg;
// this is the running mean). Algorithms: RecursiveDoubling (lg p steps),
// and Shm (each rank's buf once into the segment, and each rank folds
// those of the ranks below it; the default where the ranks share a
// host).
func Scan[T codec.Elem](ctx context.Context, c *comm.Comm, buf []T, op codec.Op, opts ...Option) (err error) {
	var k call[T]
	if err = begin(&k, ctx, c, wire.KindScan, op, len(buf), -1, opts); err != nil {
		return err
	}
	defer k.leave(&err)
	if err := scan(&k, buf, true); err != nil {
		return err
	}
	kernel.Finish(op, buf, c.Rank()+1)
	return nil
}

// Exscan is the exclusive prefix reduction: rank r > 0's buf becomes
// r0∘…∘r(r-1), in rank order; rank 0's buf is left untouched, as MPI
// leaves it undefined. Avg divides rank r's sum by r. Algorithms:
// RecursiveDoubling and Shm, as Scan's.
func Exscan[T codec.Elem](ctx context.Context, c *comm.Comm, buf []T, op codec.Op, opts ...Option) (err error) {
	var k call[T]
	if err = begin(&k, ctx, c, wire.KindExscan, op, len(buf), -1, opts); err != nil {
		return err
	}
	defer k.leave(&err)
	if err := scan(&k, buf, false); err != nil {
		return err
	}
	if r := c.Rank(); r > 0 {
		kernel.Finish(op, buf, r)
	}
	return nil
}

// scan runs the call's algorithm for Scan (inclusive) or Exscan.
func scan[T codec.Elem](k *call[T], buf []T, inclusive bool) error {
	if k.me.Algorithm == Shm {
		return scanShm(k, buf, inclusive)
	}
	return scanDoubling(k, buf, inclusive)
}

// scanDoubling is MPICH's recursive-doubling scan. Each rank keeps
// partial, the combination of the aligned group of 2^j ranks around it
// (clipped to p), and in step j exchanges it with rank me^2^j. A partial
// from below (a lower group) joins on the left of both partial and the
// result, one from above only on the right of partial; groups stay
// contiguous and in order, so rank order holds. For the exclusive scan
// the first partial from below becomes the result, and rank 0, which
// never hears from below, keeps its buf.
func scanDoubling[T codec.Elem](k *call[T], buf []T, inclusive bool) error {
	p, me, n := k.c.Size(), k.c.Rank(), len(buf)
	if p == 1 {
		return nil
	}
	partial, pb := scratch[T](n)
	defer pb.release()
	tmp, tb := scratch[T](n)
	defer tb.release()
	copy(partial, buf)
	have := inclusive // whether buf holds a result to combine into
	step := 0
	for mask := 1; mask < p; mask <<= 1 {
		peer := me ^ mask
		if peer < p {
			if err := k.sendRecv(peer, step, partial, 0, peer, step, tmp, 0); err != nil {
				return err
			}
			if peer > me {
				if err := k.reduce(partial, tmp, true); err != nil {
					return err
				}
			} else {
				if have {
					if err := k.reduce(buf, tmp, false); err != nil {
						return err
					}
				} else {
					copy(buf, tmp)
					have = true
				}
				if err := k.reduce(partial, tmp, false); err != nil {
					return err
				}
			}
		}
		step++
	}
	return nil
}
