package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/wire"
)

// A point asks for an algorithm, or for the selector's choice, and a
// sweep for a transport, which on one host may carry a call over links or
// through the host's shared segment. What the calls ran, a sweep learns
// from the communicator's counts (comm.Comm.Stats), taken before and
// after each point's calls.

// statsNames are the collectives whose calls make up p, as
// comm.CallStats.Collective names them: the object collectives gather
// the encoded lengths, then the encoded values, or broadcast them.
func (p point) statsNames() []string {
	switch {
	case p.object && p.collective == "bcast_object":
		return []string{wire.KindBcast.String()}
	case p.object:
		return []string{wire.KindAllgather.String(), wire.KindAllgatherv.String()}
	case p.collective == "barrier":
		return []string{wire.KindBarrier.String()}
	}
	return []string{kinds[p.collective].String()}
}

// ran returns what p's calls ran between two snapshots of its
// communicator's Stats, as Result.Algo and Result.Link say it: "raw" for
// the object collectives, whose gathers are the selector's choice. A
// forced algorithm that did not run, or calls that were not counted, are
// a bug, and an error.
func (p point) ran(before, after []comm.CallStats) (algo, link string, err error) {
	algo, link = ranBetween(before, after, p.statsNames())
	switch {
	case algo == "":
		return "", "", fmt.Errorf("%s: the communicator counted none of its calls", p)
	case p.object:
		return p.algoName(), link, nil
	case p.algo != collective.Auto && algo != p.algo.String():
		return "", "", fmt.Errorf("%s ran %s instead, by the communicator's counts", p, algo)
	}
	return algo, link, nil
}

// ranBetween returns what the calls of the named collectives ran between
// two snapshots of a communicator's Stats: the algorithms whose calls grew
// from before to after, and the transports that carried them, each named
// once and joined by "+", in Stats' order. Other collectives' calls, such
// as the barriers between a point's calls, do not count.
func ranBetween(before, after []comm.CallStats, collectives []string) (algo, link string) {
	var algos, links []string
	for _, a := range after {
		if !slices.Contains(collectives, a.Collective) {
			continue
		}
		i := slices.IndexFunc(before, func(b comm.CallStats) bool {
			return b.Collective == a.Collective && b.Algorithm == a.Algorithm
		})
		if i >= 0 && before[i].Calls >= a.Calls {
			continue
		}
		if !slices.Contains(algos, a.Algorithm) {
			algos = append(algos, a.Algorithm)
		}
		for l := range strings.SplitSeq(a.Transport, "+") {
			if !slices.Contains(links, l) {
				links = append(links, l)
			}
		}
	}
	return strings.Join(algos, "+"), strings.Join(links, "+")
}
