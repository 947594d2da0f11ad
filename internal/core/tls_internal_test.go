package core

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gocoll/gocoll/internal/mtls/mtlstest"
	"github.com/gocoll/gocoll/internal/rendezvous"
)

// tlsEnv is the environment of rank of a two-rank TLS job whose
// certificate ca issues.
func tlsEnv(t *testing.T, ca *mtlstest.CA, addr string, rank int) map[string]string {
	cert, key := ca.Issue(t, "rank"+strconv.Itoa(rank))
	return map[string]string{
		"GOCOLL_RANK": strconv.Itoa(rank), "GOCOLL_SIZE": "2", "GOCOLL_ADDR": addr,
		"GOCOLL_SECRET": "s", "GOCOLL_TIMEOUT": "30s", "GOCOLL_TRANSPORT": "tcp",
		"GOCOLL_TLS_CERT": cert, "GOCOLL_TLS_KEY": key, "GOCOLL_TLS_CA": ca.File,
	}
}

// TestTLSJob: with GOCOLL_TLS_* set, ranks whose certificates the job's
// CA issued join over TLS (rendezvous and links) and exchange messages; a
// rank with another CA's certificate, and a client without TLS, are
// refused at the rendezvous at once instead of retrying to the timeout.
func TestTLSJob(t *testing.T) {
	job := mtlstest.NewCA(t, "job")
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	comms := make([]*Comm, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := func(rank int, env map[string]string) {
		wg.Go(func() { comms[rank], errs[rank] = initFromEnv(ctx, mapEnv(env), nil) })
	}
	start(0, tlsEnv(t, job, addr, 0))
	defer func() {
		wg.Wait()
		closeAtOnce(comms)
	}()

	// A rank with another CA's certificate.
	_, err := initFromEnv(ctx, mapEnv(tlsEnv(t, mtlstest.NewCA(t, "other"), addr, 1)), nil)
	require.ErrorIs(t, err, ErrRefused)
	// A client without TLS: the store's TLS listener takes its hello for
	// a broken handshake; it learns nothing and gets no rank.
	plainCtx, plainCancel := context.WithTimeout(ctx, 2*time.Second)
	defer plainCancel()
	stranger, err := rendezvous.Dial(plainCtx, addr, 1, 2, jobKey([]byte("s"), jobIdentity(mapEnv(tlsEnv(t, job, addr, 1)), "gocoll")))
	if err == nil {
		stranger.Close()
	}
	require.Error(t, err)

	start(1, tlsEnv(t, job, addr, 1))
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.NotNil(t, comms[0].ep.opts.tls, "rank 0 runs TLS")
	require.NoError(t, comms[1].Send(ctx, 0, 0, []byte("over tls")))
	buf := make([]byte, 8)
	_, err = comms[0].Recv(ctx, 1, 0, buf)
	require.NoError(t, err)
	require.Equal(t, "over tls", string(buf))
}
