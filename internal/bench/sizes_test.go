package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSizes(t *testing.T) {
	tests := []struct {
		spec string
		want []int64
	}{
		{"8", []int64{8}},
		{"8:64", []int64{8, 16, 32, 64}},
		{"8:64M", func() []int64 {
			var s []int64
			for b := int64(8); b <= 64<<20; b *= 2 {
				s = append(s, b)
			}
			return s
		}()},
		{"3:20", []int64{3, 4, 8, 16, 20}},
		{"1K:4K", []int64{1024, 2048, 4096}},
		{"1k,2KiB,1m,1G,5B", []int64{5, 1024, 2048, 1 << 20, 1 << 30}},
		{"16, 4:8 ,8", []int64{4, 8, 16}},
		{"100:100", []int64{100}},
		{"1:3", []int64{1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseSizes(tt.spec)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseSizesErrors(t *testing.T) {
	tests := []struct {
		spec, want string
	}{
		{"", "size list is empty"},
		{"64:8", `range "64:8" runs backwards (64 > 8 bytes)`},
		{"8X", `size "8X": want a number of bytes with an optional suffix K, M or G`},
		{"8:", "missing size"},
		{":8", "missing size"},
		{"8,,16", "missing size"},
		{"0", `size "0": want at least 1 byte`},
		{"-4", `size "-4": want at least 1 byte`},
		{"K", `size "K": want a number`},
		{"99999999999999999999", "is too large"},
		{"9000000000G", "is too large"},
		{"1.5K", `size "1.5K"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := ParseSizes(tt.spec)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{8, "8 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{32 << 10, "32 KiB"},
		{64 << 20, "64 MiB"},
		{3 << 30, "3 GiB"},
		{1 << 40, "1 TiB"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, FormatBytes(tt.n), "%d bytes", tt.n)
	}
}
