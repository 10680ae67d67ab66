package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kuradb/kura/internal/movesim"
)

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate data movement (re-replication after a loss, joins) in a flow model",
		Long: `kura sim runs kura's movement planner and re-replication schedulers on a simulated
cluster: disks, NICs and rack uplinks are links that concurrent transfers share max-min
fairly (internal/flowsim). Nothing is started or sent; the same planning code as the real
cluster decides what moves.`,
	}
	cmd.AddCommand(newSimMoveCmd(), newSimSeed002Cmd())
	return cmd
}

// simMoveFlags are `kura sim move`'s settings besides the scenario's own.
type simMoveFlags struct {
	timeline, plot string
	json           bool
	top            int
}

func newSimMoveCmd() *cobra.Command {
	s := movesim.DefaultScenario()
	var f simMoveFlags
	cmd := &cobra.Command{
		Use:   "move",
		Short: "Simulate one event: a node loss or removal and its re-replication, or a join",
		Long: `kura sim move builds a cluster's ring (balanced token allocation, one node joining
after another), applies an event and simulates the data it moves:

  loss, remove  the nodes die (or an operator removes them); every range they replicated
                gets a new replica: the recovery's copies scheduled by --scheduler (kura,
                or seed 002's baselines hdfs, ring, ring-priority);
  join          --count nodes join at once, their tokens chosen together; move.Plan picks
                every transfer's source.

It prints the simulated time, the physical lower bound for the same event (computed apart
from any schedule) and their ratio, the busiest nodes and how long each phase took.
Rates take decimal units (100MB/s, 1.25GB/s), sizes too (100GB).`,
		Example: `  kura sim move                                  # a node lost in 12 nodes over 2 racks
  kura sim move --nodes 1000 --racks 25 --vnodes 256 --event loss
  kura sim move --nodes 1000 --racks 25 --vnodes 256 --event join --count 10
  kura sim move --racks 2 --uplink 125MB/s --scheduler hdfs --timeline t.csv --plot t.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s.Timeline = f.timeline != "" || f.plot != ""
			s.Clock = time.Now
			start := time.Now()
			res, err := movesim.RunScenario(s)
			if err != nil {
				return err
			}
			wall := time.Since(start)
			if err := writeSimFiles(res, f); err != nil {
				return err
			}
			if f.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			printSimReport(cmd.OutOrStdout(), res, f.top, wall)
			return nil
		},
	}
	addScenarioFlags(cmd, &s)
	cmd.Flags().StringVar(&f.timeline, "timeline", "", "write every link's rate over time to this CSV file (time,link,rate)")
	cmd.Flags().StringVar(&f.plot, "plot", "", "draw bytes per second over time (all nodes, and the busiest node) to this SVG file")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the result as JSON instead of the report")
	cmd.Flags().IntVar(&f.top, "top", 5, "how many of the busiest nodes the report lists")
	return cmd
}

// addScenarioFlags binds a flag to every field of s, with s's values as defaults.
func addScenarioFlags(cmd *cobra.Command, s *movesim.Scenario) {
	fl := cmd.Flags()
	fl.IntVar(&s.Nodes, "nodes", s.Nodes, "nodes in the cluster before the event")
	fl.IntVar(&s.Racks, "racks", s.Racks, "racks the nodes are dealt over, round-robin")
	fl.Var(rateFlag{&s.DiskReadBps}, "disk-read", "each node's disk read rate")
	fl.Var(rateFlag{&s.DiskWriteBps}, "disk-write", "each node's disk write rate")
	fl.Var(rateFlag{&s.NICSendBps}, "nic-send", "each node's NIC send rate")
	fl.Var(rateFlag{&s.NICRecvBps}, "nic-recv", "each node's NIC receive rate")
	fl.Var(rateFlag{&s.UplinkUpBps}, "uplink-up", "each rack's uplink to the other racks (0: unlimited)")
	fl.Var(rateFlag{&s.UplinkDownBps}, "uplink-down", "each rack's downlink from the other racks (0: unlimited)")
	fl.Var(bothRates{&s.DiskReadBps, &s.DiskWriteBps}, "disk", "sets --disk-read and --disk-write")
	fl.Var(bothRates{&s.NICSendBps, &s.NICRecvBps}, "nic", "sets --nic-send and --nic-recv")
	fl.Var(bothRates{&s.UplinkUpBps, &s.UplinkDownBps}, "uplink", "sets --uplink-up and --uplink-down")
	fl.Var(sizeFlag{&s.DataPerNodeBytes}, "data-per-node", "bytes each node holds (ranges hold bytes in proportion to their width)")
	fl.Var(sizeFlag{&s.FreeBytes}, "free", "bytes each node can still store (0: no limit)")
	fl.IntVar(&s.VNodes, "vnodes", s.VNodes, "tokens per node")
	fl.IntVar(&s.RF, "rf", s.RF, "replication factor")
	fl.StringVar(&s.Placement, "placement", s.Placement, "placement strategy: simple, host-aware, rack-aware or engine-diverse")
	fl.StringVar(&s.TokenAllocation, "token-allocation", s.TokenAllocation, "the starting ring's and the joiners' tokens: balanced, greedy (balanced without refinement, faster) or random")
	fl.StringVar(&s.Scheduler, "scheduler", s.Scheduler, "re-replication scheduler: kura, hdfs, ring or ring-priority")
	fl.StringVar(&s.Copies, "copies", s.Copies, "how a recovery places and copies the lost replicas: handoff (as a kura cluster: the dead node's tokens handed to survivors, each new replica merged from every live peer; the scheduler only orders) or free (the scheduler picks each copy's one source and its destination, as seed 002)")
	fl.StringVar(&s.Event, "event", s.Event, "loss, remove or join")
	fl.IntVar(&s.Count, "count", s.Count, "nodes the event takes out or adds")
	fl.Uint64Var(&s.Seed, "seed", s.Seed, "seed of the tokens, the nodes lost and hdfs's choices")
}

// writeSimFiles writes the timeline CSV and the plot, when asked.
func writeSimFiles(res *movesim.ScenarioResult, f simMoveFlags) error {
	if f.timeline != "" {
		if err := writeFile(f.timeline, res.Run.Sim.WriteTimelineCSV); err != nil {
			return err
		}
	}
	if f.plot != "" {
		return writeFile(f.plot, func(w io.Writer) error { return plotThroughput(w, res) })
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(file); err != nil {
		file.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return file.Close()
}

// printSimReport prints a scenario's result for a reader: one "name: value" line a figure.
func printSimReport(w io.Writer, res *movesim.ScenarioResult, top int, wall time.Duration) {
	s := res.Scenario
	fmt.Fprintf(w, "event:       %s of %d node(s) (%s)\n", s.Event, len(res.EventNodes), joinIDs(res))
	fmt.Fprintf(w, "cluster:     %d nodes over %d racks, %d vnodes, RF %d %s, %s tokens, %s a node\n",
		s.Nodes, s.Racks, s.VNodes, s.RF, s.Placement, s.TokenAllocation, fmtBytes(float64(s.DataPerNodeBytes)))
	fmt.Fprintf(w, "hardware:    disks %s read, %s write; NICs %s send, %s receive; uplinks %s up, %s down\n",
		fmtRate(s.DiskReadBps), fmtRate(s.DiskWriteBps), fmtRate(s.NICSendBps), fmtRate(s.NICRecvBps), fmtRate(s.UplinkUpBps), fmtRate(s.UplinkDownBps))
	fmt.Fprintf(w, "scheduler:   %s\n", res.Scheduler)
	if s.Event != movesim.EventJoin {
		fmt.Fprintf(w, "copies:      %s\n", s.Copies)
	}
	fmt.Fprintf(w, "transfers:   %d\n", res.Transfers)
	fmt.Fprintf(w, "moved:       %d bytes (%s; lost or minimum %s, short %s)\n", res.MovedBytes, fmtBytes(float64(res.MovedBytes)), fmtBytes(float64(res.MinimumBytes)), fmtBytes(float64(res.ShortBytes)))
	fmt.Fprintf(w, "time:        %.3f s\n", res.Seconds)
	exact := "exact"
	if !res.Bound.Exact {
		exact = "a lower bound on the relaxation"
	}
	fmt.Fprintf(w, "bound:       %.3f s (%s; limited by %s)\n", res.Bound.Seconds, exact, listSome(res.Bound.Limits, 6))
	fmt.Fprintf(w, "whole bound: %.3f s (each transfer whole)\n", res.Bound.WholeSeconds)
	fmt.Fprintf(w, "ratio:       %.4f (whole %.4f)\n", res.Ratio, res.WholeRatio)
	fmt.Fprintf(w, "concurrency: at most %d transfers at once\n", res.MaxActive)
	fmt.Fprintf(w, "busiest nodes (seconds at full rate):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  node\track\tsent bytes\treceived bytes\tbusy s\t\n")
	for _, n := range res.Busiest(top) {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%.3f\t\n", n.ID, n.Rack, n.SentBytes, n.ReceivedBytes, n.BusySeconds)
	}
	tw.Flush()
	t := res.Timings
	fmt.Fprintf(w, "wall clock:  ring %.2f s, plan %.2f s, bound %.2f s, simulation %.2f s, total %.2f s\n",
		t.RingSeconds, t.PlanSeconds, t.BoundSeconds, t.SimulationSeconds, wall.Seconds())
}

func joinIDs(res *movesim.ScenarioResult) string {
	ids := make([]string, len(res.EventNodes))
	for k, id := range res.EventNodes {
		ids[k] = string(id)
	}
	return listSome(ids, 10)
}

// listSome joins the first n of items, saying how many more there are.
func listSome(items []string, n int) string {
	if len(items) > n {
		return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
	}
	return strings.Join(items, ", ")
}

// simSeries is one line of the plot: the links it sums.
type simSeries struct {
	name string
	keep func(link string) bool
	col  color.Color
}

// plotThroughput draws the cluster's copied bytes per second over time (every node's disk
// writes) and the busiest node's sends and receives, averaged over 400 intervals.
func plotThroughput(w io.Writer, res *movesim.ScenarioResult) error {
	const buckets = 400
	p := plot.New()
	p.Title.Text = fmt.Sprintf("kura sim move: %s of %d in %d nodes, %s (bound %.1f s, ratio %.3f)",
		res.Scenario.Event, len(res.EventNodes), res.Scenario.Nodes, res.Scheduler, res.Bound.Seconds, res.Ratio)
	p.X.Label.Text = "simulated seconds"
	p.Y.Label.Text = "MB/s"
	p.Add(plotter.NewGrid())
	series := []simSeries{{"all nodes, written", movesim.AllWrites, color.RGBA{0x1f, 0x77, 0xb4, 0xff}}}
	if b := res.Busiest(1); len(b) > 0 {
		id := b[0].ID
		series = append(series,
			simSeries{string(id) + " (busiest) sent", movesim.NodeReads(id), color.RGBA{0xff, 0x7f, 0x0e, 0xff}},
			simSeries{string(id) + " (busiest) received", movesim.NodeWrites(id), color.RGBA{0x2c, 0xa0, 0x2c, 0xff}})
	}
	top := 0.0
	for _, sr := range series {
		pts := res.Run.Throughput(buckets, sr.keep)
		if len(pts) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(pts))
		for k, pt := range pts {
			xys[k] = plotter.XY{X: pt.Seconds, Y: pt.BytesPerSecond / 1e6}
			top = max(top, xys[k].Y)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color, l.Width = sr.col, vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(sr.name, l)
	}
	// Room above the lines for the legend.
	p.Legend.Top = true
	p.X.Min, p.X.Max = 0, res.Seconds
	p.Y.Min, p.Y.Max = 0, max(top, 1)*1.35
	p.Title.Padding = vg.Points(6)
	c := vgsvg.New(8*vg.Inch, 4.5*vg.Inch)
	p.Draw(draw.New(c))
	_, err := c.WriteTo(w)
	return err
}

// rateFlag is a rate in bytes per second, written with a decimal or binary unit and an
// optional "/s" (125MB/s, 1.25GB/s, 100MiB/s, 0).
type rateFlag struct{ p *float64 }

func (f rateFlag) String() string {
	if f.p == nil {
		return ""
	}
	return fmtRate(*f.p)
}
func (f rateFlag) Type() string { return "rate" }
func (f rateFlag) Set(v string) error {
	v = strings.TrimSpace(v)
	if v == "unlimited" {
		*f.p = 0
		return nil
	}
	x, err := parseUnits(strings.TrimSuffix(v, "/s"))
	if err != nil {
		return err
	}
	*f.p = x
	return nil
}

// bothRates sets two rates at once (a disk's read and write, say).
type bothRates struct{ a, b *float64 }

func (f bothRates) String() string { return "" }
func (f bothRates) Type() string   { return "rate" }
func (f bothRates) Set(v string) error {
	if err := (rateFlag{f.a}).Set(v); err != nil {
		return err
	}
	return rateFlag{f.b}.Set(v)
}

// sizeFlag is a byte count with a decimal or binary unit (100GB, 64GiB).
type sizeFlag struct{ p *int64 }

func (f sizeFlag) String() string {
	if f.p == nil {
		return ""
	}
	return fmtBytes(float64(*f.p))
}
func (f sizeFlag) Type() string { return "bytes" }
func (f sizeFlag) Set(v string) error {
	x, err := parseUnits(strings.TrimSpace(v))
	if err != nil {
		return err
	}
	if x > math.MaxInt64/2 {
		return fmt.Errorf("%q is too large", v)
	}
	*f.p = int64(math.Round(x))
	return nil
}

// parseUnits reads a non-negative number with an optional unit: B, kB/KB, MB, GB, TB
// (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
func parseUnits(v string) (float64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || x < 0 || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%q: want a non-negative number with an optional unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)", v)
	}
	return x * mult, nil
}

// fmtBytes writes a byte count in decimal units, to 4 significant digits.
func fmtBytes(b float64) string {
	for _, u := range []struct {
		name string
		size float64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}} {
		if b >= u.size {
			return strconv.FormatFloat(b/u.size, 'g', 4, 64) + u.name
		}
	}
	return strconv.FormatFloat(b, 'g', 4, 64) + "B"
}

// fmtRate writes a rate in decimal units, or "unlimited" for 0.
func fmtRate(bps float64) string {
	if bps == 0 {
		return "unlimited"
	}
	return fmtBytes(bps) + "/s"
}

// simSeed002Flags are `kura sim seed002`'s settings.
type simSeed002Flags struct {
	small         bool
	noRing        bool
	vnodes        int
	placementSeed uint64
	schedulerSeed uint64
	ringSeed      uint64
}

func newSimSeed002Cmd() *cobra.Command {
	f := simSeed002Flags{vnodes: 256, placementSeed: movesim.Seed002PlacementSeed, schedulerSeed: movesim.Seed002SchedulerSeed, ringSeed: 1}
	cmd := &cobra.Command{
		Use:   "seed002",
		Short: "Reproduce seed 002's re-replication experiment: every scheduler against the physical bound",
		Long: `kura sim seed002 runs seed 002's platforms (one rack of 6, 8, 16 or 32 DataNodes; two
racks of 8, 16 or 32 with 125 MB/s or 1.25 GB/s between them; 65 and 105 MB/s disks,
125 MB/s NICs): node d0 of rack 1 lost, holding 80 x (nodes - 1) blocks of 67 MB.

The first table places the blocks as the paper does (HDFS's default policy); the second
puts the same nodes in a kura ring of --vnodes tokens each (balanced allocation, RF 3
rack-aware), each node holding as many bytes as the paper's lost node. Each scheduler's
column is the bound's time over the simulated time: 1 is the physical limit.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSeed002(cmd.OutOrStdout(), f)
		},
	}
	cmd.Flags().BoolVar(&f.small, "small", false, "only the platforms of at most 8 nodes a rack")
	cmd.Flags().BoolVar(&f.noRing, "no-ring", false, "leave out the table on kura's ring placement")
	cmd.Flags().IntVar(&f.vnodes, "vnodes", f.vnodes, "tokens per node of the ring placement")
	cmd.Flags().Uint64Var(&f.placementSeed, "seed", f.placementSeed, "seed of the paper's block placement")
	cmd.Flags().Uint64Var(&f.schedulerSeed, "scheduler-seed", f.schedulerSeed, "seed of hdfs's random choices")
	cmd.Flags().Uint64Var(&f.ringSeed, "ring-seed", f.ringSeed, "seed of the ring placement's tokens (and hdfs's choices on it)")
	return cmd
}

