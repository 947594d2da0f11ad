package mtls_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/mtls"
	"github.com/gocoll/gocoll/internal/mtls/mtlstest"
)

func load(t *testing.T, ca *mtlstest.CA, name string) *tls.Config {
	t.Helper()
	cert, key := ca.Issue(t, name)
	cfg, err := mtls.Load(cert, key, ca.File)
	require.NoError(t, err)
	return cfg
}

// handshake runs a TLS handshake between the two configurations over
// loopback TCP, and an exchange of one byte each way, and returns each
// end's error.
func handshake(t *testing.T, client, server *tls.Config) (error, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	errs := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			errs <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		s := tls.Server(c, server)
		if err := s.Handshake(); err != nil {
			errs <- err
			return
		}
		_, err = s.Write([]byte{1})
		if err == nil {
			_, err = s.Read(make([]byte, 1))
		}
		errs <- err
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(c, client)
	cerr := tc.Handshake()
	if cerr == nil {
		_, cerr = tc.Read(make([]byte, 1))
	}
	if cerr == nil {
		_, cerr = tc.Write([]byte{2})
	}
	if cerr != nil {
		c.Close()
	}
	return cerr, <-errs
}

// TestMutualTLS: ranks with certificates of the job's CA connect; a peer
// with another CA's certificate is refused by either end.
func TestMutualTLS(t *testing.T) {
	job := mtlstest.NewCA(t, "job")
	other := mtlstest.NewCA(t, "other")
	tests := []struct {
		name           string
		client, server *tls.Config
		ok             bool
	}{
		{"two ranks of the job", load(t, job, "rank0"), load(t, job, "rank1"), true},
		{"a stranger dials a rank", load(t, other, "stranger"), load(t, job, "rank1"), false},
		{"a rank dials a stranger", load(t, job, "rank0"), load(t, other, "stranger"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cerr, serr := handshake(t, tt.client, tt.server)
			if tt.ok {
				require.NoError(t, cerr)
				require.NoError(t, serr)
				return
			}
			require.True(t, cerr != nil || serr != nil, "the handshake succeeded")
		})
	}
}

func TestLoadRejects(t *testing.T) {
	ca := mtlstest.NewCA(t, "job")
	cert, key := ca.Issue(t, "rank0")
	tests := []struct {
		name, cert, key, ca, want string
	}{
		{"no certificate", "/nonexistent/cert.pem", key, ca.File, "certificate /nonexistent/cert.pem"},
		{"key of another certificate", cert, ca.File, ca.File, "certificate"},
		{"no CA", cert, key, "/nonexistent/ca.pem", "CA: open /nonexistent/ca.pem"},
		{"CA file without certificates", cert, key, key, "holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mtls.Load(tt.cert, tt.key, tt.ca)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
