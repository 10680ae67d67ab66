package report

import (
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/kuradb/kura/internal/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Names of PlotRun's charts, without extension.
const (
	ThroughputChart = "throughput" // operations per second, second by second
	LatencyChart    = "latency"    // latency by percentile over the whole phase
	P99Chart        = "p99"        // 99th percentile latency, second by second
)

// runCharts returns the charts PlotRun draws for r: those it has data for.
func runCharts(r *bench.Result) []string {
	var names []string
	if len(r.Series) > 0 {
		names = append(names, ThroughputChart)
	}
	for _, s := range r.Operations {
		if len(percentilePoints(s, 1)) > 0 {
			names = append(names, LatencyChart)
			break
		}
	}
	for _, iv := range r.Series {
		if iv.Count > 0 && iv.P99Us > 0 {
			names = append(names, P99Chart)
			break
		}
	}
	return names
}

// PlotRun draws the charts of one result into dir, creating it: throughput over time,
// the latency distribution per operation, and p99 latency over time, each as .png and
// .svg. Charts without data (a result with no per-second series) are left out. It
// returns the paths of the files written.
func PlotRun(r *bench.Result, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var written []string
	for _, name := range runCharts(r) {
		var c *chart
		var err error
		switch name {
		case ThroughputChart:
			c, err = throughputChart(r)
		case LatencyChart:
			c, err = latencyChart(r)
		case P99Chart:
			c, err = p99Chart(r)
		}
		if err != nil {
			return written, err
		}
		files, err := c.save(dir, name)
		written = append(written, files...)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

func runTitle(r *bench.Result, what string) string {
	return fmt.Sprintf("%s: %s %s, %s", r.Label, r.Workload, r.Phase, what)
}

// seriesOps returns the operations of r's series in the order of r.Operations (Total
// last), followed by any the summary lacks.
func seriesOps(r *bench.Result) []string {
	in := make(map[string]bool)
	for _, iv := range r.Series {
		in[iv.Op] = true
	}
	var ops []string
	for _, s := range r.Operations {
		if in[s.Op] {
			ops = append(ops, s.Op)
			delete(in, s.Op)
		}
	}
	var rest []string
	for op := range in {
		rest = append(rest, op)
	}
	sort.Strings(rest)
	return append(ops, rest...)
}

// opStyle returns the colour and line width of op, the i-th of ops.
func opStyle(ops []string, i int) (colorIndex int, width vg.Length) {
	others := 0
	for _, op := range ops[:i] {
		if rank(opOrder, op) == len(opOrder) && op != bench.Total {
			others++
		}
	}
	if ops[i] == bench.Total {
		return others, vg.Points(1.5)
	}
	return others, vg.Points(1.2)
}

func throughputChart(r *bench.Result) (*chart, error) {
	c := newChart(runTitle(r, "throughput"), "time (s)", "operations per second")
	c.p.Y.Tick.Marker = niceTicks{}
	c.p.X.Tick.Marker = niceTicks{}
	c.p.X.Min, c.p.Y.Min = 0, 0
	tMin, tMax := math.MaxInt, math.MinInt
	counts := make(map[string]map[int]int64)
	for _, iv := range r.Series {
		tMin, tMax = min(tMin, iv.T), max(tMax, iv.T)
		if counts[iv.Op] == nil {
			counts[iv.Op] = make(map[int]int64)
		}
		counts[iv.Op][iv.T] += iv.Count
	}
	ops := seriesOps(r)
	peak := int64(0)
	for _, byT := range counts {
		for _, n := range byT {
			peak = max(peak, n)
		}
	}
	c.p.Y.Max = float64(peak) * 1.1
	for i, op := range ops {
		// A second without an interval for op had no operations of that type.
		xys := make(plotter.XYs, 0, tMax-tMin+1)
		for t := tMin; t <= tMax; t++ {
			xys = append(xys, plotter.XY{X: float64(t), Y: float64(counts[op][t])})
		}
		others, width := opStyle(ops, i)
		if err := c.addLine(op, xys, opColor(op, others), width); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// percentilePoints returns s's latency distribution as (1/(1-q), latency/unitUs)
// points. The maximum (q = 1) has no place on that axis and is left out.
func percentilePoints(s bench.OpStats, unitUs float64) plotter.XYs {
	var xys plotter.XYs
	for _, p := range s.Percentiles {
		if p.Q < 0 || p.Q >= 1 || p.Us <= 0 {
			continue
		}
		xys = append(xys, plotter.XY{X: 1 / (1 - p.Q), Y: p.Us / unitUs})
	}
	sort.SliceStable(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
	return xys
}

func latencyChart(r *bench.Result) (*chart, error) {
	var ops []string
	maxUs, minUs := 0.0, math.Inf(1)
	for _, s := range r.Operations {
		pts := percentilePoints(s, 1)
		if len(pts) == 0 {
			continue
		}
		ops = append(ops, s.Op)
		for _, p := range pts {
			maxUs, minUs = max(maxUs, p.Y), min(minUs, p.Y)
		}
	}
	unit, unitUs := latencyUnit(maxUs)
	c := newChart(runTitle(r, "latency by percentile"), "percentile", "latency ("+unit+")")
	xMin, xMax := math.Inf(1), 0.0
	for i, op := range ops {
		s, _ := r.Op(op)
		xys := percentilePoints(s, unitUs)
		xMin, xMax = min(xMin, xys[0].X), max(xMax, xys[len(xys)-1].X)
		others, width := opStyle(ops, i)
		if err := c.addLine(op, xys, opColor(op, others), width); err != nil {
			return nil, err
		}
	}
	c.p.X.Scale = plot.LogScale{}
	c.p.X.Tick.Marker = percentileTicks{}
	c.p.X.Min = 1
	if xMin >= 2 {
		c.p.X.Min = 2
	}
	c.p.X.Max = math.Max(10, math.Pow(10, math.Ceil(math.Log10(xMax)-1e-9)))
	setLatencyAxis(c.p, minUs/unitUs, maxUs/unitUs)
	return c, nil
}

// percentileTicks label an axis of 1/(1-q) with q as a percentage: 2 is 50%, 10 is
// 90%, 100 is 99%, as HdrHistogram's plots do.
type percentileTicks struct{}

func (percentileTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := 0.0; math.Pow(10, e) <= max*1.001; e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := base * float64(m)
			if v < min*0.999 || v > max*1.001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (e == 0 && m == 2) {
				t.Label = percentLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// percentLabel turns x = 1/(1-q) into q as a percentage: 1000 is "99.9%".
func percentLabel(x float64) string {
	q := 100 * (1 - 1/x)
	digits := max(0, int(math.Round(math.Log10(x)))-2)
	return fmt.Sprintf("%.*f%%", digits, q)
}

func p99Chart(r *bench.Result) (*chart, error) {
	byOp := make(map[string]plotter.XYs)
	maxUs, minUs := 0.0, math.Inf(1)
	for _, iv := range r.Series {
		if iv.Count == 0 || iv.P99Us <= 0 {
			continue
		}
		byOp[iv.Op] = append(byOp[iv.Op], plotter.XY{X: float64(iv.T), Y: iv.P99Us})
		maxUs, minUs = max(maxUs, iv.P99Us), min(minUs, iv.P99Us)
	}
	unit, unitUs := latencyUnit(maxUs)
	c := newChart(runTitle(r, "p99 latency"), "time (s)", "p99 latency ("+unit+")")
	c.p.X.Tick.Marker = niceTicks{}
	c.p.X.Min = 0
	var ops []string
	for _, op := range seriesOps(r) {
		if len(byOp[op]) > 0 {
			ops = append(ops, op)
		}
	}
	for i, op := range ops {
		xys := byOp[op]
		sort.SliceStable(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
		for j := range xys {
			xys[j].Y /= unitUs
		}
		others, width := opStyle(ops, i)
		if err := c.addLine(op, xys, opColor(op, others), width); err != nil {
			return nil, err
		}
	}
	setLatencyAxis(c.p, minUs/unitUs, maxUs/unitUs)
	return c, nil
}
