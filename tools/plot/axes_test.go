package plot

import (
	"testing"

	"github.com/stretchr/testify/require"
	gplot "gonum.org/v1/plot"
)

func TestSizeLabel(t *testing.T) {
	for _, tc := range []struct {
		bytes int64
		want  string
	}{
		{1, "1 B"},
		{8, "8 B"},
		{1000, "1000 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{3000, "2.93 KiB"},
		{1 << 20, "1 MiB"},
		{64 << 20, "64 MiB"},
		{512 << 20, "512 MiB"},
		{1 << 30, "1 GiB"},
		{1 << 40, "1 TiB"},
		{2048 << 40, "2048 TiB"},
	} {
		require.Equal(t, tc.want, SizeLabel(tc.bytes), "%d bytes", tc.bytes)
	}
}

func TestTimeLabel(t *testing.T) {
	for _, tc := range []struct {
		us   float64
		want string
	}{
		{0.1, "100 ns"},
		{0.638, "638 ns"},
		{1, "1 µs"},
		{2.5, "2.5 µs"},
		{999.6, "1000 µs"},
		{1000, "1 ms"},
		{37438.541, "37.4 ms"},
		{1e6, "1 s"},
		{1e7, "10 s"},
	} {
		require.Equal(t, tc.want, TimeLabel(tc.us), "%g µs", tc.us)
	}
}

// labels returns the labels of ticks, leaving out unlabelled ones.
func labels(ticks []gplot.Tick) []string {
	var ls []string
	for _, t := range ticks {
		if t.Label != "" {
			ls = append(ls, t.Label)
		}
	}
	return ls
}

func TestSizeTicks(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lo, hi     float64 // exponents of two
		wantLabels []string
		wantMarks  int
	}{
		{"every size", 0, 6, []string{"1 B", "2 B", "4 B", "8 B", "16 B", "32 B", "64 B"}, 7},
		{"every second", 3, 10, []string{"16 B", "64 B", "256 B", "1 KiB"}, 8},
		{"every fifth", 2, 26, []string{"32 B", "1 KiB", "32 KiB", "1 MiB", "32 MiB"}, 25},
		{"every tenth", 0, 40, []string{"1 B", "1 KiB", "1 MiB", "1 GiB", "1 TiB"}, 41},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ticks := sizeTicks(tc.lo, tc.hi)
			require.Equal(t, tc.wantLabels, labels(ticks))
			require.Len(t, ticks, tc.wantMarks)
		})
	}
}

func TestLatencyTicks(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lo, hi     float64 // exponents of ten, µs
		wantLabels []string
	}{
		{"decades", -1, 5, []string{"100 ns", "1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms"}},
		{"one decade", 0, 1, []string{"1 µs", "2 µs", "5 µs", "10 µs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ticks := latencyTicks(tc.lo, tc.hi)
			require.Equal(t, tc.wantLabels, labels(ticks))
			// Nine marks a decade and one at the top.
			require.Len(t, ticks, 9*int(tc.hi-tc.lo)+1)
		})
	}
}

func TestExpRange(t *testing.T) {
	for _, tc := range []struct {
		min, max, base float64
		lo, hi         float64
	}{
		{4, 64 << 20, 2, 2, 26},
		{5, 3000, 2, 2, 12},
		{8, 8, 2, 3, 4},
		{0.638, 95000, 10, -1, 5},
		{1000, 1000, 10, 3, 4},
		{1000, 1e6, 10, 3, 6},
	} {
		lo, hi := expRange(tc.min, tc.max, tc.base)
		require.Equal(t, [2]float64{tc.lo, tc.hi}, [2]float64{lo, hi}, "%g..%g base %g", tc.min, tc.max, tc.base)
	}
}
