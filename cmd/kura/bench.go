package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kuradb/kura/internal/bench"
	"github.com/kuradb/kura/internal/bench/cql"
	"github.com/kuradb/kura/internal/bench/redis"
	"github.com/kuradb/kura/internal/bench/report"
)

// benchFlags are the settings of `kura bench load` and `kura bench run`.
type benchFlags struct {
	target      string
	consistency string
	workload    string
	props       []string
	records     int64
	threads     int
	rate        float64
	operations  int64
	duration    time.Duration
	warmup      time.Duration
	label       string
	out         string
	seed        int64
	progress    string
	plots       bool
	cpuProfile  string
}

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run YCSB-compatible workloads against kura, Redis-protocol servers or Cassandra",
		Long: `kura bench runs YCSB's core workloads with YCSB's property names and generators.

A benchmark has phases: "load" inserts the records, "run" executes the workload's mix
(after an unmeasured warm-up, if asked). Each phase prints a latency table and saves
result.json, summary.csv, series.csv and plots into its output directory; "report"
compares saved runs in Markdown with charts.

Named workloads: the papers' write-only (0/100 read/update), write-heavy (50/50),
read-heavy (95/5), read-only (100/0); YCSB's a to f (e's scans are SCANs in token order
from the start key's token, as YCSB's Cassandra binding reads them: kura has them,
redis-server does not, and e fails against it); ping (round trips only).

Targets: resp://host:port[,host:port...] (kura or any Redis-protocol server; threads
are spread over the addresses; records are hashes, or with ?record=string one string
value each, written blind with SET: use it with writeallfields=true), cql://host:port[,...]/keyspace?consistency=ONE
(Apache Cassandra), noop (in-process, measures the client itself).`,
		Example: `  kura bench load --workload read-heavy --records 100000 --threads 16
  kura bench run --workload read-heavy --records 100000 --threads 16 --duration 30s --warmup 5s
  kura bench run --workload a --rate 5000 --duration 60s        # open loop at 5,000 ops/s
  kura bench report bench-results --out report`,
	}
	cmd.AddCommand(newBenchPhaseCmd(bench.PhaseLoad), newBenchPhaseCmd(bench.PhaseRun), newBenchReportCmd(), newBenchOracleCmd(), newBenchConnectCmd())
	return cmd
}

func newBenchPhaseCmd(phase string) *cobra.Command {
	f := &benchFlags{}
	short := map[string]string{bench.PhaseLoad: "Insert the workload's records",
		bench.PhaseRun: "Run the workload's operation mix and measure it"}[phase]
	cmd := &cobra.Command{
		Use:   phase,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchPhase(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), phase, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "resp://127.0.0.1:6380", "what to benchmark: resp://host:port[,...], cql://host:port[,...]/keyspace, or noop")
	fl.StringVar(&f.consistency, "consistency", "", "consistency level for kura (ONE, TWO, QUORUM, ALL) or Cassandra; empty: the server's default")
	fl.StringVarP(&f.workload, "workload", "w", "a", "named workload ("+strings.Join(bench.WorkloadNames, ", ")+") or a YCSB property file")
	fl.StringArrayVarP(&f.props, "prop", "p", nil, "YCSB property override key=value (repeatable), e.g. -p zipfianconstant=0.9")
	fl.Int64Var(&f.records, "records", 0, "shorthand for -p recordcount=N")
	fl.IntVarP(&f.threads, "threads", "t", 16, "client threads, each with its own connection")
	fl.Float64Var(&f.rate, "rate", 0, "open loop: total operations per second, latency measured from each operation's scheduled start; 0 runs a closed loop")
	fl.Int64Var(&f.operations, "operations", 0, "measured operations (default: operationcount for run, insertcount for load; unlimited with --duration)")
	fl.DurationVar(&f.duration, "duration", 0, "measured time limit, e.g. 60s")
	if phase == bench.PhaseRun {
		fl.DurationVar(&f.warmup, "warmup", 0, "unmeasured warm-up before measuring, e.g. 10s")
	}
	fl.StringVar(&f.label, "label", "", "name of this run in results and reports (default: the target)")
	fl.StringVar(&f.out, "out", "", "directory for result.json, CSVs and plots (default bench-results/LABEL-WORKLOAD-PHASE)")
	fl.Int64Var(&f.seed, "seed", 0, "random seed; 0 picks one from the clock (recorded in the result)")
	fl.StringVar(&f.progress, "progress", "auto", "progress output: auto (a live line on a terminal, periodic lines otherwise), live, lines, none")
	fl.BoolVar(&f.plots, "plots", true, "write PNG and SVG plots next to the results")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a Go CPU profile of the client (warm-up included) to this file, to tell whether the client is the bottleneck")
	return cmd
}

