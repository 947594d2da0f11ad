// Package ranklist writes lists of ranks for people to read: "rank 2",
// "ranks 2 and 5", "ranks 0-3, 6 and 8-9". Runs of three or more become
// ranges, so that a line about a job of a thousand ranks stays a line.
package ranklist

import (
	"strconv"
	"strings"
)

// Ranks is "rank N" for one rank, "ranks " and Numbers for more; ranks
// must be sorted and distinct.
func Ranks(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + strconv.Itoa(ranks[0])
	}
	return "ranks " + Numbers(ranks)
}

// Numbers writes sorted, distinct numbers as "2", "2 and 3" or
// "0-3, 6 and 8-9".
func Numbers(ns []int) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, strconv.Itoa(ns[i])+"-"+strconv.Itoa(ns[j]))
			i = j + 1
			continue
		}
		parts = append(parts, strconv.Itoa(ns[i]))
		i++
	}
	return Join(parts)
}

// Join joins "a", "a and b", "a, b and c".
func Join(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
