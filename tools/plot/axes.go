package plot

import (
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
)

// SizeLabel formats a message size in bytes with the largest binary unit
// it reaches: 8 B, 1 KiB, 1.5 KiB, 64 MiB.
func SizeLabel(bytes int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(bytes)
	u := 0
	for u < len(units)-1 && math.Abs(v) >= 1024 {
		v /= 1024
		u++
	}
	return short(v) + " " + units[u]
}

// TimeLabel formats a time in µs with the unit that keeps it at or
// above one where it can: 100 ns, 1 µs, 10 ms, 1 s.
func TimeLabel(us float64) string {
	switch {
	case us < 1:
		return short(us*1e3) + " ns"
	case us < 1e3:
		return short(us) + " µs"
	case us < 1e6:
		return short(us/1e3) + " ms"
	}
	return short(us/1e6) + " s"
}

// short formats v with three significant digits, or as a whole number
// from 100 on, where %g would switch to an exponent at 999.5.
func short(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// The panels plot exponents, log2 of the size and log10 of the time, on
// linear axes, rather than the values on gonum's log scale, whose axes
// reserve room for their labels as if these sat at the arithmetic mean
// of the ends, far off-centre on a log axis, which shrinks the panel.

// maxSizeLabels is how many size labels fit under a panel without
// crowding each other.
const maxSizeLabels = 7

// sizeTicks marks every power of two between 2^min and 2^max and labels
// every first, second, fifth or tenth of them, the fewest that keep the
// labels at maxSizeLabels or under; steps that divide ten put the
// labels on 1 KiB and 1 MiB whenever they label more than one in ten.
func sizeTicks(min, max float64) []gplot.Tick {
	lo, hi := int(math.Ceil(min)), int(math.Floor(max))
	step := 10
	for _, s := range []int{1, 2, 5} {
		// lo is at least 0: sizes are whole bytes.
		if hi/s-(lo+s-1)/s+1 <= maxSizeLabels {
			step = s
			break
		}
	}
	var ticks []gplot.Tick
	for e := lo; e <= hi; e++ {
		t := gplot.Tick{Value: float64(e)}
		if e%step == 0 {
			t.Label = SizeLabel(1 << e)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// latencyTicks labels each power of ten between 10^min and 10^max µs
// and marks the multiples between them; over no more than one decade it
// labels 2 and 5 times the power too, so that the axis keeps a scale.
func latencyTicks(min, max float64) []gplot.Tick {
	lo, hi := int(math.Floor(min)), int(math.Ceil(max))
	var ticks []gplot.Tick
	for e := lo; e <= hi; e++ {
		for m := 1; m <= 9 && (m == 1 || e < hi); m++ {
			t := gplot.Tick{Value: float64(e) + math.Log10(float64(m))}
			if m == 1 || hi-lo <= 1 && (m == 2 || m == 5) {
				t.Label = TimeLabel(float64(m) * math.Pow10(e))
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// expRange widens [min, max] to the powers of base around it and returns
// their exponents, so that the ends of the axis carry labels; a single
// value gets the range from its power to the next.
func expRange(min, max, base float64) (float64, float64) {
	lo, hi := logFloor(min, base), logCeil(max, base)
	if hi == lo {
		hi++
	}
	return float64(lo), float64(hi)
}

// logFloor and logCeil round the logarithm of x to base down and up,
// with a margin for the logarithm's own rounding: math.Log10(1000) is
// 2.9999999999999996.
func logFloor(x, base float64) int { return int(math.Floor(math.Log(x)/math.Log(base) + 1e-9)) }

func logCeil(x, base float64) int { return int(math.Ceil(math.Log(x)/math.Log(base) - 1e-9)) }