func runBenchPhase(ctx context.Context, stdout, stderr io.Writer, phase string, f *benchFlags) error {
	w, err := loadWorkload(f)
	if err != nil {
		return err
	}
	target, closeTarget, err := openTarget(f.target, f.consistency)
	if err != nil {
		return err
	}
	defer closeTarget()
	if f.seed == 0 {
		f.seed = time.Now().UnixNano()
	}
	cfg := bench.Config{Label: f.label, Workload: w, Phase: phase, Target: target, Threads: f.threads,
		RateOps: f.rate, Operations: f.operations, Duration: f.duration, WarmUp: f.warmup,
		Seed: f.seed, KuraVersion: version}
	if err := progressMode(&cfg, f.progress, stderr); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("bench: cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	res, runErr := bench.Run(ctx, cfg)
	if res == nil {
		return runErr
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "kura bench: interrupted (%v); saving the partial result\n", runErr)
	}
	printResult(stdout, res)
	out := f.out
	if out == "" {
		out = filepath.Join("bench-results", sanitize(res.Label+"-"+res.Workload+"-"+res.Phase))
	}
	if err := res.Save(out); err != nil {
		return err
	}
	if f.plots {
		if _, err := report.PlotRun(res, out); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "results: %s\n", out)
	return nil
}

// loadWorkload resolves --workload (a name or a property file), then --records and -p.
func loadWorkload(f *benchFlags) (*bench.Workload, error) {
	w, err := bench.NamedWorkload(f.workload)
	if err != nil {
		file, ferr := os.Open(f.workload)
		if ferr != nil {
			return nil, fmt.Errorf("%w; and as a file: %w", err, ferr)
		}
		defer file.Close()
		w = bench.NewWorkload()
		w.Name = strings.TrimSuffix(filepath.Base(f.workload), filepath.Ext(f.workload))
		if err := w.ReadProperties(file); err != nil {
			return nil, fmt.Errorf("%s: %w", f.workload, err)
		}
	}
	if f.records > 0 {
		w.RecordCount = f.records
	}
	for _, p := range f.props {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("-p %q: want key=value", p)
		}
		if err := w.Set(k, v); err != nil {
			return nil, fmt.Errorf("-p %s: %w", p, err)
		}
	}
	return w, w.Validate()
}

// openTarget parses a --target; the returned function releases what the target holds.
func openTarget(spec, consistency string) (bench.Target, func(), error) {
	switch {
	case spec == "noop":
		return bench.NoopTarget{}, func() {}, nil
	case strings.HasPrefix(spec, "cql://"):
		if consistency != "" {
			sep := "?"
			if strings.Contains(spec, "?") {
				sep = "&"
			}
			spec += sep + "consistency=" + consistency
		}
		t, err := cql.ParseURL(spec)
		if err != nil {
			return nil, nil, err
		}
		return t, func() { _ = t.Close() }, nil
	default:
		t, err := redis.ParseURL(spec)
		if err != nil {
			return nil, nil, err
		}
		if consistency != "" {
			t.Consistency = strings.ToUpper(consistency)
		}
		return t, func() {}, nil
	}
}

func progressMode(cfg *bench.Config, mode string, stderr io.Writer) error {
	terminal := false
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			terminal = true
		}
	}
	switch mode {
	case "auto":
		cfg.Progress, cfg.Live = stderr, terminal
		if !terminal {
			cfg.ProgressInterval = 10 * time.Second
		}
	case "live":
		cfg.Progress, cfg.Live = stderr, true
	case "lines":
		cfg.Progress = stderr
	case "none":
	default:
		return fmt.Errorf("--progress %q: want auto, live, lines or none", mode)
	}
	return nil
}

