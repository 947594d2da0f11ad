package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/gocoll/gocoll/internal/bench"
)

// Params are the model's parameters.
type Params struct {
	Alpha float64 // µs per message
	Beta  float64 // µs per byte sent
	Gamma float64 // µs per byte reduced

	// GammaFitted is false when the points could not tell γ from β (every
	// one reduces the same share of the bytes it sends): γ is then 0 and
	// β includes the reduction.
	GammaFitted bool
}

// BandwidthGBps is 1/β in GB/s (1e9 bytes per second), 0 for β = 0.
func (p Params) BandwidthGBps() float64 { return gbps(p.Beta) }

// ReduceGBps is 1/γ in GB/s, 0 for γ = 0.
func (p Params) ReduceGBps() float64 { return gbps(p.Gamma) }

func gbps(usPerByte float64) float64 {
	if usPerByte <= 0 {
		return 0
	}
	return 1e-3 / usPerByte
}

// Fit fits the model to measured points, all of which must have a
// formula (TermsOf) and a positive time. It minimises the squared
// relative errors with α, β, γ ≥ 0 (see the package documentation) and
// needs at least three points whose formulas tell α from β: two message
// sizes of one algorithm will do.
func Fit(points []bench.Result) (Params, error) {
	if len(points) < nparams {
		return Params{}, fmt.Errorf("%d points: need at least %d to fit α, β and γ", len(points), nparams)
	}
	a := make([][nparams]float64, len(points))
	b := make([]float64, len(points))
	for i := range points {
		r := &points[i]
		t, err := TermsOf(r)
		if err != nil {
			return Params{}, fmt.Errorf("point %s: %w", Describe(r), err)
		}
		if !(r.AvgUS > 0) || math.IsInf(r.AvgUS, 0) {
			return Params{}, fmt.Errorf("point %s: time %g µs: want a positive time", Describe(r), r.AvgUS)
		}
		// Row i of (A·x − b) is the relative error of point i.
		a[i] = [nparams]float64{t.Messages / r.AvgUS, t.Bytes / r.AvgUS, t.Reduced / r.AvgUS}
		b[i] = 1
	}
	if !independent(a, []int{0, 1}) {
		return Params{}, errors.New("the points do not tell α from β: they need at least two message sizes, or algorithms that send different numbers of messages")
	}
	x, ok := nnls(a, b)
	if !ok {
		return Params{}, errors.New("no non-negative α, β, γ fit the points")
	}
	return Params{Alpha: x[0], Beta: x[1], Gamma: x[2], GammaFitted: independent(a, []int{0, 1, 2})}, nil
}

// Describe names a point as in "allreduce ring np=4 1048576 B".
func Describe(r *bench.Result) string {
	algo := r.Algo
	if algo == "" {
		algo = "(no algo)"
	}
	s := fmt.Sprintf("%s %s np=%d %d B", r.Collective, algo, r.NP, r.Bytes)
	if r.Chunk != 0 {
		s += fmt.Sprintf(" chunk=%d", r.Chunk)
	}
	if r.Codec != "" && r.Codec != "none" {
		s += " " + r.Codec
	}
	return s
}

// A Residual is a measured point beside the model's prediction.
type Residual struct {
	Point     bench.Result
	Predicted float64 // µs
	RelErr    float64 // (Predicted − measured) / measured
}

// Residuals predicts each point under params.
func Residuals(points []bench.Result, params Params) ([]Residual, error) {
	res := make([]Residual, len(points))
	for i := range points {
		r := &points[i]
		t, err := TermsOf(r)
		if err != nil {
			return nil, fmt.Errorf("point %s: %w", Describe(r), err)
		}
		pred := t.Time(params)
		res[i] = Residual{Point: *r, Predicted: pred, RelErr: (pred - r.AvgUS) / r.AvgUS}
	}
	return res, nil
}
