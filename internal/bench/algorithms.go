package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/wire"
)

// Collectives are the typed collectives a sweep measures, by the names
// results carry.
var Collectives = []string{"allreduce", "reduce", "bcast", "gather", "scatter", "gatherv", "scatterv", "allgather", "allgatherv", "reducescatter", "alltoall", "scan", "exscan", "barrier"}

// objectCollectives maps the collectives that have an object-encoded
// counterpart to its name.
var objectCollectives = map[string]string{"allreduce": "allreduce_object", "bcast": "bcast_object", "allgather": "allgather_object"}

// kinds are the collectives whose algorithm a sweep can force, by the
// names results carry. Barrier takes no options, so only its selector's
// choice is measured.
var kinds = map[string]wire.Kind{
	"allreduce": wire.KindAllreduce, "reduce": wire.KindReduce, "bcast": wire.KindBcast,
	"gather": wire.KindGather, "scatter": wire.KindScatter, "allgather": wire.KindAllgather, "allgatherv": wire.KindAllgatherv,
	"gatherv": wire.KindGatherv, "scatterv": wire.KindScatterv, "scan": wire.KindScan, "exscan": wire.KindExscan,
	"reducescatter": wire.KindReduceScatter, "alltoall": wire.KindAlltoall,
}

// Algorithms returns the algorithms that can be forced on the named
// collective, whatever the communicator; nil for barrier and unknown
// names.
func Algorithms(name string) []collective.Algorithm {
	k, ok := kinds[name]
	if !ok {
		return nil
	}
	return collective.Algorithms(k)
}

// algoRequest is a parsed Config.Algorithms.
type algoRequest struct {
	auto, all bool
	named     []collective.Algorithm
}

// parseAlgorithms parses names ("auto", "all" or algorithms as
// collective.ParseAlgorithm spells them) and checks that each named
// algorithm applies to at least one of the collectives.
func parseAlgorithms(names, collectives []string) (algoRequest, error) {
	var req algoRequest
	for _, name := range names {
		if name == "all" {
			req.all = true
			continue
		}
		a, err := collective.ParseAlgorithm(name)
		if err != nil {
			return req, fmt.Errorf("%w, or all for every algorithm of each collective", err)
		}
		if a == collective.Auto {
			req.auto = true
			continue
		}
		if !slices.ContainsFunc(collectives, func(c string) bool { return slices.Contains(Algorithms(c), a) }) {
			where := "no collective that takes an algorithm"
			if cs := appliesTo(a); len(cs) > 0 {
				where = strings.Join(cs, ", ")
			}
			return req, fmt.Errorf("algorithm %s applies to none of %s (it applies to %s)", a, strings.Join(collectives, ", "), where)
		}
		req.named = append(req.named, a)
	}
	return req, nil
}

func appliesTo(a collective.Algorithm) []string {
	var cs []string
	for _, c := range Collectives {
		if slices.Contains(Algorithms(c), a) {
			cs = append(cs, c)
		}
	}
	return cs
}

// topology is what decides which algorithms can run on a communicator.
type topology struct {
	ranks        int
	shared       bool // the ranks share a host and a segment
	hierarchical bool // the ranks span hosts with shared memory inside them
}

func topologyOf(c *comm.Comm) topology {
	e := (*core.Comm)(c)
	return topology{ranks: c.Size(), shared: e.Segment() != nil, hierarchical: e.Hierarchy() != nil}
}

// runs reports whether a forced algorithm can run on t: the shared-memory
// ones need what they are named after, as collective's selector checks.
func (t topology) runs(a collective.Algorithm) bool {
	switch a {
	case collective.Shm:
		return t.shared || t.ranks == 1
	case collective.Hierarchical:
		return t.hierarchical
	}
	return true
}

// expand returns the algorithms to measure name with on t, Auto standing
// for the selector's choice. Algorithms that do not apply to name, or
// cannot run on t, are left out rather than failing the sweep, so that
// "all" and lists over several collectives mean "wherever it applies".
func (req algoRequest) expand(name string, t topology) []collective.Algorithm {
	var out []collective.Algorithm
	if req.auto || (req.all && len(Algorithms(name)) == 0) {
		out = append(out, collective.Auto)
	}
	for _, a := range Algorithms(name) {
		if (req.all || slices.Contains(req.named, a)) && t.runs(a) {
			out = append(out, a)
		}
	}
	return out
}