func runSeed002(w io.Writer, f simSeed002Flags) error {
	platforms := movesim.Seed002Platforms(f.small)
	fmt.Fprintln(w, "Seed 002, the paper's block placement (HDFS's default): time as a fraction of the bound")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "platform\tblocks\tbound s\tbound MB/s\texact\tkura\thdfs\tring\tring-priority\t\n")
	for _, p := range platforms {
		row, err := movesim.RunSeed002(p, f.placementSeed, f.schedulerSeed)
		if err != nil {
			return err
		}
		printSeed002Row(tw, row, false)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if f.noRing {
		return nil
	}
	fmt.Fprintf(w, "\nThe same platforms on kura's ring placement (%d vnodes a node, balanced, RF 3 rack-aware, the node kura sim move --seed %d loses): time as a fraction of the bound\n", f.vnodes, f.ringSeed)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "platform\tcopies\tbound s\twhole s\tbound MB/s\texact\tkura\thdfs\tring\tring-priority\tkura/whole\t\n")
	rings := &movesim.Seed002Rings{VNodes: f.vnodes, Seed: f.ringSeed}
	for _, p := range platforms {
		row, err := rings.Run(p)
		if err != nil {
			return err
		}
		printSeed002Row(tw, row, true)
	}
	return tw.Flush()
}

// printSeed002Row writes one platform's line; whole adds the whole-range bound's columns.
func printSeed002Row(w io.Writer, row *movesim.Seed002Row, whole bool) {
	b := row.Bound
	fmt.Fprintf(w, "%s\t%d\t%.1f\t", row.Platform, row.Copies, b.Seconds)
	if whole {
		fmt.Fprintf(w, "%.1f\t", b.WholeSeconds)
	}
	fmt.Fprintf(w, "%.0f\t%v\t", float64(row.CopyBytes)/b.Seconds/1e6, b.Exact)
	for _, res := range row.Results {
		fmt.Fprintf(w, "%.3f\t", res.Ratio)
	}
	if whole {
		fmt.Fprintf(w, "%.3f\t", row.Results[0].WholeRatio)
	}
	fmt.Fprintln(w)
}
