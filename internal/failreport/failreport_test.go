package failreport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		r    Report
		text string
	}{
		{"one lost", Report{Lost, []int{3}, "EOF"}, "rank 3 lost: EOF"},
		{"a host lost", Report{Lost, []int{2, 3}, "connection reset"}, "ranks 2 and 3 lost: connection reset"},
		{"three lost", Report{Lost, []int{1, 2, 5}, "x"}, "ranks 1, 2 and 5 lost: x"},
		{"aborted", Report{Aborted, []int{1}, "loss is NaN"}, "rank 1 aborted the job: loss is NaN"},
		{"empty reason", Report{Aborted, []int{0}, ""}, "rank 0 aborted the job: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := tt.r.Line()
			require.True(t, strings.HasSuffix(string(line), "\n"))
			got, err := Parse(strings.TrimSuffix(string(line), "\n"))
			require.NoError(t, err)
			require.Equal(t, tt.r, got)
			require.Equal(t, tt.text, got.String())
		})
	}
}

func TestLineIsOneBoundedLine(t *testing.T) {
	r := Report{Lost, []int{1}, "first\nsecond" + strings.Repeat("x", 2*MaxLine)}
	line := r.Line()
	require.Len(t, line, MaxLine)
	require.Equal(t, 1, strings.Count(string(line), "\n"))
}

func TestParseRejects(t *testing.T) {
	for _, line := range []string{"", "gone 1 x", "lost", "lost x reason", "lost -1 reason", "aborted 1,,2 r"} {
		t.Run(line, func(t *testing.T) {
			_, err := Parse(line)
			require.Error(t, err)
		})
	}
}
