// Package plot draws benchmark results: for each collective, a panel of
// bus bandwidth against message size and one of latency against size,
// side by side, with one line per implementation, algorithm, codec,
// transport and rank count, and a legend shared by all the panels.
//
// Sizes are on a log2 axis labelled in binary units (8 B, 1 KiB, 1 MiB),
// bus bandwidth on a linear axis from zero, so that the sizes where a
// line levels off stand out, and latency on a log axis labelled in time
// units, as it spans microseconds to seconds.
package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gocoll/gocoll/internal/bench"
)

// Formats are the image formats Write and Save draw, by file extension.
var Formats = []string{"png", "svg"}

// Options control the figure.
type Options struct {
	Title string // above the panels; no title line when empty
}

// The figure's measures: each panel is panelWidth by panelHeight, the
// legend takes the width of its longest entry on the right, and the
// title a band at the top.
const (
	panelWidth   = 4.6 * vg.Inch
	panelHeight  = 3.4 * vg.Inch
	titleHeight  = 0.5 * vg.Inch
	margin       = 0.15 * vg.Inch
	panelFont    = 11
	tickFont     = 9
	legendFont   = 10
	titleFont    = 16
	lineWidth    = 1.5
	glyphRadius  = 2.5
	legendThumbW = 28
)

// Save draws results into the file at path, in the format its extension
// names (see Formats).
func Save(path string, results []bench.Result, opts Options) (err error) {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("%s: unsupported image format %q: want one of %s", path, format, strings.Join(Formats, ", "))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return Write(f, format, results, opts)
}

