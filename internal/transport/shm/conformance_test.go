//go:build linux

package shm_test

import (
	"io"
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
		guard time.Duration // the watchdog of a case; 0: linktest.Timeout
	}{
		{"default", nil, 0},
		{"CMA", []shm.Option{shm.WithCMA()}, 0},
		// Every message wraps around the ring's end, and the large
		// ones stream through it many times over: the Poll case's two
		// 64 MiB messages took over 10 s under the race detector on a
		// machine of two CPUs that other packages' tests shared.
		{"tiny ring", []shm.Option{shm.WithRingSize(shm.MinRingSize)}, time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := []linktest.Option{linktest.WithRawDial(func(addr string) (io.ReadWriteCloser, error) {
				return net.Dial("unix", addr)
			})}
			if tc.guard > 0 {
				opts = append(opts, linktest.WithTimeout(tc.guard))
			}
			linktest.TestTransport(t, func(t *testing.T) transport.Transport { return shm.New(tc.opts...) }, opts...)
		})
	}
}
