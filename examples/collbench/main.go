// Command collbench is an OSU-style benchmark of gocoll's Allreduce
// (float32 sum, out of place), Bcast (root 0) and Gather (root 0), timed
// the way ../shared/anchors/mpi_coll_bench.c times Open MPI, so that the
// two print comparable CSV lines:
//
//	impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps
//
// Each timed call is measured alone and separated from the next by an
// untimed Barrier; a rank's average is its sum over the iterations, and
// the figure reported is the largest average over the ranks. bytes is the
// reduced vector (allreduce), the broadcast buffer (bcast) or root's
// receive buffer (gather); busbw is algbw times 2(n-1)/n, 1 and (n-1)/n.
// Every result is checked, and a wrong one ends the run with an error.
//
//	go build -o /tmp/collbench ./examples/collbench
//	gocoll run -n 4 /tmp/collbench -c allreduce,bcast -m 16777216
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
)

func main() {
	impl := flag.String("i", "gocoll", "implementation name in the CSV")
	tr := flag.String("t", os.Getenv("GOCOLL_TRANSPORT"), "transport name in the CSV")
	maxBytes := flag.Int("m", 64<<20, "largest message in bytes")
	minBytes := flag.Int("min", 4, "smallest message in bytes")
	scale := flag.Float64("s", 1, "iteration-count multiplier")
	colls := flag.String("c", "allreduce,bcast,gather", "collectives to time")
	algo := flag.String("a", "", "algorithm to force (default: the selector's)")
	header := flag.Bool("H", false, "print the CSV header")
	profile := flag.String("cpuprofile", "", "write each rank's CPU profile to this file, with .<rank> appended")
	flag.Parse()

	ctx := context.Background()
	c, err := comm.Init(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if *profile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", *profile, c.Rank()))
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	var opts []collective.Option
	if *algo != "" {
		a, err := collective.ParseAlgorithm(*algo)
		if err != nil {
			log.Fatal(err)
		}
		opts = append(opts, collective.WithAlgorithm(a))
	}
	if *tr == "" {
		*tr = "auto"
	}
	if *header && c.Rank() == 0 {
		fmt.Println("impl,transport,np,collective,bytes,avg_us,algbw_GBps,busbw_GBps")
	}
	b := bench{ctx: ctx, c: c, opts: opts}
	for _, name := range strings.Split(*colls, ",") {
		for bytes := *minBytes; bytes <= *maxBytes; bytes *= 2 {
			avg, factor, ok, err := b.run(name, bytes, iters(bytes, *scale))
			if err != nil {
				log.Fatalf("%s of %d bytes: %v", name, bytes, err)
			}
			if ok && c.Rank() == 0 {
				algbw := float64(bytes) / avg.Seconds() / 1e9
				fmt.Printf("%s,%s,%d,%s,%d,%.3f,%.4f,%.4f\n", *impl, *tr, c.Size(), name, bytes,
					float64(avg.Nanoseconds())/1e3, algbw, algbw*factor)
			}
		}
	}
}

// iters is mpi_coll_bench.c's count: about 256 MiB per size, 10 to 1000.
func iters(bytes int, scale float64) int {
	it := min(max((256<<20)/max(bytes, 1), 10), 1000)
	return max(int(float64(it)*scale), 2)
}

type bench struct {
	ctx  context.Context
	c    *comm.Comm
	opts []collective.Option
}

// pattern is mpi_coll_bench.c's per-rank, per-index value.
func pattern(r, i int) float32 { return float32(r+1) + float32(i%7) }

// run times iters calls of the collective on bytes bytes and returns the
// largest per-rank average and the busbw factor; ok is false for sizes the
// collective skips.
func (b *bench) run(name string, bytes, iters int) (avg time.Duration, factor float64, ok bool, err error) {
	c, me, n := b.c, b.c.Rank(), b.c.Size()
	var call func() error
	var check func() error
	prepare := func() {} // before each call, outside the timing
	switch name {
	case "allreduce":
		send, recv := make([]float32, bytes/4), make([]float32, bytes/4)
		for i := range send {
			send[i] = pattern(me, i)
		}
		call = func() error {
			copy(recv, send) // out of place, as MPI_Allreduce with two buffers
			return collective.Allreduce(b.ctx, c, recv, collective.Sum, b.opts...)
		}
		check = func() error {
			for i, v := range recv {
				want := float32(0)
				for r := range n {
					want += pattern(r, i)
				}
				if v != want {
					return fmt.Errorf("allreduce element %d is %v, want %v", i, v, want)
				}
			}
			return nil
		}
		factor = 2 * float64(n-1) / float64(n)
	case "bcast":
		// As mpi_coll_bench.c: root's buffer is filled once, and each
		// iteration stamps its number into element 0 outside the timing
		// and checks it after the call.
		buf := make([]float32, bytes/4)
		if me == 0 {
			for i := range buf {
				buf[i] = pattern(0, i)
			}
		}
		it := 0
		call = func() error {
			if err := collective.Bcast(b.ctx, c, buf, 0, b.opts...); err != nil {
				return err
			}
			if len(buf) > 0 && buf[0] != float32(it) {
				return fmt.Errorf("bcast iteration %d: element 0 is %v", it, buf[0])
			}
			return nil
		}
		prepare = func() {
			it++
			if len(buf) > 0 {
				buf[0] = -1
				if me == 0 {
					buf[0] = float32(it)
				}
			}
		}
		check = func() error {
			for i := 1; i < len(buf); i++ {
				if v := buf[i]; v != pattern(0, i) {
					return fmt.Errorf("bcast element %d is %v, want %v", i, v, pattern(0, i))
				}
			}
			return nil
		}
		factor = 1
	case "gather":
		if bytes%(4*n) != 0 {
			return 0, 0, false, nil
		}
		m := bytes / 4 / n
		send, recv := make([]float32, m), make([]float32, bytes/4)
		for i := range send {
			send[i] = pattern(me, i)
		}
		call = func() error { return collective.Gather(b.ctx, c, send, recv, 0, b.opts...) }
		check = func() error {
			if me != 0 {
				return nil
			}
			for i, v := range recv {
				if want := pattern(i/m, i%m); v != want {
					return fmt.Errorf("gather element %d is %v, want %v", i, v, want)
				}
			}
			return nil
		}
		factor = float64(n-1) / float64(n)
	default:
		return 0, 0, false, fmt.Errorf("unknown collective %q (want allreduce, bcast or gather)", name)
	}
	// Warm-up iterations (a tenth, at least 2), then the timed ones, each
	// after a barrier, as mpi_coll_bench.c runs them.
	warm := max(iters/10, 2)
	var sum time.Duration
	for it := range warm + iters {
		prepare()
		if err := collective.Barrier(b.ctx, c); err != nil {
			return 0, 0, false, err
		}
		start := time.Now()
		if err := call(); err != nil {
			return 0, 0, false, err
		}
		if it >= warm {
			sum += time.Since(start)
		}
	}
	if err := check(); err != nil {
		return 0, 0, false, err
	}
	mean := []float64{float64(sum) / float64(iters)}
	if err := collective.Allreduce(b.ctx, c, mean, collective.Max); err != nil {
		return 0, 0, false, err
	}
	return time.Duration(mean[0]), factor, true, nil
}
