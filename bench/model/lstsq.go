package model

import (
	"math"
	"slices"
)

// nparams is the number of model parameters: α, β, γ.
const nparams = 3

// rankTol is how small, relative to its unit-norm column, the part of a
// column outside the span of the previous ones may be before the columns
// count as dependent. The formulas make dependent columns exactly
// proportional, so rounding is all that is left of them.
const rankTol = 1e-9

// lstsq solves min ‖A·x − b‖ over the columns cols of a (x is zero
// elsewhere) by Householder QR. Columns are scaled to unit norm first,
// because α's and β's coefficients differ by many orders of magnitude.
// ok is false when the columns are linearly dependent.
func lstsq(a [][nparams]float64, b []float64, cols []int) (x [nparams]float64, ok bool) {
	m, k := len(a), len(cols)
	if m < k {
		return x, false
	}
	// q holds the columns, then R above the diagonal and the reflected
	// vectors below; y holds b, then Qᵀb.
	q := make([][]float64, k)
	scale := make([]float64, k)
	for j, c := range cols {
		q[j] = make([]float64, m)
		for i := range m {
			q[j][i] = a[i][c]
		}
		scale[j] = norm(q[j])
		if scale[j] == 0 {
			return x, false
		}
		for i := range q[j] {
			q[j][i] /= scale[j]
		}
	}
	y := append([]float64(nil), b...)
	r := make([]float64, k) // R's diagonal
	for j := range k {
		v := q[j][j:]
		alpha := norm(v)
		if alpha < rankTol {
			return x, false
		}
		if v[0] > 0 {
			alpha = -alpha
		}
		r[j] = alpha
		v[0] -= alpha
		vv := dot(v, v)
		for _, col := range slices.Concat(q[j+1:], [][]float64{y}) {
			w := col[j:]
			s := 2 * dot(v, w) / vv
			for i := range w {
				w[i] -= s * v[i]
			}
		}
	}
	// Back-substitute R·z = (Qᵀb)[:k]; row i of R is q[j][i] for j > i.
	z := make([]float64, k)
	for i := k - 1; i >= 0; i-- {
		s := y[i]
		for j := i + 1; j < k; j++ {
			s -= q[j][i] * z[j]
		}
		z[i] = s / r[i]
	}
	for j, c := range cols {
		x[c] = z[j] / scale[j]
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

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func norm(v []float64) float64 { return math.Sqrt(dot(v, v)) }
