package mem_test

import (
	"fmt"
	"testing"

	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/mem"
)

func BenchmarkLatency(b *testing.B) {
	a, z := pair(b, mem.NewNetwork().Transport(), 0, 1)
	linktest.BenchmarkPingPong(b, a, z, 8)
}

func BenchmarkBandwidth(b *testing.B) {
	for _, size := range []int{1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("size=%dMiB", size>>20), func(b *testing.B) {
			a, z := pair(b, mem.NewNetwork().Transport(), 0, 1)
			linktest.BenchmarkStream(b, a, z, size)
		})
	}
}
