package model

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// nparams is the number of model parameters: α, β, γ.
const nparams = 3

// rankTol is how small, relative to its unit-norm column, the part of a
// column outside the span of the previous ones may be before the columns
// count as dependent. The formulas make dependent columns exactly
// proportional, so rounding is all that is left of them.
const rankTol = 1e-9

// lstsq solves min ‖A·x − b‖ over the columns cols of a (x is zero
// elsewhere) by QR (gonum's mat.QR, Householder reflections). Columns
// are scaled to unit norm first, because α's and β's coefficients differ
// by many orders of magnitude. ok is false when the columns are linearly
// dependent: when a diagonal element of R, the length of a column's part
// outside the span of the ones before it, is below rankTol.
func lstsq(a [][nparams]float64, b []float64, cols []int) (x [nparams]float64, ok bool) {
	m, k := len(a), len(cols)
	if m < k {
		return x, false
	}
	scaled := mat.NewDense(m, k, nil)
	scale := make([]float64, k)
	for j, c := range cols {
		col := make([]float64, m)
		for i := range m {
			col[i] = a[i][c]
		}
		scale[j] = floats.Norm(col, 2)
		if scale[j] == 0 {
			return x, false
		}
		floats.Scale(1/scale[j], col)
		scaled.SetCol(j, col)
	}
	var qr mat.QR
	qr.Factorize(scaled)
	var r mat.Dense
	qr.RTo(&r)
	for j := range k {
		if math.Abs(r.At(j, j)) < rankTol {
			return x, false
		}
	}
	var z mat.VecDense
	if err := qr.SolveVecTo(&z, false, mat.NewVecDense(m, slices.Clone(b))); err != nil {
		return x, false
	}
	for j, c := range cols {
		x[c] = z.AtVec(j) / scale[j]
	}
	return x, true
}

// nnls solves min ‖A·x − b‖ subject to x ≥ 0. The optimum is the
// unconstrained solution on the set of its non-zero parameters, so with
// three parameters trying every subset is exact. Subsets are tried
// largest first, and a later one must do strictly better, so of equally
// good solutions the one with more parameters, or else with the earlier
// ones (β before γ), wins.
func nnls(a [][nparams]float64, b []float64) (x [nparams]float64, ok bool) {
	best := math.Inf(1)
	for _, cols := range [][]int{{0, 1, 2}, {0, 1}, {0, 2}, {1, 2}, {0}, {1}, {2}} {
		s, solved := lstsq(a, b, cols)
		if !solved || s[0] < 0 || s[1] < 0 || s[2] < 0 {
			continue
		}
		if res := residual(a, b, s); res < best*(1-1e-12) {
			best, x, ok = res, s, true
		}
	}
	return x, ok
}

// residual is ‖A·x − b‖².
func residual(a [][nparams]float64, b []float64, x [nparams]float64) float64 {
	var s float64
	for i, row := range a {
		d := row[0]*x[0] + row[1]*x[1] + row[2]*x[2] - b[i]
		s += d * d
	}
	return s
}

// independent reports whether the columns cols of a are linearly
// independent.
func independent(a [][nparams]float64, cols []int) bool {
	_, ok := lstsq(a, make([]float64, len(a)), cols)
	return ok
}
