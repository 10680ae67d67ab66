package report

import (
	"fmt"
	"io"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/bench"
)

// Options control WriteMarkdown and Render.
type Options struct {
	// Baseline is the label whose throughput the other labels are divided by in each
	// table's ratio column. Default: the first label in alphabetical order.
	Baseline string
	// ImageDir is where the charts are, relative to the Markdown file and with '/' as
	// separator: PlotCompare's charts in it, and each run's PlotRun charts in a
	// subdirectory named label-workload-phase. When empty, WriteMarkdown links no
	// images and Render puts the charts next to report.md.
	ImageDir string
	// Title is the report's top heading. Default "Benchmark report".
	Title string
}

// WriteMarkdown writes a report comparing results: the machines and runs, any failed
// operations, then per workload and phase a throughput table with the ratio to the
// baseline label and a latency table per operation (milliseconds). The text depends only
// on results and opts, not on their order or the clock, so it can be golden-tested.
func WriteMarkdown(w io.Writer, results []*bench.Result, opts Options) error {
	if len(results) == 0 {
		return fmt.Errorf("%w to report", ErrNoResults)
	}
	results = sorted(results)
	labels := labels(results)
	if opts.Baseline == "" {
		opts.Baseline = labels[0]
	} else if rank(labels, opts.Baseline) == len(labels) {
		return fmt.Errorf("report: baseline %q is not a label of these results (labels: %s)",
			opts.Baseline, strings.Join(labels, ", "))
	}
	if opts.Title == "" {
		opts.Title = "Benchmark report"
	}
	md := &mdReport{opts: opts, results: results, names: runNames(results), dirs: runDirs(results)}
	md.header(labels)
	md.errors()
	md.machines()
	md.runs()
	md.compareImages()
	for _, wl := range workloads(results) {
		md.workload(wl)
	}
	if _, err := io.WriteString(w, md.b.String()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// mdReport accumulates the report; results are sorted and names and dirs parallel them.
type mdReport struct {
	b       strings.Builder
	opts    Options
	results []*bench.Result
	names   []string
	dirs    []string
}

func (m *mdReport) printf(format string, args ...any) { fmt.Fprintf(&m.b, format, args...) }

func (m *mdReport) header(labels []string) {
	first, last := m.results[0].Start, m.results[0].Start
	for _, r := range m.results {
		if r.Start.Before(first) {
			first = r.Start
		}
		if r.Start.After(last) {
			last = r.Start
		}
	}
	m.printf("# %s\n\n", m.opts.Title)
	m.printf("%d results measured %s", len(m.results), day(first))
	if day(last) != day(first) {
		m.printf(" to %s", day(last))
	}
	m.printf(". Labels: %s. Baseline: `%s`.\n\n", codeList(labels), m.opts.Baseline)
	m.printf("Throughput is completed operations (failed ones included) per second of measured time, warm-up excluded; " +
		"a ratio above 1 means more throughput than the baseline.\n\n")
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// errors lists every result with failed operations before anything else, since their
// figures measure failures as well as work, with what the errors said.
func (m *mdReport) errors() {
	var lines []string
	failed := 0
	for i, r := range m.results {
		if r.Errors > 0 {
			failed++
			lines = append(lines, fmt.Sprintf("> - `%s` %s %s: %s of %s operations failed (%s)",
				m.names[i], r.Workload, r.Phase, groupDigits(r.Errors), groupDigits(r.Ops), percent(r.Errors, r.Ops)))
			for _, e := range r.ErrorSamples {
				msg := strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(e.Message) // one line of code span
				lines = append(lines, fmt.Sprintf(">   - %s: `%s`", groupDigits(e.Count), msg))
			}
		}
	}
	if failed == 0 {
		return
	}
	m.printf("> [!WARNING]\n> **%d of %d runs had failed operations.** Their throughput and latency include the failures.\n>\n", failed, len(m.results))
	m.printf("%s\n\n", strings.Join(lines, "\n"))
}

func (m *mdReport) machines() {
	type machine struct {
		host, goVersion, kura string
		cpus, procs           int
	}
	var order []machine
	count := make(map[machine]int)
	for _, r := range m.results {
		k := machine{r.Machine.Hostname, r.Machine.GoVersion, r.Machine.KuraVersion, r.Machine.NumCPU, r.Machine.GOMAXPROCS}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	m.printf("## Machines\n\n")
	m.printf("| host | CPUs | GOMAXPROCS | Go | kura | results |\n|---|--:|--:|---|---|--:|\n")
	for _, k := range order {
		m.printf("| %s | %d | %d | %s | %s | %d |\n", cell(k.host), k.cpus, k.procs, cell(k.goVersion), cell(k.kura), count[k])
	}
	m.printf("\n")
}

func (m *mdReport) runs() {
	m.printf("## Runs\n\n")
	m.printf("| label | workload | phase | target | mode | threads | started (UTC) | seconds | load avg 1m |\n")
	m.printf("|---|---|---|---|---|--:|---|--:|--:|\n")
	for i, r := range m.results {
		mode := r.Mode
		if r.TargetRateOps > 0 {
			mode = fmt.Sprintf("%s, %s ops/s", r.Mode, formatRate(r.TargetRateOps))
		}
		load := "unknown"
		if r.Machine.LoadAvg1 >= 0 {
			load = strconv.FormatFloat(r.Machine.LoadAvg1, 'f', 2, 64)
		}
		m.printf("| %s | %s | %s | %s | %s | %d | %s | %.1f | %s |\n", cell(m.names[i]), cell(r.Workload),
			cell(r.Phase), cell(r.Target), cell(mode), r.Threads, r.Start.UTC().Format("2006-01-02 15:04:05"),
			r.DurationSeconds, load)
	}
	m.printf("\n")
}

func (m *mdReport) compareImages() {
	if m.opts.ImageDir == "" {
		return
	}
	specs := compareCharts(m.results)
	over := overTimeWorkloads(m.results)
	if len(specs) == 0 && len(over) == 0 {
		return
	}
	m.printf("## Comparison\n\n")
	for _, s := range specs {
		m.printf("![%s](%s)\n\n", s.title, path.Join(m.opts.ImageDir, s.name+".png"))
	}
	for _, w := range over {
		m.printf("![%s](%s)\n\n", overTimeTitle(w), path.Join(m.opts.ImageDir, overTimeName(w)+".png"))
	}
}

// workload writes one workload's section: its settings, then a throughput and a
// latency table per phase.
func (m *mdReport) workload(wl string) {
	var idx []int
	for i, r := range m.results {
		if r.Workload == wl {
			idx = append(idx, i)
		}
	}
	m.printf("## Workload %s\n\n", wl)
	m.properties(idx)
	var phases []string
	for _, i := range idx {
		if p := m.results[i].Phase; rank(phases, p) == len(phases) {
			phases = append(phases, p)
		}
	}
	for _, p := range phases {
		var in []int
		for _, i := range idx {
			if m.results[i].Phase == p {
				in = append(in, i)
			}
		}
		m.printf("### %s: %s phase\n\n", wl, p)
		m.throughput(in)
		m.latency(in, func(r *bench.Result) []bench.OpStats { return r.Operations })
		if m.hasService(in) {
			m.printf("Open loop: latency above counts from each operation's scheduled start. Timed from its actual start instead (service time):\n\n")
			m.latency(in, func(r *bench.Result) []bench.OpStats { return r.ServiceOperations })
		}
		m.runImages(in)
	}
}

// properties writes the workload properties every run of the workload shares on one
// line, and those that differ as a table with a row per run.
func (m *mdReport) properties(idx []int) {
	keys := make(map[string]bool)
	for _, i := range idx {
		for k := range m.results[i].Properties {
			keys[k] = true
		}
	}
	var shared, differ []string
	for _, k := range sortedKeys(keys) {
		same := true
		first, firstOK := m.results[idx[0]].Properties[k]
		for _, i := range idx[1:] {
			v, ok := m.results[i].Properties[k]
			if v != first || ok != firstOK {
				same = false
				break
			}
		}
		if same {
			shared = append(shared, fmt.Sprintf("`%s=%s`", k, noTicks(first)))
		} else {
			differ = append(differ, k)
		}
	}
	if len(shared) > 0 {
		m.printf("Settings of every run: %s.\n\n", strings.Join(shared, ", "))
	}
	if len(differ) == 0 {
		return
	}
	m.printf("Settings that differ:\n\n| run | phase | %s |\n|---|---|%s\n", strings.Join(cells(differ), " | "),
		strings.Repeat("---|", len(differ)))
	for _, i := range idx {
		r := m.results[i]
		var vs []string
		for _, k := range differ {
			v, ok := r.Properties[k]
			if !ok {
				v = "(unset)"
			}
			vs = append(vs, cell(v))
		}
		m.printf("| %s | %s | %s |\n", cell(m.names[i]), cell(r.Phase), strings.Join(vs, " | "))
	}
	m.printf("\n")
}

func (m *mdReport) throughput(idx []int) {
	base := -1
	for _, i := range idx {
		if m.results[i].Label == m.opts.Baseline {
			base = i
			break
		}
	}
	m.printf("| run | operations | errors | seconds | ops/s | vs %s |\n|---|--:|--:|--:|--:|--:|\n", cell(m.opts.Baseline))
	for _, i := range idx {
		r := m.results[i]
		ratio := "–"
		if base >= 0 && m.results[base].ThroughputOps > 0 {
			ratio = fmt.Sprintf("%.2f×", r.ThroughputOps/m.results[base].ThroughputOps)
		}
		errs := groupDigits(r.Errors)
		if r.Errors > 0 {
			errs = "**" + errs + "**"
		}
		m.printf("| %s | %s | %s | %.1f | %s | %s |\n", cell(m.names[i]), groupDigits(r.Ops), errs,
			r.DurationSeconds, formatRate(r.ThroughputOps), ratio)
	}
	m.printf("\n")
	if base < 0 {
		m.printf("The baseline `%s` did not run this phase, so there are no ratios.\n\n", m.opts.Baseline)
	}
}

// latency writes one row per operation and run, operations in the order they first
// appear (the total last), runs in label order within each operation.
// hasService reports whether any of the runs has open-loop service times.
func (m *mdReport) hasService(idx []int) bool {
	for _, i := range idx {
		if len(m.results[i].ServiceOperations) > 0 {
			return true
		}
	}
	return false
}

// latency writes one row per operation and run of the stats stats picks from each run.
func (m *mdReport) latency(idx []int, stats func(*bench.Result) []bench.OpStats) {
	var ops []string
	for _, i := range idx {
		for _, s := range stats(m.results[i]) {
			if s.Op != bench.Total && rank(ops, s.Op) == len(ops) {
				ops = append(ops, s.Op)
			}
		}
	}
	ops = append(ops, bench.Total)
	m.printf("| op | run | count | avg ms | p50 ms | p95 ms | p99 ms | p99.9 ms | max ms | errors | not found |\n")
	m.printf("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, op := range ops {
		for _, i := range idx {
			s, ok := findOp(stats(m.results[i]), op)
			if !ok {
				continue
			}
			m.printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(op), cell(m.names[i]),
				groupDigits(s.Count), ms(s.AvgUs), ms(s.P50Us), ms(s.P95Us), ms(s.P99Us), ms(s.P999Us), ms(s.MaxUs),
				groupDigits(s.Errors), groupDigits(s.NotFound))
		}
	}
	m.printf("\n")
}

func findOp(stats []bench.OpStats, op string) (bench.OpStats, bool) {
	for _, s := range stats {
		if s.Op == op {
			return s, true
		}
	}
	return bench.OpStats{}, false
}

func (m *mdReport) runImages(idx []int) {
	if m.opts.ImageDir == "" {
		return
	}
	titles := map[string]string{ThroughputChart: "throughput", LatencyChart: "latency by percentile", P99Chart: "p99 over time"}
	var lines []string
	for _, i := range idx {
		var links []string
		for _, c := range runCharts(m.results[i]) {
			links = append(links, fmt.Sprintf("[%s](%s)", titles[c], path.Join(m.opts.ImageDir, m.dirs[i], c+".png")))
		}
		if len(links) > 0 {
			lines = append(lines, fmt.Sprintf("- `%s`: %s", m.names[i], strings.Join(links, " · ")))
		}
	}
	if len(lines) > 0 {
		m.printf("Charts:\n\n%s\n\n", strings.Join(lines, "\n"))
	}
}

// ms formats a latency in microseconds as milliseconds with three significant digits,
// down to the microsecond the histograms resolve.
func ms(us float64) string {
	v := us / 1000
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// formatRate formats operations per second: whole and grouped from 100 up, one decimal
// below.
func formatRate(v float64) string {
	if v >= 100 {
		return groupDigits(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// groupDigits writes n with a comma between thousands: 1,234,567.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func percent(part, whole int64) string {
	if whole == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'g', 3, 64) + "%"
}

// cell escapes s for a Markdown table cell.
func cell(s string) string {
	if s == "" {
		return "–"
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func cells(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = cell(s)
	}
	return out
}

// noTicks makes s safe inside a code span.
func noTicks(s string) string { return strings.ReplaceAll(s, "`", "'") }

func codeList(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "`" + noTicks(s) + "`"
	}
	return strings.Join(out, ", ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
