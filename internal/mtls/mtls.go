// Package mtls builds the mutual TLS configuration that a job's links and
// rendezvous use when they cross a network nobody trusts (comm.WithTLS,
// GOCOLL_TLS_CERT, GOCOLL_TLS_KEY, GOCOLL_TLS_CA).
//
// Every rank both listens and dials, so one configuration serves both
// ends of every connection: each end presents its certificate and accepts
// the other's only if it chains to the job's CA. Host names are not
// checked (ranks connect by IP address, and a rank's certificate says who
// may join the job, not where it runs); which rank and which job is still
// proven by the HMAC handshake that runs inside the TLS connection.
package mtls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/gocoll/gocoll/internal/transport"
)

// Load reads a PEM certificate and key and the PEM certificates of the CA
// that signs every rank's certificate, and returns the configuration for
// both ends of a connection: TLS 1.3, a certificate required from both,
// each verified against the CA.
func Load(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("mtls: certificate %s and key %s: %w", certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("mtls: CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("mtls: CA file %s holds no PEM certificate", caFile)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		// Verification is VerifyConnection's, the same on both ends: the
		// built-in one would check a server's host name and require
		// different key usages of client and server certificates.
		ClientAuth:         tls.RequireAnyClientCert,
		InsecureSkipVerify: true,
		VerifyConnection:   func(cs tls.ConnectionState) error { return verify(roots, cs) },
	}, nil
}

// verify accepts the peer's certificate if it chains to roots.
func verify(roots *x509.CertPool, cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("mtls: the peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return fmt.Errorf("mtls: the peer's certificate %q is not the job's: %w", cs.PeerCertificates[0].Subject.CommonName, err)
	}
	return nil
}

// Handshake runs c's TLS handshake under ctx. A certificate that either
// end rejects makes an error that wraps transport.ErrRefused, final like
// a wrong secret; the network failing (a reset, an early end, a deadline)
// does not.
func Handshake(ctx context.Context, c *tls.Conn) error {
	err := c.HandshakeContext(ctx)
	if err == nil || ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: TLS: %w", transport.ErrRefused, err)
}
