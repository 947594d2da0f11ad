package comm_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/gocoll/gocoll/comm"
)

// Two ranks in one process exchange a message. A program started by
// gocoll run, mpirun, srun or torchrun calls comm.Init instead, once per
// process, and gets its own rank's communicator.
func ExampleComm_Send() {
	cs, err := comm.NewLocal(2)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cs[0].Close()
		if err := cs[0].Send(ctx, 1, 7, []byte("hello")); err != nil {
			log.Fatal(err)
		}
	})
	buf := make([]byte, 16)
	st, err := cs[1].Recv(ctx, 0, 7, buf)
	n := st.Bytes
	if err != nil {
		log.Fatal(err)
	}
	wg.Wait()
	cs[1].Close()
	fmt.Printf("rank 1 got %q from rank 0\n", buf[:n])
	// Output: rank 1 got "hello" from rank 0
}

// Init joins the job its launcher started; options override the
// environment. Run the program under a launcher, for example
// gocoll run -n 4 ./prog, or mpirun -n 4 ./prog.
func ExampleInit() {
	ctx := context.Background()
	c, err := comm.Init(ctx, comm.WithTimeout(10*time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Printf("rank %d of %d\n", c.Rank(), c.Size())
}
