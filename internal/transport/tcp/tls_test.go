package tcp_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/mtls"
	"github.com/gocoll/gocoll/internal/mtls/mtlstest"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/linktest"
	"github.com/gocoll/gocoll/internal/transport/tcp"
)

func tlsTransport(t *testing.T, ca *mtlstest.CA, name string) *tcp.Transport {
	t.Helper()
	cert, key := ca.Issue(t, name)
	cfg, err := mtls.Load(cert, key, ca.File)
	require.NoError(t, err)
	tr, err := tcp.New(tcp.WithTLS(cfg))
	require.NoError(t, err)
	return tr
}

// TestTLSRefusesStrangers: over a TLS listener, a rank with a certificate
// of the job's CA gets a link; one with another CA's certificate is
// refused (ErrRefused, final), and so is a dialer without TLS.
func TestTLSRefusesStrangers(t *testing.T) {
	job := mtlstest.NewCA(t, "job")
	ln, err := tlsTransport(t, job, "rank0").Listen("", linktest.Config(0, nil))
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			l, err := ln.Accept()
			if err != nil {
				return
			}
			l.Close()
		}
	}()
	tests := []struct {
		name    string
		tr      *tcp.Transport
		refused bool // else any error
		ok      bool
	}{
		{"a rank of the job", tlsTransport(t, job, "rank1"), false, true},
		{"another CA's certificate", tlsTransport(t, mtlstest.NewCA(t, "other"), "stranger"), true, false},
		{"no TLS", &tcp.Transport{}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cfg := linktest.Config(1, nil)
			cfg.HandshakeTimeout = 2 * time.Second
			l, err := tt.tr.Dial(ctx, ln.Addr(), 0, cfg)
			if tt.ok {
				require.NoError(t, err)
				l.Close()
				return
			}
			require.Error(t, err)
			if tt.refused {
				require.ErrorIs(t, err, transport.ErrRefused)
			}
		})
	}
}

func TestWithTLSNil(t *testing.T) {
	_, err := tcp.New(tcp.WithTLS((*tls.Config)(nil)))
	require.Error(t, err)
}
