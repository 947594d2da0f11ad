package model

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/gocoll/gocoll/collective"
	"github.com/gocoll/gocoll/internal/bench"
)

// Terms are what a cost formula counts for one call: messages on the
// critical path, bytes a rank on it sends, and bytes it reduces.
type Terms struct {
	Messages, Bytes, Reduced float64
}

// Time is the cost of t under params, µs.
func (t Terms) Time(params Params) float64 {
	return params.Alpha*t.Messages + params.Beta*t.Bytes + params.Gamma*t.Reduced
}

// ErrNoFormula is the error of a point that the model has no formula for.
var ErrNoFormula = errors.New("no cost formula")

// shape is the geometry of p ranks that the formulas use.
type shape struct {
	p, lgCeil     float64 // p and ⌈lg p⌉
	q, lgQ, folds float64 // the largest power of two ≤ p, its lg, and 1 if p is not one
}

func shapeOf(p int) shape {
	lgQ := bits.Len(uint(p)) - 1
	q := 1 << lgQ
	s := shape{p: float64(p), q: float64(q), lgQ: float64(lgQ), lgCeil: float64(lgQ)}
	if q != p {
		s.folds, s.lgCeil = 1, float64(lgQ+1)
	}
	return s
}

// share is the part of n that all ranks but one hold: (p-1)/p·n.
func (s shape) share(n float64) float64 { return (s.p - 1) / s.p * n }

// formula gives the terms of a call on n bytes with chunks of c bytes.
type formula func(s shape, n, c float64) Terms

var formulas = map[string]map[string]formula{
	"allreduce": {
		"recursive_doubling": func(s shape, n, _ float64) Terms {
			return Terms{s.lgQ + 2*s.folds, (s.lgQ + 2*s.folds) * n, (s.lgQ + s.folds) * n}
		},
		"ring": func(s shape, n, _ float64) Terms {
			return Terms{2 * (s.p - 1), 2 * s.share(n), s.share(n)}
		},
		"ring_chunked": func(s shape, n, c float64) Terms {
			k := max(1, math.Ceil(n/s.p/c))
			return Terms{2 * (s.p - 1) * k, 2 * s.share(n), s.share(n)}
		},
		"rabenseifner": func(s shape, n, _ float64) Terms {
			half := (s.q - 1) / s.q * n
			return Terms{2*s.lgQ + 2*s.folds, 2*half + 2*s.folds*n, half + s.folds*n}
		},
		"tree": func(s shape, n, _ float64) Terms {
			return Terms{2 * s.lgCeil, 2 * s.lgCeil * n, s.lgCeil * n}
		},
	},
	"bcast": {
		"tree": func(s shape, n, _ float64) Terms { return Terms{s.lgCeil, s.lgCeil * n, 0} },
		"chain": func(s shape, n, c float64) Terms {
			k := max(1, math.Ceil(n/c))
			return Terms{s.p - 2 + k, (s.p - 2 + k) * n / k, 0}
		},
		"scatter_allgather": func(s shape, n, _ float64) Terms {
			return Terms{s.lgCeil + s.p - 1, 2 * s.share(n), 0}
		},
	},
	"reduce": {
		"tree": func(s shape, n, _ float64) Terms { return Terms{s.lgCeil, s.lgCeil * n, s.lgCeil * n} },
	},
	"gather":  gatherFormulas,
	"scatter": gatherFormulas,
	"allgather": {
		"ring":               func(s shape, n, _ float64) Terms { return Terms{s.p - 1, s.share(n), 0} },
		"bruck":              logShare,
		"recursive_doubling": logShare,
	},
	"reducescatter": {
		"ring": func(s shape, n, _ float64) Terms { return Terms{s.p - 1, s.share(n), s.share(n)} },
		"recursive_halving": func(s shape, n, _ float64) Terms {
			half := (s.q - 1) / s.q * n
			return Terms{s.lgQ + 2*s.folds, half + s.folds*(n+n/s.p), half + s.folds*n}
		},
	},
	"barrier": {
		"dissemination": func(s shape, _, _ float64) Terms { return Terms{Messages: s.lgCeil} },
	},
}

var gatherFormulas = map[string]formula{
	"tree":   logShare,
	"linear": func(s shape, n, _ float64) Terms { return Terms{s.p - 1, s.share(n), 0} },
}

// logShare is ⌈lg p⌉ messages that together carry (p-1)/p·n.
func logShare(s shape, n, _ float64) Terms { return Terms{s.lgCeil, s.share(n), 0} }

// Cost gives the terms of coll run with algo among p ranks on n
// bytes, with chunks of chunk bytes where the algorithm pipelines (0 for
// the default). Its error wraps ErrNoFormula.
func Cost(coll, algo string, p int, n float64, chunk int) (Terms, error) {
	f, ok := formulas[coll][algo]
	switch {
	case !ok:
		return Terms{}, fmt.Errorf("%w for %s with algorithm %q", ErrNoFormula, coll, algo)
	case p < 2:
		return Terms{}, fmt.Errorf("%w for %d rank(s), which move nothing", ErrNoFormula, p)
	case n < 0 || chunk < 0:
		return Terms{}, fmt.Errorf("%w for %g bytes in chunks of %d", ErrNoFormula, n, chunk)
	}
	c := float64(chunk)
	if chunk == 0 {
		c = collective.DefaultChunkSize
	}
	return f(shapeOf(p), n, c), nil
}

// TermsOf gives the terms of a measured point. Its error wraps
// ErrNoFormula for a point the model does not describe (see the package
// documentation).
func TermsOf(r *bench.Result) (Terms, error) {
	if r.Codec != "" && r.Codec != "none" {
		return Terms{}, fmt.Errorf("%w for codec %s", ErrNoFormula, r.Codec)
	}
	return Cost(r.Collective, r.Algo, r.NP, float64(r.Bytes), r.Chunk)
}
