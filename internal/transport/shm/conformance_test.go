//go:build linux

package shm_test

import (
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/shm"
)

func TestConformance(t *testing.T) {
	tests := []struct {
		name  string
		opts  []shm.Option
		suite []linktest.Option
	}{
		{"default", nil, []linktest.Option{linktest.WithHolds(shm.DefaultRingSize / 2)}},
		// A payload read straight out of the writer's memory is whole
		// as soon as its record is, and its write waits for the reader
		// at any size from CMAThreshold.
		{"CMA", []shm.Option{shm.WithCMA()}, []linktest.Option{linktest.WithHolds(math.MaxInt), linktest.WithLarge(64 * shm.CMAThreshold)}},
		// Every message wraps around the ring's end, and the large
		// ones stream through it many times over (RoundTrip's 16 MiB
		// four thousand times), so its cases get a longer watchdog
		// than the default.
		{"tiny ring", []shm.Option{shm.WithRingSize(shm.MinRingSize)},
			[]linktest.Option{linktest.WithHolds(shm.MinRingSize), linktest.WithTimeout(time.Minute)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]linktest.Option{linktest.WithRawDial(func(addr string) (io.ReadWriteCloser, error) {
				return net.Dial("unix", addr)
			})}, tc.suite...)
			linktest.TestTransport(t, func(t *testing.T) transport.Transport { return shm.New(tc.opts...) }, opts...)
		})
	}
}
