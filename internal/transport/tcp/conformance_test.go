package tcp_test

import (
	"io"
	"net"
	"testing"

	"github.com/gocoll/gocoll/internal/mtls"
	"github.com/gocoll/gocoll/internal/mtls/mtlstest"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/tcp"
)

func TestConformance(t *testing.T) {
	tests := []struct {
		name  string
		tr    func(t *testing.T) transport.Transport
		suite []linktest.Option
	}{
		{"default", func(t *testing.T) transport.Transport { return &tcp.Transport{} }, nil},
		// Sockets of 64 KiB, which the kernel doubles, hold about 256
		// KiB: the suite's large messages need not be 64 MiB.
		{"small buffers", func(t *testing.T) transport.Transport {
			tr, err := tcp.New(tcp.WithReadBufferSize(4096), tcp.WithSocketBuffers(64<<10, 64<<10), tcp.WithNoDelay(false))
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}, []linktest.Option{linktest.WithHolds(256 << 10)}},
		{"tls", func(t *testing.T) transport.Transport {
			ca := mtlstest.NewCA(t, "job")
			cert, key := ca.Issue(t, "rank")
			cfg, err := mtls.Load(cert, key, ca.File)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := tcp.New(tcp.WithTLS(cfg))
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]linktest.Option{linktest.WithRawDial(func(addr string) (io.ReadWriteCloser, error) {
				return net.Dial("tcp", addr)
			})}, tc.suite...)
			linktest.TestTransport(t, tc.tr, opts...)
		})
	}
}
