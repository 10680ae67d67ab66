// Package report turns saved benchmark results into plots and a Markdown report that
// compares runs.
//
// Its input is what `kura bench` saves: one result.json per measured phase (see
// bench.Result). Load finds them, PlotRun draws one run's throughput over time, its
// latency distribution and its p99 over time, PlotCompare draws grouped bar charts that
// put labels side by side per workload, and WriteMarkdown writes the tables a person
// reads. Render does all of it for `kura bench report DIR... --out OUT`.
//
// # Order
//
// Every output is deterministic for the same input, so reports can be golden-tested and
// diffed. Results are sorted by workload (the papers' write-only, write-heavy,
// read-heavy, read-only, then YCSB's a to f, then other names alphabetically), then by
// phase (load before run), then by label alphabetically, then by start time. Labels are
// sorted rather than kept in the order they were found because a first-seen order does
// not survive sorting by workload (a label missing from the first workload would move),
// and every function here must agree on one order whatever slice it is given. The
// default baseline is therefore the alphabetically first label; pass Options.Baseline
// to choose another.
//
// # Images
//
// Every chart is written twice, as PNG (800x450 pixels, small enough to commit under
// docs/) and as SVG. Legends sit to the right of the data area so they never hide a
// line or a bar. Latency distributions use the HdrHistogram convention: the x axis is
// 1/(1-q) on a log scale, labelled 50%, 90%, 99%, 99.9%, ..., so the tail gets as much
// room as the median.
package report
