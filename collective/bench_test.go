package collective

import (
	"context"
	"fmt"
	"testing"

	"github.com/gocoll/gocoll/codec"
	"github.com/gocoll/gocoll/comm"
)

// BenchmarkAllreduce times Allreduce of float32 sums among ranks of this
// process, over shared memory (auto) and over links (mem), for profiling
// the collectives' own costs. Ranks that share a process share its
// scheduler, so the figures are not those of a job of processes:
// gocoll bench measures those.
func BenchmarkAllreduce(b *testing.B) {
	for _, tr := range []string{"auto", "mem"} {
		for _, n := range []int{2, 4} {
			for _, bytes := range []int{8, 64 << 10, 1 << 20, 16 << 20} {
				b.Run(fmt.Sprintf("%s/np=%d/%dB", tr, n, bytes), func(b *testing.B) {
					benchCollective(b, n, bytes, comm.WithTransport(tr), func(ctx context.Context, c *comm.Comm, buf []float32) error {
						return Allreduce(ctx, c, buf, codec.Sum)
					})
				})
			}
		}
	}
}

// BenchmarkBcast times Bcast from rank 0 like BenchmarkAllreduce.
func BenchmarkBcast(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, bytes := range []int{8, 1 << 20, 16 << 20} {
			b.Run(fmt.Sprintf("auto/np=%d/%dB", n, bytes), func(b *testing.B) {
				benchCollective(b, n, bytes, comm.WithTransport("auto"), func(ctx context.Context, c *comm.Comm, buf []float32) error {
					return Bcast(ctx, c, buf, 0)
				})
			})
		}
	}
}

// benchCollective runs f b.N times on every rank of an n-rank job, with
// a float32 buffer of the given bytes per rank, and reports the bytes.
func benchCollective(b *testing.B, n, bytes int, opt comm.Option, f func(context.Context, *comm.Comm, []float32) error) {
	cs := job(b, n, opt)
	ctx := context.Background()
	bufs := make([][]float32, n)
	for i := range bufs {
		bufs[i] = make([]float32, bytes/4)
	}
	b.SetBytes(int64(bytes))
	errs := make(chan error, n-1)
	iters := b.N
	b.ResetTimer()
	for i, c := range cs[1:] {
		go func() {
			for range iters {
				if err := f(ctx, c, bufs[i+1]); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range iters {
		if err := f(ctx, cs[0], bufs[0]); err != nil {
			b.Fatal(err)
		}
	}
	for range cs[1:] {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}
