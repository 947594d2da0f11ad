package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocoll/gocoll/internal/shmem"
	"github.com/gocoll/gocoll/internal/transport"
	"github.com/gocoll/gocoll/internal/transport/shm"
)

// A network is one kind of link that a rank offers its peers: the
// transport, the rank's listener, and the address peers dial. Every rank
// has its main network (tcp, or mem in NewLocal's default); with the auto
// and shm transports it also listens for shared-memory links, which the
// ranks of its host dial instead.
type network struct {
	tr   transport.Transport
	ln   transport.Listener
	addr string
}

func (n network) close() {
	if n.ln != nil {
		n.ln.Close()
	}
}

// listenShm starts this rank's shared-memory listener where the
// transport o asks for shared memory (auto, shm). Where it cannot, auto
// goes without shared-memory links, with a warning, and shm fails.
func listenShm(o Options, cfg transport.Config) (network, error) {
	if o.transport != "auto" && o.transport != "shm" {
		return network{}, nil
	}
	tr := shm.New(linkOptions(o.singleCopy)...)
	ln, err := tr.Listen("", cfg)
	if err != nil {
		if o.transport == "shm" {
			return network{}, fmt.Errorf("listening for shared-memory links: %w", err)
		}
		o.logger.Warn("no shared-memory links; ranks of one host talk over tcp", "rank", cfg.Rank, "err", err)
		return network{}, nil
	}
	return network{tr: tr, ln: ln, addr: ln.Addr()}, nil
}

// linkOptions are the shared-memory links' options under the
// single-copy setting: with cma, a link sends every payload of
// shm.CMAThreshold bytes or more by CMA, its writer copying half of it
// into the reader's buffer while the reader copies the other half
// (shm.WithCMA); with auto, the default, only where that has been faster
// than the ring, as the process's links time it, size class by size
// class (shm.WithCMAWhereFaster), renting the ring first on a host whose
// single copy's first reach of a page is slow (firstReach, measured
// here once per process, in 0.2 ms on a Zen 5 VM where it is nothing
// and 1.7-2.7 ms on one where it is not). Which way wins depends on the
// host, by factors of one and a half either way: two processes'
// ping-pongs over links (comm's BenchmarkTwoProcess), µs a round trip,
// three alternating runs, by CMA against through the ring: 256 KiB
// 40-42 against 50, 1 MiB 135-152 against 185-196, 16 MiB 1990-2084
// against 3016-3075 on an Intel Xeon host; by CMA against auto, which
// took the ring: 64 KiB 13.7-14.2 against 9.4-9.9, 256 KiB 37.7-39.5
// against 25.1-27.3, 1 MiB 130-136 against 88-93, 16 MiB 2210-2350
// against 1460-1570 on a Zen 5 VM (2026-11-29, both).
func linkOptions(singleCopy string) []shm.Option {
	switch singleCopy {
	case SingleCopyNone:
		return nil
	case SingleCopyCMA:
		return []shm.Option{shm.WithCMA()}
	}
	ways := new(shmem.SingleCopy)
	ways.SetFirstReach(firstReach())
	return []shm.Option{shm.WithCMAWhereFaster(ways)}
}

// checkOneHost fails unless every rank runs on one host, which the shm
// transport needs. Every rank finds the same error.
func (p *peerTable) checkOneHost() error {
	for r, h := range p.hosts {
		if h != p.hosts[0] {
			return fmt.Errorf("%w: the shm transport needs every rank on one host, but rank 0 runs on %q and rank %d on %q (use auto)",
				ErrInvalid, p.hosts[0], r, h)
		}
	}
	return nil
}

// dial connects a link to dst: through shared memory when dst shares
// this rank's host and listens for such links, otherwise over the main
// network. With the auto transport a shared-memory link that cannot be
// made (no room in /dev/shm, say) gives way to the main network.
func (ep *endpoint) dial(ctx context.Context, dst int) (transport.Link, error) {
	if ep.shm.tr != nil && ep.shmAddrs[dst] != "" && ep.hosts[dst] == ep.hosts[ep.rank] {
		l, err := ep.shm.tr.Dial(ctx, ep.shmAddrs[dst], dst, ep.linkCfg)
		if err == nil || ep.opts.transport == "shm" || ctx.Err() != nil || errors.Is(err, transport.ErrRefused) {
			if err != nil {
				err = fmt.Errorf("connecting to rank %d through shared memory at %s: %w", dst, ep.shmAddrs[dst], err)
			}
			return l, err
		}
		ep.log.Warn("no shared-memory link; using tcp", "peer", dst, "err", err)
	}
	l, err := ep.links.tr.Dial(ctx, ep.addrs[dst], dst, ep.linkCfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to rank %d at %s: %w", dst, ep.addrs[dst], err)
	}
	return l, nil
}
