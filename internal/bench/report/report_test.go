package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"image/png"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/kuradb/kura/internal/bench"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.golden (as does KURA_REWRITE=1)")

func saveAll(t *testing.T, results []*bench.Result, dirs ...string) {
	t.Helper()
	for i, r := range results {
		if err := r.Save(dirs[i]); err != nil {
			t.Fatal(err)
		}
	}
}

func describe(results []*bench.Result) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.Workload+"/"+r.Phase+"/"+r.Label)
	}
	return out
}

func TestLoadFindsNestedResultsInReportOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	root := t.TempDir()
	mk := func(label, workload, phase string) *bench.Result {
		return makeResult(rng, synth{label: label, workload: workload, phase: phase, ops: []string{"READ"},
			rate: 100, medianUs: 100, seconds: 2})
	}
	results := []*bench.Result{
		mk("redis", "c", "run"), mk("kura", "read-heavy", "run"), mk("kura", "read-heavy", "load"),
		mk("kura", "custom", "run"), mk("redis", "write-only", "run"), mk("kura", "c", "run"),
		mk("kura", "a", "run"),
	}
	saveAll(t, results,
		filepath.Join(root, "redis", "deep", "c"), filepath.Join(root, "kura", "rh-run"),
		filepath.Join(root, "kura", "rh-load"), filepath.Join(root, "kura", "custom"),
		filepath.Join(root, "redis", "wo"), filepath.Join(root, "kura", "c"),
		filepath.Join(root, "single"))

	// root/kura/c is reached twice and root/single is named directly: each is read once.
	got, err := Load(filepath.Join(root, "redis"), filepath.Join(root, "kura"),
		filepath.Join(root, "kura", "c"), filepath.Join(root, "single", bench.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"write-only/run/redis", "read-heavy/load/kura", "read-heavy/run/kura",
		"a/run/kura", "c/run/kura", "c/run/redis", "custom/run/kura"}
	if g := describe(got); strings.Join(g, " ") != strings.Join(want, " ") {
		t.Fatalf("order:\n got %v\nwant %v", g, want)
	}
}

func TestLoadRejectsOtherResultVersion(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	dir := t.TempDir()
	r := makeResult(rng, synth{label: "x", workload: "a", phase: "run", ops: []string{"READ"}, rate: 10, medianUs: 10, seconds: 1})
	r.Version = bench.ResultVersion + 1
	saveAll(t, []*bench.Result{r}, filepath.Join(dir, "run"))
	_, err := Load(dir)
	if !errors.Is(err, bench.ErrResultVersion) {
		t.Fatalf("Load of version %d: got %v, want ErrResultVersion", r.Version, err)
	}
}

func TestLoadReportsPathsWithoutResults(t *testing.T) {
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(empty)
	if !errors.Is(err, ErrNoResults) || !strings.Contains(err.Error(), empty) {
		t.Errorf("empty directory: got %v, want ErrNoResults naming %s", err, empty)
	}
	if _, err := Load(); !errors.Is(err, ErrNoResults) {
		t.Errorf("no paths: got %v, want ErrNoResults", err)
	}
	if _, err := Load(filepath.Join(empty, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: got %v, want fs.ErrNotExist", err)
	}
	if _, err := Load(filepath.Join(empty, "notes.txt")); err == nil {
		t.Errorf("a file other than result.json: got no error")
	}
}

func TestEmptyInputIsAnError(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, nil, Options{}); !errors.Is(err, ErrNoResults) {
		t.Errorf("WriteMarkdown: got %v, want ErrNoResults", err)
	}
	if buf.Len() != 0 {
		t.Errorf("WriteMarkdown wrote %q for no results", buf.String())
	}
	if _, err := PlotCompare(nil, t.TempDir()); !errors.Is(err, ErrNoResults) {
		t.Errorf("PlotCompare: got %v, want ErrNoResults", err)
	}
	out := t.TempDir()
	if err := Render([]string{t.TempDir()}, out, Options{}); !errors.Is(err, ErrNoResults) {
		t.Errorf("Render: got %v, want ErrNoResults", err)
	}
	if _, err := os.Stat(filepath.Join(out, ReportFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Render wrote a report for no results")
	}
}

// checkImages checks that files are well-formed PNGs of the intended size and SVG
// documents, and that there is one of each per chart.
func checkImages(t *testing.T, files []string) {
	t.Helper()
	var pngs, svgs int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".png":
			pngs++
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			w, h := img.Bounds().Dx(), img.Bounds().Dy()
			if w < 600 || w > 800 || h < 300 || h > 450 {
				t.Errorf("%s is %dx%d pixels, want at most 800x450 and at least 600x300", f, w, h)
			}
			if len(b) > 150<<10 {
				t.Errorf("%s is %d bytes, too big to commit", f, len(b))
			}
		case ".svg":
			svgs++
			var doc struct{ XMLName xml.Name }
			if err := xml.Unmarshal(b, &doc); err != nil {
				t.Errorf("%s: %v", f, err)
			} else if doc.XMLName.Local != "svg" {
				t.Errorf("%s: root element <%s>, want <svg>", f, doc.XMLName.Local)
			}
		default:
			t.Errorf("unexpected file %s", f)
		}
	}
	if pngs == 0 || pngs != svgs {
		t.Errorf("%d PNG and %d SVG files, want one of each per chart", pngs, svgs)
	}
}

