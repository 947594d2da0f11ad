package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gocoll/gocoll/internal/regmem"
	"github.com/gocoll/gocoll/internal/shmem"
)

// Shared memory between the ranks of one host. Every communicator whose
// ranks all run on one host gets a Segment when it is made (Init,
// NewLocal, Split). A communicator that spans hosts with more than one of
// its ranks on some host gets a Hierarchy instead: a communicator of its
// ranks on this host, with a segment, and one across hosts. Both are set
// up through the rendezvous store while the ranks are together anyway,
// and every rank learns whether every other one succeeded, so that all
// of them choose the same algorithms.

// Hierarchy splits a communicator that spans hosts in two levels, for
// collectives that move data inside each host through shared memory and
// between hosts over links.
type Hierarchy struct {
	// Node holds the communicator's ranks on this host, in their order;
	// it has a Segment.
	Node *Comm
	// Shards is the fewest ranks the communicator has on any host. Node
	// ranks below it take part in the exchange between hosts.
	Shards int
	// Cross holds, for this rank's node rank k < Shards, the ranks of
	// node rank k on every host, in the order of the hosts' first ranks;
	// nil on node ranks from Shards up.
	Cross *Comm
}

// Segment is the communicator's shared memory, or nil when its ranks do
// not all run on one host, the transport is not auto or shm, or the
// segment could not be made (a warning in the log says why).
func (c *Comm) Segment() *Segment { return c.seg }

// Hierarchy is the communicator's split into hosts, or nil when it does
// not span hosts, has one rank per host, or shared memory is not used.
func (c *Comm) Hierarchy() *Hierarchy { return c.hier }

// sharedAllowed reports whether the endpoint's ranks may share memory.
func (ep *endpoint) sharedAllowed() bool {
	return ep.opts.transport == "auto" || ep.opts.transport == "shm"
}

// logSetup logs at debug level (GOCOLL_DEBUG) what c is made of: its
// ranks, whether they share a host, this rank's place among its host's
// ranks, and its shared segment or hierarchy.
// Its links are logged as they come up (readFrom), on first use.
func (c *Comm) logSetup() {
	log := c.ep.log
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := []any{"comm", fmt.Sprintf("%#x", c.id), "rank", c.rank, "size", len(c.group),
		"links", c.ep.opts.transport, "one host", c.oneHost, "local rank", c.localRank, "local size", c.localSize}
	switch {
	case c.seg != nil:
		attrs = append(attrs, "segment", fmt.Sprintf("%d ranks, %d-byte slots", c.seg.ranks, c.seg.slot))
	case c.hier != nil:
		attrs = append(attrs, "hierarchy", fmt.Sprintf("%d ranks on this host, %d exchange across hosts", c.hier.Node.Size(), c.hier.Shards))
	default:
		attrs = append(attrs, "segment", "none")
	}
	log.Debug("communicator", attrs...)
}

