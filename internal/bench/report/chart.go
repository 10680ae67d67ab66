package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kuradb/kura/internal/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Image size: 800x450 pixels at 96 dots per inch, which is 600x337.5 points. Small
// enough to commit, large enough to read a legend of ten entries.
const (
	widthPx  = 800
	heightPx = 450
	dpi      = 96
)

var (
	chartWidth  = vg.Length(widthPx) / dpi * vg.Inch
	chartHeight = vg.Length(heightPx) / dpi * vg.Inch
)

// palette is Tableau 10: distinct hues that stay apart in print and for the common
// kinds of colour blindness better than gonum's defaults.
var palette = []color.Color{
	rgb(0x1f77b4), rgb(0xff7f0e), rgb(0x2ca02c), rgb(0xd62728), rgb(0x9467bd),
	rgb(0x8c564b), rgb(0xe377c2), rgb(0x7f7f7f), rgb(0xbcbd22), rgb(0x17becf),
}

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// opOrder fixes each operation's colour so READ looks the same in every chart.
var opOrder = []string{"READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE", "PING"}

// opColor returns the colour of operation op; others is the position of op among the
// operations outside opOrder, so that those too get distinct colours.
func opColor(op string, others int) color.Color {
	if op == bench.Total {
		return color.Black
	}
	if i := rank(opOrder, op); i < len(opOrder) {
		return palette[i]
	}
	return palette[(len(opOrder)+others)%len(palette)]
}

// margin is the blank border around a chart, so that the title and the legend do not
// touch the edge of the image.
const margin = vg.Length(8)

// chart is a plot whose legend is drawn to the right of the plot rather than over the
// data, which gonum's own legend would do.
type chart struct {
	p      *plot.Plot
	grid   *plotter.Grid
	legend plot.Legend
}

func newChart(title, xLabel, yLabel string) *chart {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xe0}
	g.Horizontal.Color = color.Gray{Y: 0xe0}
	p.Add(g)
	return &chart{p: p, grid: g, legend: newLegend()}
}

// newLegend returns an empty legend with icons on the left of the names.
func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font = font.From(plot.DefaultFont, 10)
	l.ThumbnailWidth = vg.Points(18)
	l.Padding = vg.Points(4)
	return l
}

// addLine adds a line for name to the chart and the legend, with glyphs at the points
// when there are too few of them to see a line.
func (c *chart) addLine(name string, xys plotter.XYs, col color.Color, width vg.Length) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	l.Color = col
	l.Width = width
	if name == bench.Total {
		// Dashed, so that an operation whose line coincides with the total (the only
		// operation of write-only) still shows under it.
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	c.p.Add(l)
	thumbs := []plot.Thumbnailer{l}
	if len(xys) <= 20 {
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		s.Color = col
		s.Radius = vg.Points(2)
		s.Shape = draw.CircleGlyph{}
		c.p.Add(s)
		thumbs = append(thumbs, s)
	}
	c.legend.Add(name, thumbs...)
	return nil
}

// legendWidth is the width the legend takes to the right of the plot, padding included.
func (c *chart) legendWidth() vg.Length {
	r := c.legend.Rectangle(draw.Canvas{})
	if w := r.Max.X - r.Min.X; w > 0 {
		return w + vg.Points(12)
	}
	return 0
}

// draw draws the chart onto canvas cv.
func (c *chart) draw(cv vg.CanvasSizer) {
	dc := draw.New(cv)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	dc = draw.Crop(dc, margin, -margin, margin, -margin)
	lw := c.legendWidth()
	c.p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	if lw == 0 {
		return
	}
	top := vg.Length(0)
	if c.p.Title.Text != "" {
		top = c.p.Title.TextStyle.Rectangle(c.p.Title.Text).Size().Y + c.p.Title.Padding
	}
	area := draw.Crop(dc, dc.Max.X-dc.Min.X-lw+vg.Points(8), 0, 0, -top-vg.Points(4))
	c.legend.Draw(area)
}