func baseNames(files []string) string {
	var out []string
	for _, f := range files {
		out = append(out, filepath.Base(f))
	}
	return strings.Join(out, " ")
}

func TestPlotRunWritesPNGAndSVG(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	r := makeResult(rng, synth{label: "kura-lsm", workload: "a", phase: "run", ops: []string{"READ", "UPDATE"},
		rate: 5000, medianUs: 300, seconds: 30})
	dir := filepath.Join(t.TempDir(), "new")
	files, err := PlotRun(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := baseNames(files), "throughput.png throughput.svg latency.png latency.svg p99.png p99.svg"; got != want {
		t.Fatalf("files %q, want %q", got, want)
	}
	checkImages(t, files)
}

func TestPlotRunLeavesOutChartsWithoutData(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	r := makeResult(rng, synth{label: "x", workload: "a", phase: "run", ops: []string{"READ"}, rate: 10, medianUs: 10, seconds: 1})
	r.Series = nil
	files, err := PlotRun(r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := baseNames(files); got != "latency.png latency.svg" {
		t.Fatalf("files %q, want only the latency chart", got)
	}
}

func TestPlotCompareDrawsBarsForRunPhases(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	dir := t.TempDir()
	files, err := PlotCompare(fixture(rng), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "compare-throughput.png compare-throughput.svg compare-read-p99.png compare-read-p99.svg " +
		"compare-update-p99.png compare-update-p99.svg " +
		"compare-over-time-write-only.png compare-over-time-write-only.svg " +
		"compare-over-time-read-heavy.png compare-over-time-read-heavy.svg"
	if got := baseNames(files); got != want {
		t.Fatalf("files %q, want %q", got, want)
	}
	checkImages(t, files)

	// Only write-only ran: nothing reads, so there is no read chart.
	wo := makeResult(rng, synth{label: "x", workload: "write-only", phase: "run", ops: []string{"UPDATE"}, rate: 10, medianUs: 10, seconds: 1})
	files, err = PlotCompare([]*bench.Result{wo}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := baseNames(files); strings.Contains(got, "read") {
		t.Errorf("write-only alone drew %q", got)
	}
}

// Averages over ten seconds, the last partial bucket over the seconds it has, at each
// bucket's end; every operation of a second counts, once (the total is not added again).
func TestOverTimeBucketsAverageEveryOperation(t *testing.T) {
	var series []bench.Interval
	for s := 1; s <= 25; s++ {
		series = append(series, bench.Interval{T: s, Op: "READ", Count: int64(s)}, bench.Interval{T: s, Op: "UPDATE", Count: 1},
			bench.Interval{T: s, Op: bench.Total, Count: int64(s) + 1})
	}
	got := bucketed(series)
	want := plotter.XYs{{X: 10, Y: 5.5 + 1}, {X: 20, Y: 15.5 + 1}, {X: 25, Y: 23 + 1}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bucket %d: %v, want %v", i, got[i], want[i])
		}
	}
	// One run of a workload draws no over-time comparison.
	one := makeResult(rand.New(rand.NewSource(1)), synth{label: "x", workload: "write-only", phase: "run", ops: []string{"UPDATE"}, rate: 10, medianUs: 10, seconds: 3})
	if w := overTimeWorkloads([]*bench.Result{one}); len(w) != 0 {
		t.Errorf("one run: over-time charts for %v", w)
	}
}

func TestBarsFollowLabelsAndLeaveOutMissingRuns(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	results := fixture(rng)
	d := compareData(results, compareSpecs[0])
	if got := strings.Join(d.groups, " "); got != "write-only read-heavy" {
		t.Errorf("groups %q", got)
	}
	if got := strings.Join(d.bars, " "); got != "kura-btree kura-lsm redis" {
		t.Errorf("bars %q", got)
	}
	for i, b := range d.bars {
		for _, r := range results {
			if r.Label == b && r.Phase == "run" && d.values[i][r.Workload] != r.ThroughputOps {
				t.Errorf("%s %s: bar %v, want %v", b, r.Workload, d.values[i][r.Workload], r.ThroughputOps)
			}
		}
	}
	d = compareData(results, compareSpecs[1]) // READ p99: write-only has no reads
	if got := strings.Join(d.groups, " "); got != "read-heavy" {
		t.Errorf("READ p99 groups %q, want only read-heavy", got)
	}
}

func TestWriteMarkdownMatchesGolden(t *testing.T) {
	const seed = 1 // fixed: the golden file depends on it
	t.Logf("seed %d", seed)
	results := fixture(rand.New(rand.NewSource(seed)))
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, results, Options{ImageDir: "img"}); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden")
	if *rewrite || os.Getenv("KURA_REWRITE") != "" {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != string(want) {
		t.Fatalf("report differs from %s; run KURA_REWRITE=1 go test ./internal/bench/report and read the diff\n%s",
			golden, firstDiff(got, string(want)))
	}

	// The input's order does not matter.
	rand.New(rand.NewSource(seed)).Shuffle(len(results), func(i, j int) { results[i], results[j] = results[j], results[i] })
	var again bytes.Buffer
	if err := WriteMarkdown(&again, results, Options{ImageDir: "img"}); err != nil {
		t.Fatal(err)
	}
	if again.String() != buf.String() {
		t.Errorf("shuffled input changed the report\n%s", firstDiff(again.String(), buf.String()))
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + "\n got: " + a + "\nwant: " + b
		}
	}
	return ""
}

func itoa(i int) string { return groupDigits(int64(i)) }

// row returns the cells of the table row in md whose first cell is first, under the
// heading that contains section.
func row(t *testing.T, md, section, first string) []string {
	t.Helper()
	i := strings.Index(md, section)
	if i < 0 {
		t.Fatalf("no %q in report", section)
	}
	for _, line := range strings.Split(md[i:], "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if strings.TrimSpace(cells[0]) == first {
			for j := range cells {
				cells[j] = strings.TrimSpace(cells[j])
			}
			return cells
		}
	}
	t.Fatalf("no row %q after %q", first, section)
	return nil
}

func TestBaselineRatioDividesByBaselineThroughput(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	mk := func(label string, rate float64) *bench.Result {
		r := makeResult(rng, synth{label: label, workload: "b", phase: "run", ops: []string{"READ"}, rate: 10, medianUs: 100, seconds: 10})
		r.ThroughputOps = rate
		return r
	}
	results := []*bench.Result{mk("slow", 1000), mk("fast", 2500)}
	cases := []struct {
		baseline        string
		header          string
		fast, slow      string
		baselineOmitted bool
	}{
		{"", "vs fast", "1.00×", "0.40×", true}, // default: first label alphabetically
		{"slow", "vs slow", "2.50×", "1.00×", false},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		if err := WriteMarkdown(&buf, results, Options{Baseline: c.baseline}); err != nil {
			t.Fatal(err)
		}
		md := buf.String()
		if head := row(t, md, "### b: run phase", "run"); head[len(head)-1] != c.header {
			t.Errorf("baseline %q: header %q, want %q", c.baseline, head[len(head)-1], c.header)
		}
		for label, want := range map[string]string{"fast": c.fast, "slow": c.slow} {
			cells := row(t, md, "### b: run phase", label)
			if got := cells[len(cells)-1]; got != want {
				t.Errorf("baseline %q: %s ratio %q, want %q", c.baseline, label, got, want)
			}
		}
	}
	if err := WriteMarkdown(&bytes.Buffer{}, results, Options{Baseline: "nope"}); err == nil ||
		!strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown baseline: got %v", err)
	}
}

