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
		name string
		tr   func(t *testing.T) transport.Transport
	}{
		{"default", func(t *testing.T) transport.Transport { return &tcp.Transport{} }},
		{"small buffers", func(t *testing.T) transport.Transport {
			tr, err := tcp.New(tcp.WithReadBufferSize(4096), tcp.WithSocketBuffers(64<<10, 64<<10), tcp.WithNoDelay(false))
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}},
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
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			linktest.TestTransport(t, tc.tr, linktest.WithRawDial(func(addr string) (io.ReadWriteCloser, error) {
				return net.Dial("tcp", addr)
			}))
		})
	}
}