// share sets up c's segment or hierarchy, as its ranks' hosts allow. It
// runs on every rank of c when c is made, and fails only when the
// rendezvous does; shared memory that cannot be had leaves c without it.
func (c *Comm) share(ctx context.Context) error {
	ep := c.ep
	if !ep.sharedAllowed() || len(c.group) < 2 {
		return nil
	}
	// The setup waits at the rendezvous for the other ranks, which may
	// have failed the job meanwhile (a mismatch in another communicator).
	ctx, cancel := ep.withTimeout(ctx)
	defer cancel()
	ctx, cancelFailed := context.WithCancelCause(ctx)
	defer cancelFailed(nil)
	go func() {
		select {
		case <-ep.failed:
			cancelFailed(ep.failErr)
		case <-ctx.Done():
		}
	}()
	hostOf := func(r int) string { return ep.hosts[c.group[r]] }
	var hosts []string // in order of their first rank
	members := map[string][]int{}
	for r := range c.group {
		h := hostOf(r)
		if members[h] == nil {
			hosts = append(hosts, h)
		}
		members[h] = append(members[h], r)
	}
	if len(hosts) == 1 {
		seg, err := c.attachSegment(ctx)
		c.seg = seg
		return err
	}
	shards, most := len(c.group), 0
	for _, m := range members {
		shards, most = min(shards, len(m)), max(most, len(m))
	}
	if most == 1 {
		return nil // one rank per host: nothing to share
	}
	local := members[hostOf(c.rank)]
	hostIdx := slices.Index(hosts, hostOf(c.rank))
	node := c.derive(2*hostIdx, local)
	seg, err := node.attachSegment(ctx)
	if err != nil {
		return err
	}
	node.seg = seg
	// Every rank of c must know that every host has its segment.
	ok := "ok"
	if seg == nil {
		ok = "none"
	}
	if node.rank == 0 {
		if err := ep.store.Set(ctx, c.key("hier", hostIdx), []byte(ok)); err != nil {
			return err
		}
	}
	all := true
	for i := range hosts {
		v, err := ep.store.Get(ctx, c.key("hier", i))
		if err != nil {
			return err
		}
		all = all && string(v) == "ok"
	}
	if !all {
		node.closeShared()
		return nil
	}
	h := &Hierarchy{Node: node, Shards: shards}
	if k := node.rank; k < shards {
		across := make([]int, len(hosts))
		for i, host := range hosts {
			across[i] = members[host][k]
		}
		h.Cross = c.derive(2*k+1, across)
	}
	c.hier = h
	return nil
}

// derive makes the communicator of c's ranks ranks (in that order) that
// the hierarchy uses. Its id comes from c's and which, with sequence
// number 0, which no Split has.
func (c *Comm) derive(which int, ranks []int) *Comm {
	sub := &Comm{ep: c.ep, id: childID(c.id, 0, which), group: make([]int, len(ranks))}
	for i, r := range ranks {
		sub.group[i] = c.group[r]
		if r == c.rank {
			sub.rank = i
		}
	}
	return c.ep.bind(sub)
}

// key names a rendezvous key of c's setup.
func (c *Comm) key(what string, i int) string {
	return what + "/" + strconv.FormatUint(c.id, 16) + "/" + strconv.Itoa(i)
}

// attachSegment makes c's segment: rank 0 creates it and publishes where
// it is, the others map it, and all publish whether they could. The
// segment is used only when every rank could; otherwise it returns nil
// and the reason is logged.
func (c *Comm) attachSegment(ctx context.Context) (*Segment, error) {
	ep := c.ep
	n := len(c.group)
	slot := ep.opts.segmentSlot
	if slot == 0 {
		slot = DefaultSegmentSlot(n)
	}
	size := segSize(n, slot)
	var region *shmem.Region
	var problem error
	if c.rank == 0 {
		var where string
		if problem = c.segmentFault(); problem == nil {
			region, problem = shmem.Create("", size)
		}
		if problem == nil {
			initSegment(region.Bytes(), n, slot, singlePolicy(ep.opts.singleCopy, ep.opts.yield, firstReach), ep.crowding(ep.rank))
			id := region.Identity()
			where = fmt.Sprintf("%d %d %d %d", os.Getpid(), region.FD(), id.Dev, id.Ino)
		} else {
			where = "- " + problem.Error()
		}
		if err := ep.store.Set(ctx, c.key("seg", -1), []byte(where)); err != nil {
			closeRegion(region)
			return nil, err
		}
	} else {
		v, err := ep.store.Get(ctx, c.key("seg", -1))
		if err != nil {
			return nil, err
		}
		if problem = c.segmentFault(); problem == nil {
			region, problem = openSegment(string(v), size, n, slot)
		}
	}

	status := "ok"
	if problem != nil {
		status = problem.Error()
	}
	word, cookie := shmem.NewCookie()
	if problem == nil {
		publishCookie(region.Bytes(), c.rank, cookie)
	}
	if err := ep.store.Set(ctx, c.key("seg", c.rank), []byte(status)); err != nil {
		closeRegion(region)
		return nil, err
	}
	for r := range n {
		v, err := ep.store.Get(ctx, c.key("seg", r))
		if err != nil {
			closeRegion(region)
			return nil, err
		}
		if string(v) != "ok" && problem == nil {
			problem = fmt.Errorf("rank %d: %s", r, v)
		}
	}
	if problem != nil {
		closeRegion(region)
		ep.log.Warn("no shared memory segment; collectives use links", "comm", c.id, "err", problem)
		return nil, nil
	}
	// Every rank has it mapped: the mappings keep it from here on.
	region.CloseFD()
	s := &Segment{c: c, region: region, mem: region.Bytes(), ranks: n, slot: slot,
		pids: make([]int, n), seen: make([]uint64, n), known: make([]uint64, n),
		direct: make([][2][]byte, n), views: make([][2]*regmem.View, n), lines: make([][]byte, n),
		cookie: word}
	s.policy = s.word64(segSingle).Load()
	s.single.LendAcrossSizes(familyCombines)
	s.huge = newCollapser(&ep.opts, c.rank)
	s.crowding = int(s.word64(segCrowded).Load())
	for r := range n {
		s.pids[r] = ep.pids[c.group[r]]
	}
	s.probeSingle()
	s.waiter = shmem.NewWaiter(segYieldFor, segSleep, ep.opts.yield)
	if k, err := newKnocker(region.Identity(), c.rank, s.word32(segEpoch), s.sleepingWords()); err == nil {
		s.knocks, s.knockOthers = k, k.knock
		s.waiter.SetPark(k.park)
	} else {
		ep.log.Debug("waits on the shared-memory segment sleep on its futex: no socket to knock on",
			"comm", c.id, "rank", c.rank, "err", err)
	}
	return s, nil
}

