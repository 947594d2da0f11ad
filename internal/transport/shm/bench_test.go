//go:build linux

package shm_test

import (
	"fmt"
	"testing"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/shm"
)

func BenchmarkLatency(b *testing.B) {
	a, z := linktest.Pair(b, shm.New())
	linktest.BenchmarkPingPong(b, a, z, 8)
}

// benchModes are the ways a large payload can go.
var benchModes = []struct {
	name string
	opts []shm.Option
}{
	{"cma", []shm.Option{shm.WithCMA()}},
	{"ring", nil},
}

func BenchmarkBandwidth(b *testing.B) {
	for _, size := range []int{1 << 20, 16 << 20} {
		for _, m := range benchModes {
			b.Run(fmt.Sprintf("size=%dMiB/%s", size>>20, m.name), func(b *testing.B) {
				a, z := linktest.Pair(b, shm.New(m.opts...))
				linktest.BenchmarkStream(b, a, z, size)
			})
		}
	}
}

// The process benchmarks measure between two processes, the way ranks
// on one host use the transport: the test binary and a helper process
// that runs linktest.Echo or linktest.Sink (see TestHelperProcess). In
// one process, as above, both ends may take turns on one core and share
// its caches, which flatters the ring.

func BenchmarkProcessLatency(b *testing.B) {
	for _, size := range []int{8, 64 << 10, 1 << 20} {
		for _, m := range benchModes {
			if size < shm.CMAThreshold && m.opts != nil {
				continue // every mode sends it through the ring
			}
			b.Run(fmt.Sprintf("size=%dKiB/%s", size>>10, m.name), func(b *testing.B) {
				l := processPeer(b, m.opts, "echo")
				linktest.PingPong(b, l, size)
			})
		}
	}
}

func BenchmarkProcessBandwidth(b *testing.B) {
	for _, size := range []int{32 << 10, 64 << 10, 1 << 20, 16 << 20} {
		for _, m := range benchModes {
			b.Run(fmt.Sprintf("size=%dKiB/%s", size>>10, m.name), func(b *testing.B) {
				l := processPeer(b, m.opts, "sink")
				linktest.Stream(b, l, size)
			})
		}
	}
}

// processPeer returns a link, made with opts, to a helper process that
// serves it in mode.
func processPeer(b *testing.B, opts []shm.Option, mode string) transport.Link {
	ln, err := shm.New(opts...).Listen("", linktest.Config(1, nil))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	l, _ := startHelper(b, ln, mode)
	return l
}
