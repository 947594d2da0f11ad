package collective

import (
	"context"
	"fmt"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/wire"
)

// Alltoall sends block j of every rank's send to rank j, which stores it
// as block i of its recv, i being the sender: with b = len(send)/Size(),
// rank i's send[j·b:(j+1)·b] ends up in rank j's recv[i·b:(i+1)·b]. send
// and recv have the same length, a multiple of Size(), and must not
// overlap. Algorithms: Pairwise (p-1 steps, one block each way per step)
// and Shm (each block once into the segment and once out, or with
// registered buffers straight from the sender's send; the default where
// the ranks share a host).
func Alltoall[T codec.Elem](ctx context.Context, c *comm.Comm, send, recv []T, opts ...Option) (err error) {
	var k call[T]
	if err = prepare(&k, ctx, c, wire.KindAlltoall, codec.Op{}, len(send), -1, opts); err != nil {
		return err
	}
	p := c.Size()
	if len(send)%p != 0 || len(recv) != len(send) {
		return k.invalid(fmt.Errorf("%w: send has %d elements and recv %d; both need the same multiple of Size() = %d",
			codec.ErrInvalid, len(send), len(recv), p))
	}
	if err = k.start(); err != nil {
		return err
	}
	defer k.leave(&err)
	if k.me.Algorithm == Shm {
		return alltoallShm(&k, send, recv)
	}
	return alltoallPairwise(&k, send, recv)
}

// alltoallPairwise is the pairwise exchange: in step s a rank sends its
// block for rank me+s and receives the block of rank me-s, the receive
// posted first. Every rank talks to one peer each way per step, so no
// link carries more than one block at a time. The offset on the wire is
// where the block lands in the receiver's recv.
func alltoallPairwise[T codec.Elem](k *call[T], send, recv []T) error {
	p, me := k.c.Size(), k.c.Rank()
	b := len(send) / p
	copy(recv[me*b:(me+1)*b], send[me*b:(me+1)*b])
	for s := 1; s < p; s++ {
		to, from := (me+s)%p, (me-s+p)%p
		if err := k.sendRecv(to, s, send[to*b:(to+1)*b], me*b, from, s, recv[from*b:(from+1)*b], from*b); err != nil {
			return err
		}
	}
	return nil
}
