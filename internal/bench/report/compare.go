package report

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/kuradb/kura/internal/bench"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Names of PlotCompare's charts, without extension.
const (
	CompareThroughputChart = "compare-throughput"
	CompareReadP99Chart    = "compare-read-p99"
	CompareUpdateP99Chart  = "compare-update-p99"
)

// compareSpec is one grouped bar chart: groups are workloads, bars are runs of the
// run phase.
type compareSpec struct {
	name  string
	title string
	op    string // the operation whose p99 is compared; "" compares throughput
}

var compareSpecs = []compareSpec{
	{CompareThroughputChart, "Throughput by workload (run phase)", ""},
	{CompareReadP99Chart, "READ p99 latency by workload (run phase)", "READ"},
	{CompareUpdateP99Chart, "UPDATE p99 latency by workload (run phase)", "UPDATE"},
}

// barData is what one grouped bar chart shows.
type barData struct {
	groups []string             // workloads, in report order
	bars   []string             // run names, in label order
	values []map[string]float64 // values[bar][group]; absent when that run did not measure it
}

// compareData collects spec's values from the run-phase results. Workloads where no
// run measured the value are left out.
func compareData(results []*bench.Result, spec compareSpec) barData {
	results = sorted(results)
	names := runNames(results)
	var d barData
	barIndex := make(map[string]int)
	hasGroup := make(map[string]bool)
	for i, r := range results {
		if r.Phase != "run" {
			continue
		}
		v, ok := r.ThroughputOps, true
		if spec.op != "" {
			var s bench.OpStats
			s, ok = r.Op(spec.op)
			v = s.P99Us
			ok = ok && s.Count > 0
		}
		if !ok {
			continue
		}
		b, seen := barIndex[names[i]]
		if !seen {
			b = len(d.bars)
			barIndex[names[i]] = b
			d.bars = append(d.bars, names[i])
			d.values = append(d.values, make(map[string]float64))
		}
		d.values[b][r.Workload] = v
		hasGroup[r.Workload] = true
	}
	for _, w := range workloads(results) {
		if hasGroup[w] {
			d.groups = append(d.groups, w)
		}
	}
	return d
}

// compareCharts returns the specs PlotCompare draws for results: those with data.
func compareCharts(results []*bench.Result) []compareSpec {
	var out []compareSpec
	for _, s := range compareSpecs {
		if len(compareData(results, s).groups) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// PlotCompare draws grouped bar charts comparing the run phases of results into dir,
// creating it: throughput per workload, and READ and UPDATE p99 latency per workload,
// one bar per label, each as .png and .svg; and, for each workload run at least twice,
// the runs' throughput over time on one chart. A chart with no data (no run phase, or no
// workload with updates) is left out; so is the bar of a label that did not run a
// workload. It returns the paths of the files written.
func PlotCompare(results []*bench.Result, dir string) ([]string, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w to compare", ErrNoResults)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var written []string
	for _, spec := range compareCharts(results) {
		c, err := barChart(spec, compareData(results, spec))
		if err != nil {
			return written, err
		}
		files, err := c.save(dir, spec.name)
		written = append(written, files...)
		if err != nil {
			return written, err
		}
	}
	for _, w := range overTimeWorkloads(results) {
		c, err := overTimeChart(results, w)
		if err != nil {
			return written, err
		}
		files, err := c.save(dir, overTimeName(w))
		written = append(written, files...)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

func barChart(spec compareSpec, d barData) (*chart, error) {
	top := 0.0
	for _, vs := range d.values {
		for _, v := range vs {
			top = max(top, v)
		}
	}
	yLabel, unitUs := "operations per second", 1.0
	if spec.op != "" {
		var unit string
		unit, unitUs = latencyUnit(top)
		yLabel = "p99 latency (" + unit + ")"
	}
	top /= unitUs
	c := newChart(spec.title, "", yLabel)
	c.grid.Vertical.Color = nil // vertical lines would cut through the bars
	c.p.Y.Tick.Marker = niceTicks{}
	c.p.Y.Min, c.p.Y.Max = 0, top*1.12 // room for the value labels
	c.p.NominalX(d.groups...)
	c.p.Y.Padding = 0 // NominalX pads for the first name; X.Min and X.Max centre the groups
	c.p.X.Min, c.p.X.Max = -0.5, float64(len(d.groups))-0.5

	// Bar widths are lengths on the canvas, not data units, so they follow from the
	// width left for the data: the canvas less the margins, the legend and the y axis.
	for _, b := range d.bars {
		c.legend.Add(b)
	}
	groupWidth := (chartWidth - 2*margin - c.legendWidth() - vg.Points(60)) / vg.Length(len(d.groups))
	barWidth := groupWidth * 0.8 / vg.Length(len(d.bars))
	c.legend = newLegend() // filled again by addBars, with the bars as thumbnails
	widest := vg.Length(0)
	for _, g := range d.groups {
		widest = max(widest, c.p.X.Tick.Label.Width(g))
	}
	if groupWidth < widest*1.1 {
		c.p.X.Tick.Label.Rotation = math.Pi / 6
		c.p.X.Tick.Label.XAlign = draw.XRight
		c.p.X.Tick.Label.YAlign = draw.YCenter
	}
	valueStyle := c.p.X.Tick.Label
	valueStyle.Font.Size = vg.Points(8)
	valueStyle.Rotation = 0
	valueStyle.XAlign = draw.XCenter
	valueStyle.YAlign = draw.YBottom
	if valueStyle.Width(shortNumber(top*1.1)) > barWidth {
		valueStyle.Font.Size = 0 // values do not fit across a bar: leave them out
	}
	if err := c.addBars(d, unitUs, barWidth, valueStyle); err != nil {
		return nil, err
	}
	return c, nil
}

// addBars adds one bar per run and workload, grouped by workload, with its value above
// it in valueStyle unless that style's font size is zero.
func (c *chart) addBars(d barData, unitUs float64, barWidth vg.Length, valueStyle text.Style) error {
	for i, b := range d.bars {
		var thumb *plotter.BarChart
		for g, w := range d.groups {
			v, ok := d.values[i][w]
			if !ok {
				continue
			}
			v /= unitUs
			bar, err := plotter.NewBarChart(plotter.Values{v}, barWidth)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			bar.XMin = float64(g)
			bar.Offset = barWidth * (vg.Length(i) - vg.Length(len(d.bars)-1)/2)
			bar.Color = palette[i%len(palette)]
			bar.LineStyle.Width = 0
			c.p.Add(bar)
			if thumb == nil {
				thumb = bar
			}
			if valueStyle.Font.Size == 0 {
				continue
			}
			l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: float64(g), Y: v}},
				Labels: []string{shortNumber(v)}})
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			l.TextStyle[0] = valueStyle
			l.Offset = vg.Point{X: bar.Offset, Y: vg.Points(2)}
			c.p.Add(l)
		}
		c.legend.Add(b, thumb)
	}
	return nil
}

// shortNumber writes v with three significant digits, as 1.98, 22.5k or 1.2M.
func shortNumber(v float64) string {
	suffix := ""
	switch {
	case v >= 1e6:
		v, suffix = v/1e6, "M"
	case v >= 1e3:
		v, suffix = v/1e3, "k"
	}
	decimals := 0
	switch {
	case v < 1:
		decimals = 3
	case v < 10:
		decimals = 2
	case v < 100:
		decimals = 1
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s + suffix
}