func TestRunsWithErrorsAreFlaggedBeforeTheTables(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, fixture(rng), Options{}); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	warn := strings.Index(md, "1 of 9 runs had failed operations")
	if warn < 0 || warn > strings.Index(md, "## Machines") {
		t.Fatalf("no error warning before the tables:\n%s", md)
	}
	if !strings.Contains(md, "`kura-lsm` read-heavy load: 17 of") {
		t.Errorf("warning does not name the run:\n%s", md[:strings.Index(md, "## Machines")])
	}
	if !strings.Contains(md, "\n>   - 15: `ERR timeout`\n>   - 2: `EOF`\n") {
		t.Errorf("warning does not say what the errors were:\n%s", md[:strings.Index(md, "## Machines")])
	}
}

func TestRenderLinksEveryChartItWrites(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	in, out := t.TempDir(), t.TempDir()
	// One label with a name to sanitize, one workload: drawing is slow under -race.
	results := []*bench.Result{
		makeResult(rng, synth{label: "kura/lsm 1", workload: "read-heavy", phase: "load", ops: []string{"INSERT"},
			rate: 100, medianUs: 100, seconds: 5}),
		makeResult(rng, synth{label: "kura/lsm 1", workload: "read-heavy", phase: "run", ops: []string{"READ", "UPDATE"},
			rate: 100, medianUs: 100, seconds: 5}),
	}
	var dirs []string
	for i := range results {
		dirs = append(dirs, filepath.Join(in, "run"+itoa(i)))
	}
	saveAll(t, results, dirs...)
	if err := Render([]string{in}, out, Options{ImageDir: "img"}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\]\(([^)]+\.png)\)`).FindAllStringSubmatch(string(md), -1)
	if len(links) != 3+2*3 {
		t.Errorf("%d image links, want 9 (3 comparison charts, 3 per run):\n%s", len(links), md)
	}
	for _, l := range links {
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(l[1]))); err != nil {
			t.Errorf("link %s: %v", l[1], err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "img", "kura_lsm_1-read-heavy-run", "p99.svg")); err != nil {
		t.Errorf("sanitized run directory: %v", err)
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"kura-lsm-a-run":   "kura-lsm-a-run",
		"kura/lsm a:b-run": "kura_lsm_a_b-run",
		"../..":            ".._..", // no separator is left, so no way out of the directory
		"..":               "run",
		"  ":               "run",
		"wl/../../etc-run": "wl_.._.._etc-run",
		"ünïcode-x":        "n_code-x",
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatting(t *testing.T) {
	for us, want := range map[float64]string{0: "0", 1: "0.001", 412: "0.412", 1234: "1.23", 12345: "12.3", 123456: "123", 1234567: "1235"} {
		if got := ms(us); got != want {
			t.Errorf("ms(%v) = %q, want %q", us, got, want)
		}
	}
	for x, want := range map[float64]string{1: "0%", 2: "50%", 10: "90%", 100: "99%", 1000: "99.9%", 1e4: "99.99%", 1e5: "99.999%"} {
		if got := percentLabel(x); got != want {
			t.Errorf("percentLabel(%v) = %q, want %q", x, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMarkdownShowsOpenLoopServiceTimes(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	results := fixture(rng)
	r := results[0]
	r.Mode = "open"
	r.ServiceOperations = []bench.OpStats{{Op: "READ", Count: 7, AvgUs: 123}, {Op: bench.Total, Count: 7, AvgUs: 123}}
	var b strings.Builder
	if err := WriteMarkdown(&b, results, Options{}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if !strings.Contains(md, "service time") || !strings.Contains(md, "| READ | "+r.Label+" | 7 | 0.123 |") {
		t.Errorf("open-loop service times missing from the report:\n%s", md)
	}
}
