package ranklist

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRanks(t *testing.T) {
	for _, tc := range []struct {
		ranks []int
		want  string
	}{
		{[]int{2}, "rank 2"},
		{[]int{2, 5}, "ranks 2 and 5"},
		{[]int{2, 3}, "ranks 2 and 3"},
		{[]int{0, 1, 2, 3, 6, 8, 9}, "ranks 0-3, 6, 8 and 9"},
		{[]int{0, 1, 2, 7, 8, 9, 10}, "ranks 0-2 and 7-10"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, Ranks(tc.ranks))
		})
	}
	require.Equal(t, "", Join(nil))
	require.Equal(t, "a, b and c", Join([]string{"a", "b", "c"}))
}