// printResult prints YCSB-style totals and a latency table in milliseconds.
func printResult(w io.Writer, r *bench.Result) {
	fmt.Fprintf(w, "%s %s on %s: %d ops in %.1f s, %.0f ops/s, %d errors (%s loop, %d threads",
		r.Phase, r.Workload, r.Target, r.Ops, r.DurationSeconds, r.ThroughputOps, r.Errors, r.Mode, r.Threads)
	if r.TargetRateOps > 0 {
		fmt.Fprintf(w, ", target %.0f ops/s", r.TargetRateOps)
	}
	fmt.Fprintf(w, ", seed %d)\n", r.Seed)
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(w, "  %d errors: %s\n", e.Count, e.Message)
	}
	printOps(w, r.Operations)
	if len(r.ServiceOperations) > 0 {
		fmt.Fprintln(w, "timed from each operation's actual start instead of its scheduled one (service time):")
		printOps(w, r.ServiceOperations)
	}
}

func printOps(w io.Writer, ops []bench.OpStats) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcount\tops/s\tavg ms\tp50 ms\tp95 ms\tp99 ms\tp99.9 ms\tmax ms\terrors\tnot found\t")
	for _, s := range ops {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%d\t\n", s.Op, s.Count,
			s.ThroughputOps, s.AvgUs/1e3, s.P50Us/1e3, s.P95Us/1e3, s.P99Us/1e3, s.P999Us/1e3, s.MaxUs/1e3,
			s.Errors, s.NotFound)
	}
	tw.Flush()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func sanitize(s string) string { return strings.Trim(unsafeName.ReplaceAllString(s, "_"), "_") }

func newBenchReportCmd() *cobra.Command {
	var out, baseline, title string
	cmd := &cobra.Command{
		Use:   "report DIR...",
		Short: "Compare saved runs: a Markdown report with throughput and latency charts",
		Long: `report reads every result.json under the given directories and writes
OUT/report.md with one table per workload (throughput, ratio to the baseline label,
latency percentiles per operation), comparison bar charts, and each run's own plots.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			opts := report.Options{Baseline: baseline, Title: title, ImageDir: "images"}
			if err := report.Render(dirs, out, opts); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", filepath.Join(out, "report.md"))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "bench-report", "output directory")
	cmd.Flags().StringVar(&baseline, "baseline", "", "label the ratios are relative to (default: the first label)")
	cmd.Flags().StringVar(&title, "title", "", "report title")
	return cmd
}

// newBenchOracleCmd is `kura bench oracle`: the share of a workload's reads that its most
// read keys receive, the bound for a fast tier or cache that holds that many keys.
func newBenchOracleCmd() *cobra.Command {
	f := &benchFlags{}
	var top int
	var learn int64
	cmd := &cobra.Command{
		Use:   "oracle",
		Short: "Share of the workload's reads that its N most-read keys receive (the best a fast tier of N rows can serve)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := loadWorkload(f)
			if err != nil {
				return err
			}
			if f.operations <= 0 {
				f.operations = 10 * w.RecordCount
			}
			if learn == 0 {
				learn = f.operations
			}
			o, err := bench.LearnedShare(w, learn, f.operations, top, f.seed)
			if err != nil {
				return err
			}
			if learn != f.operations {
				fmt.Fprintf(cmd.OutOrStdout(), "%d reads; of the %d keys the first %d operations named, the %d most used received %.4f of them\n", o.Reads, o.Keys, learn, min(o.Top, o.Keys), o.Share)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d reads of %d keys; the %d most read received %.4f of them\n", o.Reads, o.Keys, o.Top, o.Share)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.workload, "workload", "w", "a", "named workload ("+strings.Join(bench.WorkloadNames, ", ")+") or a YCSB property file")
	fl.StringArrayVarP(&f.props, "prop", "p", nil, "YCSB property override key=value (repeatable)")
	fl.Int64Var(&f.records, "records", 0, "shorthand for -p recordcount=N")
	fl.Int64Var(&f.operations, "operations", 0, "operations to draw (default ten per record)")
	fl.Int64Var(&f.seed, "seed", 1, "random seed")
	fl.IntVar(&top, "top", 0, "how many of the most-read keys the fast tier holds")
	fl.Int64Var(&learn, "learn", 0, "rank the keys from only the first N operations: about the most a placement that learns from the requests can serve after N of them (default: --operations, the oracle)")
	return cmd
}
