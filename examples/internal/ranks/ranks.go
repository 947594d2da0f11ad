// Package ranks starts the examples' ranks: under a launcher, the one
// rank of this process; with -local n, n ranks in goroutines of this
// process, as separate processes would run them.
package ranks

import (
	"context"
	"errors"
	"sync"

	"github.com/gocoll/gocoll/comm"
)

// Run runs rank on every rank of the job: with local == 0 on the one rank
// of this process in the job its launcher started (comm.Init), else on
// local ranks in goroutines of this process (comm.NewLocal). A local rank
// that fails aborts the others, which would otherwise wait for it until
// the communicator's timeout. opts go to Init or NewLocal.
func Run(ctx context.Context, local int, opts []comm.Option, rank func(context.Context, *comm.Comm) error) error {
	if local == 0 {
		c, err := comm.Init(ctx, opts...)
		if err != nil {
			return err
		}
		defer c.Close()
		return rank(ctx, c)
	}
	cs, err := comm.NewLocal(local, opts...)
	if err != nil {
		return err
	}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() {
			defer c.Close()
			if errs[r] = rank(ctx, c); errs[r] != nil {
				c.Abort(errs[r])
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