// segmentFault is the error of the test hook WithSegmentFault for this
// rank, if any.
func (c *Comm) segmentFault() error {
	if f := c.ep.opts.segmentFault; f != nil {
		return f(c.rank)
	}
	return nil
}

// initSegment lays out a new segment of ranks ranks' slots of slot
// bytes, with the single-copy policy single, on a host whose ranks are
// crowding to a CPU, rounded up, where they outnumber its CPUs (else 0).
func initSegment(mem []byte, ranks, slot int, single uint64, crowding int) {
	s := Segment{mem: mem}
	s.word64(0).Store(segMagic)
	s.word64(8).Store(uint64(ranks))
	s.word64(16).Store(uint64(slot))
	s.word64(segSingle).Store(single)
	s.word64(segCrowded).Store(uint64(crowding))
}

// openSegment maps the segment that rank 0 published as where.
func openSegment(where string, size, ranks, slot int) (*shmem.Region, error) {
	if rest, ok := strings.CutPrefix(where, "- "); ok {
		return nil, fmt.Errorf("rank 0: %s", rest)
	}
	var pid, fd int
	var id shmem.Identity
	if _, err := fmt.Sscanf(where, "%d %d %d %d", &pid, &fd, &id.Dev, &id.Ino); err != nil {
		return nil, fmt.Errorf("rank 0 published %q: %w", where, err)
	}
	region, err := shmem.Open(pid, fd, id, size)
	if err != nil {
		return nil, err
	}
	s := Segment{mem: region.Bytes()}
	if s.word64(0).Load() != segMagic || s.word64(8).Load() != uint64(ranks) || s.word64(16).Load() != uint64(slot) {
		region.Close()
		return nil, errors.New("the shared memory of rank 0 has another layout")
	}
	return region, nil
}

func closeRegion(r *shmem.Region) {
	if r != nil {
		r.Close()
	}
}

// closeShared releases c's segment and hierarchy. Operations still
// running keep the mapping until they end.
func (c *Comm) closeShared() {
	if c.seg != nil {
		c.seg.release(true)
	}
	if h := c.hier; h != nil {
		h.Node.Close()
		if h.Cross != nil {
			h.Cross.Close()
		}
	}
}
