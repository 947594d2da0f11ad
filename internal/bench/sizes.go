package bench

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// ParseSizes returns the message sizes, in bytes, that spec names, in
// increasing order and without repeats. spec is a comma-separated list of
// sizes and ranges: a size is a number of bytes with an optional binary
// suffix K, M or G (also KiB, MiB, GiB; K is 1024), and a range "lo:hi" is
// lo, every power of two between them and hi, as OSU's -m lo:hi sweeps,
// so "8:64M" is 8, 16, ... 64 MiB and "3:20" is 3, 4, 8, 16, 20.
func ParseSizes(spec string) ([]int64, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("size list is empty: want sizes such as 8:64M or 1K,4K")
	}
	var sizes []int64
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, ":")
		from, err := parseSize(lo)
		if err != nil {
			return nil, fmt.Errorf("size list %q: %w", spec, err)
		}
		if !isRange {
			sizes = append(sizes, from)
			continue
		}
		to, err := parseSize(hi)
		if err != nil {
			return nil, fmt.Errorf("size list %q: %w", spec, err)
		}
		if from > to {
			return nil, fmt.Errorf("size list %q: range %q runs backwards (%d > %d bytes)", spec, item, from, to)
		}
		sizes = append(sizes, from)
		// The powers of two above from, up to and including to.
		for p := int64(1) << bits.Len64(uint64(from)); p > 0 && p <= to; p <<= 1 {
			sizes = append(sizes, p)
		}
		sizes = append(sizes, to)
	}
	slices.Sort(sizes)
	return slices.Compact(sizes), nil
}

// units are the suffixes ParseSizes accepts, longest first so that "KiB"
// is not read as "K" followed by garbage.
var units = []struct {
	suffix string
	shift  uint
}{
	{"KiB", 10}, {"MiB", 20}, {"GiB", 30},
	{"K", 10}, {"M", 20}, {"G", 30}, {"B", 0},
}

// parseSize parses one size, such as 64, 4K or 1GiB.
func parseSize(s string) (int64, error) {
	digits, shift := s, uint(0)
	for _, u := range units {
		if len(s) > len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			digits, shift = s[:len(s)-len(u.suffix)], u.shift
			break
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	switch {
	case s == "":
		return 0, fmt.Errorf("missing size: want a number of bytes such as 64, 4K or 1M")
	case err != nil && strings.Trim(digits, "0123456789") == "":
		return 0, fmt.Errorf("size %q is too large", s)
	case err != nil:
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional suffix K, M or G", s)
	case n < 1:
		return 0, fmt.Errorf("size %q: want at least 1 byte", s)
	case n > math.MaxInt64>>shift:
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n << shift, nil
}

// FormatBytes writes a size the way people read it: 8 B, 32 KiB,
// 1.5 MiB.
func FormatBytes(n int64) string {
	const unitNames = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	shift, i := uint(10), 0
	for n>>(shift+10) != 0 && i < len(unitNames)-1 {
		shift += 10
		i++
	}
	unit := " " + unitNames[i:i+1] + "iB"
	if n&(1<<shift-1) == 0 {
		return strconv.FormatInt(n>>shift, 10) + unit
	}
	return strconv.FormatFloat(float64(n)/float64(int64(1)<<shift), 'f', 1, 64) + unit
}
