package collective

import (
	"context"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/wire"
)

// Barrier returns on a rank once every rank of c has entered it.
// Algorithms: Dissemination (ceil(lg p) rounds of empty messages) and,
// where the ranks share a host, Shm (every rank waits on the others'
// counters in shared memory).
func Barrier(ctx context.Context, c *comm.Comm) (err error) {
	var k call[uint8]
	if err = begin(&k, ctx, c, wire.KindBarrier, codec.Op{}, 0, -1, nil); err != nil {
		return err
	}
	defer k.leave(&err)
	if k.me.Algorithm == Shm {
		return barrierShm(&k)
	}
	return barrierDissemination(&k)
}

// barrierDissemination is the dissemination barrier (Hensgen, Finkel and
// Manber): in round j every rank signals rank me+2^j and waits for rank
// me-2^j. After round j a rank has heard, directly or through others,
// from the 2^(j+1)-1 ranks below it (mod p), so after ceil(lg p) rounds
// from all of them; unlike a tree, no rank waits for a second round trip.
func barrierDissemination(k *call[uint8]) error {
	p, me := k.c.Size(), k.c.Rank()
	step := 0
	for d := 1; d < p; d <<= 1 {
		if err := k.sendRecv((me+d)%p, step, nil, 0, (me-d+p)%p, step, nil, 0); err != nil {
			return err
		}
		step++
	}
	return nil
}
