//go:build linux

package shm_test

import (
	"io"
	"net"
	"testing"

	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/shm"
)

func TestConformance(t *testing.T) {
	tests := []struct {
		name string
		opts []shm.Option
	}{
		{"default", nil},
		{"CMA", []shm.Option{shm.WithCMA()}},
		{"without CMA", []shm.Option{shm.WithoutCMA()}},
		// Every message wraps around the ring's end, and the large
		// ones stream through it many times over.
		{"tiny ring without CMA", []shm.Option{shm.WithoutCMA(), shm.WithRingSize(shm.MinRingSize)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			linktest.TestTransport(t, func(t *testing.T) transport.Transport { return shm.New(tc.opts...) },
				linktest.WithRawDial(func(addr string) (io.ReadWriteCloser, error) {
					return net.Dial("unix", addr)
				}))
		})
	}
}