// Write draws results to w as an image in format, one of Formats.
// Results without a positive size and time cannot sit on log axes and
// are left out (a barrier's, for one); it is an error if none is left.
func Write(w io.Writer, format string, results []bench.Result, opts Options) error {
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("unsupported image format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
	if len(results) == 0 {
		return errors.New("no results to plot")
	}
	var kept []bench.Result
	for _, r := range results {
		if r.Bytes > 0 && r.AvgUS > 0 {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("none of the %d results has a positive size and time to plot", len(results))
	}
	series := Group(kept)
	styles, legend := styleSeries(series)

	var rows [][]*gplot.Plot
	for start := 0; start < len(series); {
		end := start + 1
		for end < len(series) && series[end].Collective == series[start].Collective {
			end++
		}
		bw, lat, err := panels(series[start:end], styles)
		if err != nil {
			return err
		}
		rows = append(rows, []*gplot.Plot{bw, lat})
		start = end
	}

	legendWidth, legendHeight := legendSize(&legend)
	top := vg.Length(0)
	if opts.Title != "" {
		top = titleHeight
	}
	width := 2*panelWidth + legendWidth
	height := max(vg.Length(len(rows))*panelHeight, legendHeight) + top
	var canvas vg.CanvasWriterTo
	switch format {
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	case "svg":
		canvas = vgsvg.New(width, height)
	}
	dc := draw.New(canvas)
	dc.FillPolygon(color.White, []vg.Point{dc.Min, {X: dc.Max.X, Y: dc.Min.Y}, dc.Max, {X: dc.Min.X, Y: dc.Max.Y}})
	if opts.Title != "" {
		sty := textStyle(titleFont)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		dc.FillText(sty, vg.Point{X: dc.Min.X + width/2, Y: dc.Max.Y - top/2}, opts.Title)
	}
	grid := draw.Crop(dc, 0, -legendWidth, 0, -top)
	tiles := draw.Tiles{Rows: len(rows), Cols: 2, PadX: margin, PadY: margin,
		PadTop: margin / 2, PadBottom: margin / 2, PadLeft: margin, PadRight: margin}
	// Each panel fills its tile, rather than gplot.Align's evenly sized
	// data areas, which move the titles of panels whose tick labels
	// stand out further.
	for j, row := range rows {
		for i, p := range row {
			p.Draw(tiles.At(grid, i, j))
		}
	}
	legend.Draw(draw.Crop(dc, 2*panelWidth, -margin, 0, -top-margin))
	_, err := canvas.WriteTo(w)
	return err
}

// panels draws the series of one collective: bus bandwidth and latency
// against size.
func panels(series []Series, styles map[string]style) (bw, lat *gplot.Plot, err error) {
	collective := series[0].Collective
	bw, lat = newPanel(collective+": bus bandwidth", "busbw (GB/s)"), newPanel(collective+": latency", "average time per call")
	var minBytes, maxBytes int64 = series[0].Points[0].Bytes, 0
	minUS, maxUS := series[0].Points[0].AvgUS, 0.0
	for i := range series {
		s := &series[i]
		bwXY, latXY := make(plotter.XYs, len(s.Points)), make(plotter.XYs, len(s.Points))
		for k, r := range s.Points {
			x := math.Log2(float64(r.Bytes))
			bwXY[k] = plotter.XY{X: x, Y: r.BusBW}
			latXY[k] = plotter.XY{X: x, Y: math.Log10(r.AvgUS)}
			minBytes, maxBytes = min(minBytes, r.Bytes), max(maxBytes, r.Bytes)
			minUS, maxUS = min(minUS, r.AvgUS), max(maxUS, r.AvgUS)
		}
		sty := styles[s.Label()]
		for _, p := range []struct {
			plot *gplot.Plot
			xys  plotter.XYs
		}{{bw, bwXY}, {lat, latXY}} {
			line, points, err := plotter.NewLinePoints(p.xys)
			if err != nil {
				return nil, nil, fmt.Errorf("%s, %s: %w", collective, s.Label(), err)
			}
			sty.apply(line, points)
			p.plot.Add(line, points)
		}
	}
	for _, p := range []*gplot.Plot{bw, lat} {
		p.X.Tick.Marker = gplot.TickerFunc(sizeTicks)
		p.X.Min, p.X.Max = expRange(float64(minBytes), float64(maxBytes), 2)
	}
	bw.Y.Min = 0
	lat.Y.Tick.Marker = gplot.TickerFunc(latencyTicks)
	lat.Y.Min, lat.Y.Max = expRange(minUS, maxUS, 10)
	return bw, lat, nil
}

// newPanel returns an empty panel with a grid and the common labels.
func newPanel(title, ylabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = panelFont + 1
	p.X.Label.Text = "message size"
	p.Y.Label.Text = ylabel
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = panelFont
		a.Tick.Label.Font.Size = tickFont
	}
	p.Add(plotter.NewGrid())
	return p
}

// A style is how one series' lines and points look.
type style struct {
	color  color.Color
	dashes []vg.Length
	glyph  draw.GlyphDrawer
}

func (s style) apply(line *plotter.Line, points *plotter.Scatter) {
	line.Color, line.Dashes, line.Width = s.color, s.dashes, lineWidth
	points.Color, points.Shape, points.Radius = s.color, s.glyph, glyphRadius
}

// styleSeries gives each series label a style, the same in every
// panel, and returns them with a legend that lists them. The dashes
// tell transports apart and the point shape rank counts. The colour
// tells implementations, algorithms and codecs apart, so that lines
// that differ in one of these and agree in the rest look alike, and
// when there is just one of them, it tells every line apart instead.
func styleSeries(series []Series) (map[string]style, gplot.Legend) {
	var variants, labels, transports []string
	var nps []int
	for _, s := range series {
		variants = appendNew(variants, variant(&s))
		transports = appendNew(transports, s.Transport)
		nps = appendNew(nps, s.NP)
	}
	byLabel := slices.Clone(series)
	slices.SortStableFunc(byLabel, func(a, b Series) int {
		a.Collective, b.Collective = "", ""
		return compareKeys(a.key(), b.key())
	})
	styles := map[string]style{}
	legend := gplot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = legendFont
	legend.ThumbnailWidth = legendThumbW
	legend.Padding = 2
	for _, s := range byLabel {
		label := s.Label()
		if _, ok := styles[label]; ok {
			continue
		}
		labels = append(labels, label)
		colour := slices.Index(variants, variant(&s))
		if len(variants) == 1 {
			colour = len(labels) - 1
		}
		sty := style{
			color:  palette[colour%len(palette)],
			dashes: dashes[slices.Index(transports, s.Transport)%len(dashes)],
			glyph:  glyphs[slices.Index(nps, s.NP)%len(glyphs)],
		}
		styles[label] = sty
		line, points := &plotter.Line{}, &plotter.Scatter{}
		sty.apply(line, points)
		legend.Add(label, line, points)
	}
	return styles, legend
}

// variant names what a series measures, apart from where it ran.
func variant(s *Series) string { return s.Impl + "\x00" + s.Algo + "\x00" + s.Codec }

// appendNew appends v to vs unless vs has it.
func appendNew[T comparable](vs []T, v T) []T {
	if slices.Contains(vs, v) {
		return vs
	}
	return append(vs, v)
}

// legendSize is the room the legend's entries need, with margins.
func legendSize(l *gplot.Legend) (width, height vg.Length) {
	r := l.Rectangle(draw.Canvas{})
	return r.Max.X - r.Min.X + 2*margin, r.Max.Y - r.Min.Y + 2*margin
}

func textStyle(size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(gplot.DefaultFont, size), Handler: gplot.DefaultTextHandler}
}

// palette is the Okabe–Ito colour set, told apart by colour-blind
// readers too, without its yellow, which is faint on white.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermilion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{0, 0, 0, 255},       // black
}

var dashes = [][]vg.Length{{}, {6, 3}, {2, 2}, {8, 3, 2, 3}}

var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}}
