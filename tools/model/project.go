package model

import "fmt"

// AllreduceAlgorithms are the allreduce algorithms that Predict and
// Winner weigh against each other. ring_chunked is left out: without
// pipelining in the model it is the ring with more messages, so it never
// wins (see the package documentation).
var AllreduceAlgorithms = []string{"recursive_doubling", "ring", "rabenseifner", "tree"}

// Predict is the modelled time, µs, of an allreduce of n bytes among p
// ranks with algorithm alg.
func Predict(alg string, p int, n float64, params Params) (float64, error) {
	if p == 1 {
		return 0, nil
	}
	t, err := Cost("allreduce", alg, p, n, 0)
	if err != nil {
		return 0, err
	}
	return t.Time(params), nil
}

// Winner is the fastest of AllreduceAlgorithms for an allreduce of n
// bytes among p ≥ 2 ranks, and its modelled time; of equally fast ones,
// the first listed.
func Winner(p int, n float64, params Params) (string, float64, error) {
	if p < 2 {
		return "", 0, fmt.Errorf("%d rank(s): want at least 2 to choose an algorithm", p)
	}
	best, bestUS := "", 0.0
	for _, alg := range AllreduceAlgorithms {
		us, err := Predict(alg, p, n, params)
		if err != nil {
			return "", 0, err
		}
		if best == "" || us < bestUS {
			best, bestUS = alg, us
		}
	}
	return best, bestUS, nil
}
