package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kuradb/kura/internal/bench"
)

// overTimeBucket is the width, in seconds, of the averages the over-time comparison
// draws: per-second counts of several runs on one chart are noise.
const overTimeBucket = 10

// overTimeName is the file name, without extension, of the over-time comparison of one
// workload.
func overTimeName(workload string) string { return "compare-over-time-" + sanitize(workload) }

// overTimeWorkloads returns the workloads with at least two run phases that saved a
// series: those worth a throughput-over-time comparison.
func overTimeWorkloads(results []*bench.Result) []string {
	n := make(map[string]int)
	for _, r := range results {
		if r.Phase == "run" && len(r.Series) > 0 {
			n[r.Workload]++
		}
	}
	var out []string
	for _, w := range workloads(results) {
		if n[w] >= 2 {
			out = append(out, w)
		}
	}
	return out
}

// overTimeTitle is the over-time comparison's title.
func overTimeTitle(workload string) string {
	return fmt.Sprintf("Throughput over time: %s (run phase, %d s averages)", workload, overTimeBucket)
}

// overTimeChart draws every run phase of workload as a line of its throughput, averaged
// over overTimeBucket seconds: how the runs warm up, settle or degrade side by side.
func overTimeChart(results []*bench.Result, workload string) (*chart, error) {
	results = sorted(results)
	names := runNames(results)
	c := newChart(overTimeTitle(workload), "time (s)", "operations per second")
	c.p.Y.Tick.Marker = niceTicks{}
	c.p.X.Tick.Marker = niceTicks{}
	c.p.X.Min, c.p.Y.Min = 0, 0
	line := 0
	peak := 0.0
	for i, r := range results {
		if r.Phase != "run" || r.Workload != workload || len(r.Series) == 0 {
			continue
		}
		xys := bucketed(r.Series)
		for _, p := range xys {
			peak = max(peak, p.Y)
		}
		if err := c.addLine(names[i], xys, palette[line%len(palette)], vg.Points(1.5)); err != nil {
			return nil, err
		}
		line++
	}
	c.p.Y.Max = math.Max(peak*1.1, 1)
	return c, nil
}

// bucketed turns a series into operations per second (of every operation but the total)
// averaged over each overTimeBucket
// seconds, placed at the bucket's end. A last, partial bucket is averaged over the
// seconds it has.
func bucketed(series []bench.Interval) plotter.XYs {
	last := 0
	perSecond := make(map[int]int64)
	for _, iv := range series {
		if iv.Op == bench.Total {
			continue // the sum of the others
		}
		perSecond[iv.T] += iv.Count
		last = max(last, iv.T)
	}
	var xys plotter.XYs
	for start := 1; start <= last; start += overTimeBucket {
		end := min(start+overTimeBucket-1, last)
		var n int64
		for t := start; t <= end; t++ {
			n += perSecond[t]
		}
		xys = append(xys, plotter.XY{X: float64(end), Y: float64(n) / float64(end-start+1)})
	}
	return xys
}
