package comm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gocoll/gocoll/comm"
)

func TestSplit(t *testing.T) {
	for _, tr := range transports {
		for _, n := range []int{1, 2, 5, 8} {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				cs := newJob(t, n, comm.WithTransport(tr))
				const colors = 3
				runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					me := c.Rank()
					color := me % colors
					if me == n-1 && n > 2 {
						color = -1 // the last rank opts out
					}
					// Keys reverse the order inside each color.
					sub, err := c.Split(ctx, color, -me)
					if err != nil {
						return err
					}
					if color < 0 {
						if sub != nil {
							return fmt.Errorf("negative color gave a communicator")
						}
						return nil
					}
					var members []int
					for r := n - 1; r >= 0; r-- {
						if r%colors == color && !(r == n-1 && n > 2) {
							members = append(members, r)
						}
					}
					if sub.Size() != len(members) {
						return fmt.Errorf("sub size %d, want %d", sub.Size(), len(members))
					}
					for i, w := range members {
						if engine(sub).WorldRank(i) != w {
							return fmt.Errorf("sub rank %d is world rank %d, want %d", i, engine(sub).WorldRank(i), w)
						}
						if w == me && sub.Rank() != i {
							return fmt.Errorf("my sub rank is %d, want %d", sub.Rank(), i)
						}
					}
					if engine(sub).ID() == engine(c).ID() {
						return fmt.Errorf("sub communicator reuses the parent's id")
					}
					return crossTraffic(ctx, c, sub)
				})
			})
		}
	}
}

// crossTraffic sends on the parent and on the sub communicator with the
// same tag, and receives them in the opposite order: if the two mixed, a
// receive would get the other communicator's bytes.
func crossTraffic(ctx context.Context, parent, sub *comm.Comm) error {
	const tag = 4
	if sub.Size() < 2 {
		return nil
	}
	me, next, prev := sub.Rank(), (sub.Rank()+1)%sub.Size(), (sub.Rank()+sub.Size()-1)%sub.Size()
	pNext, pPrev := engine(sub).WorldRank(next), engine(sub).WorldRank(prev)
	if err := parent.Send(ctx, pNext, tag, []byte("parent")); err != nil {
		return err
	}
	if err := sub.Send(ctx, next, tag, []byte("sub")); err != nil {
		return err
	}
	buf := make([]byte, 8)
	st, err := sub.Recv(ctx, prev, tag, buf)
	n := st.Bytes
	if err != nil {
		return err
	}
	if string(buf[:n]) != "sub" {
		return fmt.Errorf("sub rank %d got %q on the sub communicator", me, buf[:n])
	}
	st, err = parent.Recv(ctx, pPrev, tag, buf)
	n = st.Bytes
	if err != nil {
		return err
	}
	if string(buf[:n]) != "parent" {
		return fmt.Errorf("rank %d got %q on the parent communicator", parent.Rank(), buf[:n])
	}
	return nil
}

// TestSplitTwice: nested splits and repeated splits get distinct ids.
func TestSplitTwice(t *testing.T) {
	cs := newJob(t, 4)
	runOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
		a, err := c.Split(ctx, 0, c.Rank())
		if err != nil {
			return err
		}
		b, err := c.Split(ctx, 0, c.Rank())
		if err != nil {
			return err
		}
		if engine(a).ID() == engine(b).ID() {
			return fmt.Errorf("two splits share id %#x", engine(a).ID())
		}
		half, err := a.Split(ctx, a.Rank()/2, 0)
		if err != nil {
			return err
		}
		if half.Size() != 2 {
			return fmt.Errorf("nested split size %d", half.Size())
		}
		if err := crossTraffic(ctx, a, half); err != nil {
			return err
		}
		return half.Close()
	})
}
