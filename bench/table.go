package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteTable writes results as a table for people: one row per result,
// sizes as 8 B, 32 KiB, times in µs and bandwidths in GB/s, each column
// aligned, text to the left and numbers to the right.
func WriteTable(w io.Writer, results []Result) error {
	header := []string{"collective", "size", "algo", "avg µs", "min µs", "max µs", "algbw GB/s", "busbw GB/s"}
	const text = 3 // the first three columns are text
	rows := [][]string{header}
	for _, r := range results {
		rows = append(rows, []string{r.Collective, FormatBytes(r.Bytes), r.Algo,
			fmt.Sprintf("%.2f", r.AvgUS), fmt.Sprintf("%.2f", r.MinUS), fmt.Sprintf("%.2f", r.MaxUS),
			fmt.Sprintf("%.3f", r.AlgBW), fmt.Sprintf("%.3f", r.BusBW)})
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
