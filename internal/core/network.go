package core

import (
	"context"
	"errors"
	"fmt"

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
// single-copy setting: a link sends payloads of shm.CMAThreshold bytes
// or more by CMA, its writer copying half of each into the reader's
// buffer while the reader copies the other half (shm.WithCMA), unless
// single copies are off. Two processes' ping-pongs over links with and
// without it, µs a round trip, three alternating runs: 256 KiB 40-42
// against 50, 1 MiB 135-152 against 185-196, 16 MiB 1990-2084 against
// 3016-3075, 64 KiB and 8 B level; streams of 1 MiB messages 39-43 µs a
// message against 97-100, 16 MiB 1.00-1.05 ms against 1.54-1.58 (Intel
// Xeon host, 2026-11-29). Without the writer's half, a host of
// 2026-11-28 had taken 320-350 µs for the 1 MiB round trip by CMA,
// against 106-164 through the ring.
func linkOptions(singleCopy string) []shm.Option {
	if singleCopy == SingleCopyNone {
		return nil
	}
	return []shm.Option{shm.WithCMA()}
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
