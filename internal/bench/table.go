package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteTable writes results as a table for people: one row per result,
// sizes as 8 B, 32 KiB, times in µs and bandwidths in GB/s, each column
// aligned, text to the left and numbers to the right. The algo column
// names the algorithm that ran, marked "(auto)" where the selector chose
// it, and the link column what carried it. The chunk and codec columns
// appear only when a result has a chunk size or a codec other than none,
// so that a plain sweep's table stays narrow.
func WriteTable(w io.Writer, results []Result) error {
	links := slices.ContainsFunc(results, func(r Result) bool { return r.Link != "" })
	chunks := slices.ContainsFunc(results, func(r Result) bool { return r.Chunk > 0 })
	codecs := slices.ContainsFunc(results, func(r Result) bool { return r.Codec != "" && r.Codec != "none" })
	header := []string{"collective", "size", "algo"}
	if links {
		header = append(header, "link")
	}
	if chunks {
		header = append(header, "chunk")
	}
	if codecs {
		header = append(header, "codec")
	}
	text := len(header) // the text columns come first
	header = append(header, "avg µs", "min µs", "p50 µs", "p99 µs", "max µs", "cpu µs", "algbw GB/s", "busbw GB/s")
	rows := [][]string{header}
	for _, r := range results {
		algo := r.Algo
		if r.Auto {
			algo += " (auto)"
		}
		row := []string{r.Collective, FormatBytes(r.Bytes), algo}
		if links {
			row = append(row, r.Link)
		}
		if chunks {
			chunk := "default"
			if r.Chunk > 0 {
				chunk = FormatBytes(int64(r.Chunk))
			}
			row = append(row, chunk)
		}
		if codecs {
			row = append(row, r.Codec)
		}
		rows = append(rows, append(row, fmt.Sprintf("%.2f", r.AvgUS), fmt.Sprintf("%.2f", r.MinUS),
			fmt.Sprintf("%.2f", r.P50US), fmt.Sprintf("%.2f", r.P99US), fmt.Sprintf("%.2f", r.MaxUS),
			fmt.Sprintf("%.2f", r.CPUUS), fmt.Sprintf("%.3f", r.AlgBW), fmt.Sprintf("%.3f", r.BusBW)))
	}
	widths := make([]int, len(header))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			switch {
			case i == len(row)-1:
				b.WriteString(pad + cell)
			case i < text:
				b.WriteString(cell + pad + "  ")
			default:
				b.WriteString(pad + cell + "  ")
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
