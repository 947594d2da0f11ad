package tcp_test

import (
	"fmt"
	"testing"

	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/tcp"
)

// sockBufs are the socket buffer settings the bandwidth benchmark
// compares; see tcp.WithSocketBuffers for the conclusion.
var sockBufs = []struct {
	name string
	size int // 0: kernel autotuning
}{
	{"auto", 0},
	{"256KiB", 256 << 10},
	{"4MiB", 4 << 20},
}

func BenchmarkLatency(b *testing.B) {
	a, z := linktest.Pair(b, &tcp.Transport{})
	linktest.BenchmarkPingPong(b, a, z, 8)
}

func BenchmarkBandwidth(b *testing.B) {
	for _, size := range []int{1 << 20, 16 << 20} {
		for _, sb := range sockBufs {
			b.Run(fmt.Sprintf("size=%dMiB/sockbuf=%s", size>>20, sb.name), func(b *testing.B) {
				tr, err := tcp.New(tcp.WithSocketBuffers(sb.size, sb.size))
				if err != nil {
					b.Fatal(err)
				}
				a, z := linktest.Pair(b, tr)
				linktest.BenchmarkStream(b, a, z, size)
			})
		}
	}
}