// save writes the chart as dir/name.png and dir/name.svg and returns their paths.
func (c *chart) save(dir, name string) ([]string, error) {
	png := vgimg.NewWith(vgimg.UseWH(chartWidth, chartHeight), vgimg.UseDPI(dpi))
	c.draw(png)
	svg := vgsvg.New(chartWidth, chartHeight)
	c.draw(svg)
	files := []struct {
		path string
		w    io.WriterTo
	}{
		{filepath.Join(dir, name+".png"), vgimg.PngCanvas{Canvas: png}},
		{filepath.Join(dir, name+".svg"), svg},
	}
	var paths []string
	for _, f := range files {
		if err := writeTo(f.path, f.w); err != nil {
			return paths, err
		}
		paths = append(paths, f.path)
	}
	return paths, nil
}

func writeTo(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// niceTicks are linear ticks at 1, 2, 2.5 or 5 times a power of ten, four to seven of
// them labelled, with large values written 1.5k or 2M: gonum's default ticks can land on
// steps such as 0.9 and write 1.5e+06.
type niceTicks struct{}

func (niceTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) {
		return []plot.Tick{{Value: min, Label: humanNumber(min, 0)}}
	}
	raw := (max - min) / 6
	exp := math.Floor(math.Log10(raw))
	step, mantissa := math.Pow(10, exp), 1.0
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*math.Pow(10, exp) >= raw {
			step, mantissa = m*math.Pow(10, exp), m
			break
		}
	}
	decimals := max0(-int(math.Floor(math.Log10(step) + 1e-9)))
	if mantissa == 2.5 {
		decimals++
	}
	var ticks []plot.Tick
	for i := math.Ceil(min / step * 2); i/2*step <= max*(1+1e-9); i++ {
		v := i / 2 * step
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = humanNumber(v, decimals)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

func max0(v int) int { return max(v, 0) }

// humanNumber writes v with decimals digits after the point, or as 1.5k or 2M from a
// thousand up.
func humanNumber(v float64, decimals int) string {
	switch a := math.Abs(v); {
	case a < 1e-12:
		return "0"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// logTicks labels a log axis at 1, 2 and 5 times powers of ten when the range spans
// at most three decades, and at powers of ten with unlabelled minor ticks otherwise.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	dense := hi-lo <= 3
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := base * float64(m)
			if v < min*0.999 || v > max*1.001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (dense && (m == 2 || m == 5)) {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// logRange widens [min, max] outwards to 1, 2 or 5 times a power of ten, so that a log
// axis starts and ends on a labelled tick.
func logRange(min, max float64) (float64, float64) {
	down := func(v float64) float64 {
		p := math.Pow(10, math.Floor(math.Log10(v)))
		for _, m := range []float64{5, 2, 1} {
			if m*p <= v*1.0000001 {
				return m * p
			}
		}
		return p
	}
	up := func(v float64) float64 {
		p := math.Pow(10, math.Floor(math.Log10(v)))
		for _, m := range []float64{1, 2, 5, 10} {
			if m*p >= v/1.0000001 {
				return m * p
			}
		}
		return 10 * p
	}
	return down(min), up(max)
}

// latencyUnit picks milliseconds, or microseconds when every latency is below 1 ms,
// and returns the unit's name and its size in microseconds.
func latencyUnit(maxUs float64) (string, float64) {
	if maxUs < 1000 {
		return "µs", 1
	}
	return "ms", 1000
}

// setLatencyAxis scales the y axis for latencies between minV and maxV (already in the
// chosen unit): logarithmic when they span more than a factor of 20, since one stall
// would otherwise flatten everything else against the axis.
func setLatencyAxis(p *plot.Plot, minV, maxV float64) {
	if minV > 0 && maxV/minV > 20 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min, p.Y.Max = logRange(minV, maxV)
		return
	}
	p.Y.Tick.Marker = niceTicks{}
	p.Y.Min, p.Y.Max = 0, maxV*1.1
}
