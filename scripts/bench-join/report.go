package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// calibration is what the script measured on a token setting's data before its runs.
type calibration struct {
	Tokens      int
	Unthrottled *Row       // one node added with no limit anywhere
	Reads       *ReadStats // 20 s of the read load with no change
}

func reportCmd(args []string) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	out := fs.String("out", "", "directory for tables.md and the plots")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *out == "" {
		return fmt.Errorf("usage: bench-join report -out DIR RESULTS")
	}
	res := fs.Arg(0)
	var rows, diag, unthrottled []Row
	files, _ := filepath.Glob(filepath.Join(res, "runs", "*", "row.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r Row
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if r.Variant == "unthrottled" {
			unthrottled = append(unthrottled, r)
			continue
		}
		if r.Variant != "" {
			diag = append(diag, r)
			continue
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Tokens, b.Tokens), cmp.Compare(a.Load, b.Load), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Count, b.Count))
	})
	cals := map[int]*calibration{}
	for i := range unthrottled {
		r := &unthrottled[i]
		c := &calibration{Tokens: r.Tokens, Unthrottled: r}
		reads := filepath.Join(res, fmt.Sprintf("cal-t%d", r.Tokens), "reads", "result.json")
		if _, err := os.Stat(reads); err == nil {
			if c.Reads, err = readStats(reads); err != nil {
				return err
			}
		}
		cals[r.Tokens] = c
	}
	failed, _ := filepath.Glob(filepath.Join(res, "runs", "*", "failed"))
	var b strings.Builder
	writeTables(&b, rows, cals, failed)
	if err := writeResumes(&b, res); err != nil {
		return err
	}
	writeDiagnosis(&b, diag)
	if err := os.WriteFile(filepath.Join(*out, "tables.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return writePlots(*out, rows)
}

func mb(b int64) string { return fmt.Sprintf("%.1f", float64(b)/1e6) }

// bound is a run's bound: the sum of its steps' (one after another, the changes are
// serial).
func (r *Row) bound() float64 {
	s := 0.0
	for _, st := range r.Steps {
		s += st.BoundSeconds
	}
	return s
}

// streaming is the time from each step's change start to its finish, summed.
func (r *Row) streaming() float64 {
	s := 0.0
	for _, st := range r.Steps {
		s += st.Finished - st.Planned
	}
	return s
}

// strictPlan is the time the strict plan's largest load takes at the limit, summed over
// steps: what the plan can achieve when every copy comes from the replica it displaces
// (the bound lets any replica send).
func (r *Row) strictPlan() float64 {
	s := 0.0
	for _, st := range r.Steps {
		s += float64(st.PlanLoadBytes) / float64(r.Limit)
	}
	return s
}

func (r *Row) registered() float64 {
	m := 0.0
	for _, st := range r.Steps {
		for _, x := range st.Registered {
			m = max(m, x)
		}
	}
	return m
}

// overhead is the part of the time before the changes started: process start, gossip,
// registration through the metadata log and the batching window, summed over steps.
func (r *Row) overhead() float64 {
	s := 0.0
	for _, st := range r.Steps {
		s += st.Planned
	}
	return s
}

func find(rows []Row, tokens int, mode, load string, count int) *Row {
	for i := range rows {
		r := &rows[i]
		if r.Tokens == tokens && r.Mode == mode && r.Load == load && r.Count == count {
			return r
		}
	}
	return nil
}

func settings(rows []Row) (tokens []int, loads []string, maxCount int) {
	for _, r := range rows {
		if !slices.Contains(tokens, r.Tokens) {
			tokens = append(tokens, r.Tokens)
		}
		if !slices.Contains(loads, r.Load) {
			loads = append(loads, r.Load)
		}
		maxCount = max(maxCount, r.Count)
	}
	slices.Sort(tokens)
	slices.Sort(loads)
	return
}

// timeAt is the time to add k nodes in mode, with its bound: at once, its own run; one
// after another, the k-th cumulative time of the longest one-after-another run. Adding
// one at once is the first change of one after another when it has no run of its own.
func timeAt(rows []Row, tokens int, mode, load string, k, maxCount int) (t, bound float64, ok bool) {
	if r := find(rows, tokens, "at-once", load, k); r != nil && (mode == "at-once" || k == 1) {
		return r.Time, r.bound(), true
	}
	if mode == "at-once" && k > 1 {
		return 0, 0, false
	}
	r := find(rows, tokens, "one-by-one", load, maxCount)
	if r == nil || k > len(r.Cumulative) {
		return 0, 0, false
	}
	for _, st := range r.Steps[:k] {
		bound += st.BoundSeconds
	}
	return r.Cumulative[k-1], bound, true
}

// single is adding one node: its time, streaming time and bound.
func single(rows []Row, tokens int, load string, maxCount int) (t, streaming, bound float64, ok bool) {
	if r := find(rows, tokens, "at-once", load, 1); r != nil {
		return r.Time, r.streaming(), r.bound(), true
	}
	r := find(rows, tokens, "one-by-one", load, maxCount)
	if r == nil {
		return 0, 0, 0, false
	}
	st := r.Steps[0]
	return st.Finished, st.Finished - st.Planned, st.BoundSeconds, true
}

func writeTables(b *strings.Builder, rows []Row, cals map[int]*calibration, failed []string) {
	tokens, loads, maxCount := settings(rows)
	fmt.Fprintf(b, "### Calibration: one replica in stream bytes, and one node added with no limit\n\n")
	fmt.Fprintf(b, "| tokens per node | rows | one replica (stream bytes of its rows) | bytes per row | unthrottled join: received | streaming | = MB/s received | moved / minimum | reads at ONE with no change: p50 / p99 / max ms |\n|--:|--:|--:|--:|--:|--:|--:|--:|--|\n")
	for _, t := range tokens {
		c := cals[t]
		if c == nil {
			continue
		}
		u := c.Unthrottled
		reads := "-"
		if c.Reads != nil {
			reads = fmt.Sprintf("%.2f / %.1f / %.1f", c.Reads.P50, c.Reads.P99, c.Reads.Max)
		}
		var recv int64
		for _, st := range u.Steps {
			for _, x := range st.ReceivedBytes {
				recv += x
			}
		}
		fmt.Fprintf(b, "| %d | %d | %s MB | %.1f | %s MB | %.1f s | %.1f | %.4f | %s |\n", t, u.Rows, mb(u.ReplicaBytes),
			float64(u.ReplicaBytes)/float64(max(u.Rows, 1)), mb(recv), u.streaming(), float64(recv)/1e6/u.streaming(),
			float64(u.SentBytes)/float64(u.Minimum), reads)
	}
	fmt.Fprintf(b, "\n### Time to add k nodes (figures 1 and 2), seconds; the bound in brackets\n\n")
	fmt.Fprintf(b, "| tokens | read load | how |")
	for k := 1; k <= maxCount; k++ {
		fmt.Fprintf(b, " k=%d |", k)
	}
	fmt.Fprintf(b, "\n|--:|--|--|%s\n", strings.Repeat("--:|", maxCount))
	for _, t := range tokens {
		for _, l := range loads {
			for _, mode := range []string{"at-once", "one-by-one"} {
				fmt.Fprintf(b, "| %d | %s | %s |", t, l, modeName(mode))
				for k := 1; k <= maxCount; k++ {
					if x, bd, ok := timeAt(rows, t, mode, l, k, maxCount); ok {
						fmt.Fprintf(b, " %.1f (%.0f) |", x, bd)
					} else {
						fmt.Fprintf(b, " - |")
					}
				}
				fmt.Fprintln(b)
			}
		}
	}

	fmt.Fprintf(b, "\n### Every run\n\n")
	fmt.Fprintf(b, "Changes: how many changes the leader started (one per step when the batching window took every joiner of the step). Times in seconds from the first joiner's start: registered (last joiner's Register committed), before streaming (the changes' starts: registration and the batching window), streaming (change start to finish), total; the bound at the stream limit (any old replica of a range may send its copy); strict plan: the plan's largest per-node load at the limit, every copy sent by the replica it displaces, as kura plans it for safety; bytes in MB (10^6) of encoded stream pages.\n\n")
	fmt.Fprintf(b, "| tokens | load | how | k | changes | registered | before streaming | streaming | total | bound | total / bound | streaming / bound | strict plan / bound | moved (sent) | minimum | moved / minimum | at-once minimum | received per new node | largest node memory peak | load average (1, 5, 15 min) |\n")
	fmt.Fprintf(b, "|--:|--|--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--|--:|--|\n")
	for _, r := range rows {
		var recv []string
		for _, st := range r.Steps {
			for _, x := range st.ReceivedBytes {
				recv = append(recv, mb(x))
			}
		}
		peak := "-"
		if len(r.MemPeak) > 0 {
			var m int64
			for _, v := range r.MemPeak {
				m = max(m, v)
			}
			peak = fmt.Sprintf("%d MiB", m>>20)
		}
		changes := 0
		for _, st := range r.Steps {
			changes += st.Changes
		}
		fmt.Fprintf(b, "| %d | %s | %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %s | %s | %.4f | %s | %s | %s | %s |\n",
			r.Tokens, r.Load, modeName(r.Mode), r.Count, changes, r.registered(), r.overhead(), r.streaming(), r.Time, r.bound(),
			r.Time/r.bound(), r.streaming()/r.bound(), r.strictPlan()/r.bound(), mb(r.SentBytes), mb(r.Minimum), float64(r.SentBytes)/float64(r.Minimum),
			mb(r.AtOnceMinimum), strings.Join(recv, ", "), peak, loadavg(r.Uptime))
	}

	fmt.Fprintf(b, "\n### Must show\n\n")
	fmt.Fprintf(b, "| tokens | load | moved / minimum, worst run | k=%d at once: time / bound | streaming / bound | k=%d at once / k=1: time | streaming |\n|--:|--|--:|--:|--:|--:|--:|\n", maxCount, maxCount)
	for _, t := range tokens {
		for _, l := range loads {
			worst := 0.0
			for _, r := range rows {
				if r.Tokens == t && r.Load == l {
					worst = max(worst, float64(r.SentBytes)/float64(r.Minimum))
				}
			}
			five := find(rows, t, "at-once", l, maxCount)
			oneTime, oneStreaming, _, ok := single(rows, t, l, maxCount)
			if five == nil || !ok {
				continue
			}
			fmt.Fprintf(b, "| %d | %s | %.4f | %.2f | %.2f | %.2f | %.2f |\n", t, l, worst, five.Time/five.bound(), five.streaming()/five.bound(),
				five.Time/oneTime, five.streaming()/oneStreaming)
		}
	}

	fmt.Fprintf(b, "\n### Each new node when %d are added (figures 3 and 4)\n\n", maxCount)
	fmt.Fprintf(b, "Received: MB of stream pages each new node received (the planner's share in brackets). Done: seconds from the first joiner's start until the node's last transfer was recorded done (one after another: until its own change finished).\n\n")
	fmt.Fprintf(b, "| tokens | load | how |")
	for k := 1; k <= maxCount; k++ {
		fmt.Fprintf(b, " node %d |", k)
	}
	fmt.Fprintf(b, " total |\n|--:|--|--|%s--:|\n", strings.Repeat("--|", maxCount))
	for _, t := range tokens {
		for _, l := range loads {
			for _, mode := range []string{"at-once", "one-by-one"} {
				r := find(rows, t, mode, l, maxCount)
				if r == nil {
					continue
				}
				fmt.Fprintf(b, "| %d | %s | %s |", t, l, modeName(mode))
				var total int64
				for _, n := range perNode(r) {
					fmt.Fprintf(b, " %s (%s) MB, done %.1f s |", mb(n.recv), mb(n.plan), n.done)
					total += n.recv
				}
				fmt.Fprintf(b, " %s MB |\n", mb(total))
			}
		}
	}

	if slices.Contains(loads, "read") {
		fmt.Fprintf(b, "\n### Reads at ONE during the changes (50 ops/s, uniform over the records, from 5 s before the first joiner to the last change's end)\n\n")
		fmt.Fprintf(b, "| tokens | how | k | reads | errors | not found | p50 ms | p95 ms | p99 ms | p99.9 ms | max ms |\n|--:|--|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range rows {
			if r.Reads == nil {
				continue
			}
			x := r.Reads
			fmt.Fprintf(b, "| %d | %s | %d | %d | %d | %d | %.2f | %.1f | %.1f | %.1f | %.1f |\n", r.Tokens, modeName(r.Mode), r.Count, x.Count, x.Errors, x.NotFound, x.P50, x.P95, x.P99, x.P999, x.Max)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(b, "\nRuns that failed twice (left out): %s\n", strings.Join(failed, ", "))
	}
}

// writeResumes adds the resumed joins (the script's resume-tT.env files), if any.
func writeResumes(b *strings.Builder, res string) error {
	files, _ := filepath.Glob(filepath.Join(res, "resume-t*.env"))
	if len(files) == 0 {
		return nil
	}
	fmt.Fprintf(b, "\n### A resumed join: the joiner SIGKILLed half-way and started again\n\n")
	fmt.Fprintf(b, "One node joins under the stream limit; once its progress files record half of what it will receive it is SIGKILLed, and started again on the same directory. Sent again: what the sources had sent before the kill less what the joiner had recorded as applied (the pages in flight, at most one per running transfer).\n\n")
	fmt.Fprintf(b, "| tokens | killed after | transfers done at the kill | sent before the kill | recorded | sent again | sent again / sent before | sent after the restart | load average |\n|--:|--:|--:|--:|--:|--:|--:|--:|--|\n")
	for _, f := range files {
		env, err := readEnv(f)
		if err != nil {
			return err
		}
		n := func(k string) int64 { v, _ := strconv.ParseInt(env[k], 10, 64); return v }
		fmt.Fprintf(b, "| %s | %s s | %s | %s MB | %s MB | %s MB | %s%% | %s MB | %s |\n", env["tokens"], env["killed_after_s"],
			env["transfers_done_at_kill"], mb(n("sent_before_kill")), mb(n("recorded_at_kill")), mb(n("resent")),
			env["resent_percent"], mb(n("sent_after_restart")), loadavg(env["uptime"]))
	}
	return nil
}

func loadavg(uptime string) string {
	_, after, ok := strings.Cut(uptime, "load average: ")
	if !ok {
		return "-"
	}
	return after
}

func modeName(mode string) string {
	if mode == "at-once" {
		return "at once"
	}
	return "one after another"
}

type nodeFigures struct {
	recv, plan int64
	done       float64
}

// perNode returns each new node's bytes and completion time, in the order they joined.
func perNode(r *Row) []nodeFigures {
	var out []nodeFigures
	t0 := r.Steps[0].StartNS
	for _, st := range r.Steps {
		off := float64(st.StartNS-t0) / 1e9
		for i := range st.Joiners {
			n := nodeFigures{recv: st.ReceivedBytes[i], plan: st.PlanReceive[i]}
			if r.Mode == "at-once" {
				n.done = st.JoinerDone[i] + off
			} else {
				n.done = st.Finished + off
			}
			out = append(out, n)
		}
	}
	return out
}

// series names, colours and dashes of the plots: one per token setting and read load.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

func seriesName(tokens int, load string) string {
	name := fmt.Sprintf("%d token", tokens)
	if tokens != 1 {
		name += "s"
	}
	if load == "read" {
		return name + ", reads"
	}
	return name
}

func writePlots(out string, rows []Row) error {
	tokens, loads, maxCount := settings(rows)
	for _, mode := range []string{"at-once", "one-by-one"} {
		p := plot.New()
		p.Title.Text = "Time to add k nodes " + map[string]string{"at-once": "at once", "one-by-one": "one after another"}[mode]
		p.X.Label.Text = "nodes added"
		p.Y.Label.Text = "seconds"
		p.Add(plotter.NewGrid())
		var split plotter.XYs // at-once runs whose joiners the leader planned as more than one change
		p.Legend.Top, p.Legend.Left = false, false
		p.Legend.XOffs, p.Legend.YOffs = -vg.Points(6), vg.Points(6)
		i := 0
		for _, t := range tokens {
			var bounds plotter.XYs
			for _, l := range loads {
				var xys plotter.XYs
				bounds = nil
				for k := 1; k <= maxCount; k++ {
					if x, bd, ok := timeAt(rows, t, mode, l, k, maxCount); ok {
						xys = append(xys, plotter.XY{X: float64(k), Y: x})
						bounds = append(bounds, plotter.XY{X: float64(k), Y: bd})
						if r := find(rows, t, "at-once", l, k); mode == "at-once" && r != nil && r.Steps[0].Changes > 1 {
							split = append(split, plotter.XY{X: float64(k), Y: x})
						}
					}
				}
				if len(xys) == 0 {
					continue
				}
				if err := addLine(p, seriesName(t, l), xys, palette[i%len(palette)], false); err != nil {
					return err
				}
				i++
			}
			if len(bounds) > 0 {
				if err := addLine(p, seriesName(t, "none")+": bound", bounds, palette[(i-1)%len(palette)], true); err != nil {
					return err
				}
			}
		}
		if len(split) > 0 {
			sc, err := plotter.NewScatter(split)
			if err != nil {
				return err
			}
			sc.Shape = draw.RingGlyph{}
			sc.Radius = vg.Points(7)
			p.Add(sc)
			p.Legend.Add("planned as 2 changes", sc)
		}
		p.Y.Min = 0
		if err := save(p, filepath.Join(out, "join-time-"+mode)); err != nil {
			return err
		}
	}
	// Figures 3 and 4: each new node when maxCount are added, without the read load if
	// that ran.
	load := loads[0]
	type group struct {
		name string
		vals []nodeFigures
	}
	var groups []group
	for _, mode := range []string{"at-once", "one-by-one"} {
		for _, t := range tokens {
			if r := find(rows, t, mode, load, maxCount); r != nil {
				groups = append(groups, group{name: fmt.Sprintf("%s, %s", seriesName(t, "none"), modeName(mode)), vals: perNode(r)})
			}
		}
	}
	for _, fig := range []struct{ file, title, unit string }{
		{"join-received", fmt.Sprintf("Data each new node received, %d added", maxCount), "MB"},
		{"join-node-time", fmt.Sprintf("Time until each new node is done, %d added", maxCount), "seconds"},
	} {
		p := plot.New()
		p.Title.Text = fig.title
		p.X.Label.Text = "new node"
		p.Y.Label.Text = fig.unit
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		w := vg.Points(16)
		top := 0.0
		for gi, g := range groups {
			var vs plotter.Values
			for _, n := range g.vals {
				if fig.file == "join-received" {
					vs = append(vs, float64(n.recv)/1e6)
				} else {
					vs = append(vs, n.done)
				}
			}
			for _, v := range vs {
				top = max(top, v)
			}
			bars, err := plotter.NewBarChart(vs, w)
			if err != nil {
				return err
			}
			bars.Color = palette[gi%len(palette)]
			bars.LineStyle.Width = 0
			bars.Offset = vg.Length(float64(gi)-float64(len(groups)-1)/2) * w
			bars.XMin = 1
			p.Add(bars)
			p.Legend.Add(g.name, bars)
		}
		p.Y.Min, p.Y.Max = 0, top*1.35 // room for the legend above the bars
		if err := save(p, filepath.Join(out, fig.file)); err != nil {
			return err
		}
	}
	return nil
}

func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed bool) error {
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, s.Color = c, c
	l.Width = vg.Points(1.5)
	s.Shape = draw.CircleGlyph{}
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		l.Width = vg.Points(1)
		s.Shape = draw.CrossGlyph{}
	}
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

func save(p *plot.Plot, base string) error {
	for _, ext := range []string{".svg", ".png"} {
		if err := p.Save(18*vg.Centimeter, 11*vg.Centimeter, base+ext); err != nil {
			return err
		}
	}
	return nil
}

// writeDiagnosis compares the runs with the limit on one side only with the bound of that
// side: the least largest send (old nodes limited) or the largest receive (new nodes).
func writeDiagnosis(b *strings.Builder, diag []Row) {
	if len(diag) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### Diagnosis: the limit on one side only\n\n")
	fmt.Fprintf(b, "| tokens | k | limited | streaming | that side's bound | streaming / bound | total | moved / minimum |\n|--:|--:|--|--:|--:|--:|--:|--:|\n")
	slices.SortFunc(diag, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Tokens, b.Tokens), cmp.Compare(a.Count, b.Count), cmp.Compare(a.Variant, b.Variant))
	})
	for _, r := range diag {
		st := r.Steps[0]
		side, bytes := "old nodes (send)", st.BoundSend
		if r.Variant == "receive-only" {
			side, bytes = "new nodes (receive)", st.BoundRecv
		}
		bound := float64(bytes) / float64(r.Limit)
		fmt.Fprintf(b, "| %d | %d | %s | %.1f | %.1f | %.2f | %.1f | %.4f |\n", r.Tokens, r.Count, side, r.streaming(), bound, r.streaming()/bound,
			r.Time, float64(r.SentBytes)/float64(r.Minimum))
	}
}
